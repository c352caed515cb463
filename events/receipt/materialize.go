package receipt

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/tree-ring/tree-ring/events"
)

// Materialize is the receipt file that receipt.recorded e records, the
// inverse of Recorded: its project-relative path and its bytes, rebuilt
// from the event. A receipt file is a materialization of its ledger event,
// so a restore (an events export imported into an empty store, or onto an
// older copy) can write it again. ok is false unless the rebuilt bytes are
// exactly the file the event names (its sha256 and path): a receipt of
// another schema, or an event without its session or path, is never
// guessed at.
func Materialize(e *events.ReceiptRecorded) (path string, body []byte, ok bool) {
	if e.Session == nil || e.Path == "" {
		return "", nil, false
	}
	rc := Receipt{
		SchemaVersion: SchemaVersion, ProtocolVersion: e.ProtocolVersion, ReceiptID: e.ReceiptID,
		HarnessID: e.HarnessID, AdapterVersion: e.AdapterVersion, BridgeFingerprint: e.BridgeFingerprint,
		StoreID: e.StoreID, ProjectRootFingerprint: e.ProjectRootFingerprint, WorkerKeyFingerprint: e.WorkerKeyFingerprint,
		Session: *e.Session, State: e.State, QueryClass: e.QueryClass, ResultCount: e.ResultCount,
		SelectedMemoryIDsSHA256: e.SelectedMemoryIDsSHA256, DurationMS: e.DurationMS, Status: e.Status, RecordedAt: e.RecordedAt,
	}
	body = rc.Encode()
	sum := sha256.Sum256(body)
	if hex.EncodeToString(sum[:]) != e.SHA256 || rc.Path() != e.Path {
		return "", nil, false
	}
	return e.Path, body, true
}
