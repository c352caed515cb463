package preflight

import (
	"fmt"
	"io"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

// Receipt file constants (the receipt itself, its codecs and its time
// format are events/receipt's).
const (
	// RetentionPerWorker and RetentionAge are the published retention: at
	// most 100 receipts per harness/worker and none older than 30 days.
	RetentionPerWorker = 100
	RetentionAge       = fsm.ReceiptTTL
	// FilePerm and DirPerm are the modes of receipt files and directories.
	FilePerm = 0o600
	DirPerm  = 0o700
)

// NewReceiptID mints "receipt-<uuid v4>" from r (crypto/rand when nil).
func NewReceiptID(r io.Reader) (string, error) {
	u, err := adapters.NewStoreID(r)
	if err != nil {
		return "", fmt.Errorf("mint receipt id: %w", err)
	}
	return "receipt-" + u, nil
}

// Verify applies the protocol's eight equality rules to a receipt of
// harness against the manifest on disk, the bridge fingerprint recomputed
// from the installed material, and the instant now:
//
//  1. schema_version 1, protocol_version equal to the manifest's, both 1;
//  2. harness_id is the adapter's canonical id;
//  3. adapter_version equals the manifest record's;
//  4. store_id equals the manifest's;
//  5. project_root_fingerprint equals the manifest's;
//  6. bridge_fingerprint equals the record's, which equals the recomputed one;
//  7. status "success" and state active or active-isolated;
//  8. recorded_at not in the future and newer than the 30-day cutoff.
//
// The first failing rule is returned as a *receipt.Error.
func Verify(r receipt.Receipt, m adapters.Manifest, harness, recomputed string, now time.Time) error {
	rec, ok := m.Harnesses[harness]
	fail := func(rule int, reason string) error { return &receipt.Error{Rule: rule, Reason: reason} }
	switch {
	case r.SchemaVersion != receipt.SchemaVersion || r.ProtocolVersion != m.ProtocolVersion || m.ProtocolVersion != adapters.ProtocolVersion:
		return fail(1, "schema or protocol version")
	case r.HarnessID != harness:
		return fail(2, "harness id")
	case !ok || r.AdapterVersion != rec.AdapterVersion:
		return fail(3, "adapter version")
	case r.StoreID != m.StoreID:
		return fail(4, "store id")
	case r.ProjectRootFingerprint != m.ProjectRootFingerprint:
		return fail(5, "project root fingerprint")
	case r.BridgeFingerprint != rec.BridgeFingerprint || rec.BridgeFingerprint != recomputed:
		return fail(6, "bridge fingerprint")
	case r.Status != receipt.StatusSuccess || !fsm.Proven(fsm.State(r.State)):
		return fail(7, "status or state")
	}
	at, err := receipt.ParseTime(r.RecordedAt)
	if err != nil || !fsm.Fresh(at, now) {
		return fail(8, "recorded_at is in the future or older than 30 days")
	}
	return nil
}
