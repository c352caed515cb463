package receipt_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/tree-ring/tree-ring/events/receipt"
)

// A receipt file is its receipt.recorded materialized: Materialize
// rebuilds the exact bytes, and refuses an event whose digest or path
// the rebuilt file would not match.
func TestMaterialize(t *testing.T) {
	const fp = "abababababababababababababababababababababababababababababababab"
	const sid = "01234567-89ab-4def-8123-456789abcdef"
	rc := receipt.Receipt{
		SchemaVersion: receipt.SchemaVersion, ProtocolVersion: 1, ReceiptID: "receipt-01J00000000000000000000001",
		HarnessID: "claude-code", AdapterVersion: "4", BridgeFingerprint: fp, StoreID: sid,
		ProjectRootFingerprint: fp, WorkerKeyFingerprint: fp,
		Session: receipt.Session{AgentProfile: "main", WorkflowID: "wf", SessionID: "s1"}, State: "active",
		QueryClass: "startup_fallback", SelectedMemoryIDsSHA256: fp, Status: receipt.StatusSuccess, RecordedAt: "2026-11-01T12:00:00Z",
	}
	body := rc.Encode()
	sum := sha256.Sum256(body)
	e := rc.Recorded(hex.EncodeToString(sum[:]), rc.Path())
	p, got, ok := receipt.Materialize(&e)
	if !ok || p != rc.Path() || string(got) != string(body) {
		t.Fatalf("materialized %v %s", ok, p)
	}
	bad := e
	bad.DurationMS = 7 // the bytes would differ from the recorded digest
	if _, _, ok := receipt.Materialize(&bad); ok {
		t.Error("materialized bytes that are not the recorded file")
	}
	bad = e
	bad.Path = "elsewhere.json"
	if _, _, ok := receipt.Materialize(&bad); ok {
		t.Error("materialized to another path")
	}
	bad = e
	bad.Session = nil
	if _, _, ok := receipt.Materialize(&bad); ok {
		t.Error("materialized without a session")
	}
}
