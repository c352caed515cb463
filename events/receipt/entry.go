package receipt

import "github.com/tree-ring/tree-ring/events"

// Entry is one retained receipt as the receipt index (projections,
// "receipts") stores it, and as retention (adapters/preflight) decides
// over it. Its JSON is projection bytes: a change here is a change of that
// projection's Version().
type Entry struct {
	ReceiptID  string `json:"receipt_id"`
	HarnessID  string `json:"harness_id"`
	Worker     string `json:"worker"`      // worker_key_fingerprint
	RecordedAt string `json:"recorded_at"` // the receipt's, whole seconds
	Path       string `json:"path,omitempty"`
	SHA256     string `json:"sha256"`
	State      string `json:"state"`
	Status     string `json:"status"`
	// Position is the ledger position of its receipt.recorded.
	Position uint64 `json:"position"`
	// Adopted is true for a receipt another writer's file holds
	// (receipt.adopted): retention drops the entry, never the file.
	Adopted bool `json:"adopted,omitempty"`
}

// EntryOf is the entry of the receipt p records on harness's stream at
// ledger position position.
func EntryOf(p *events.ReceiptRecorded, harness string, position uint64) Entry {
	return Entry{
		ReceiptID: p.ReceiptID, HarnessID: harness, Worker: p.WorkerKeyFingerprint, RecordedAt: p.RecordedAt,
		Path: p.Path, SHA256: p.SHA256, State: p.State, Status: p.Status, Position: position,
	}
}
