package projections

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

// ReceiptsName is the bucket of the receipt index: the receipts that
// retention keeps (at most 100 per harness/worker, none older than 30 days
// at the last writer's clock), as recorded by receipt.recorded and dropped
// by receipt.pruned, plus per harness what the state at an instant needs
// (the newest proof since the harness last left the proven states). The
// ledger keeps every receipt event for audit; this index, and the files on
// disk, only hold what retention keeps.
//
// Keys (all ASCII, '/'-separated):
//
//	i/<receipt_id>                                   entry JSON
//	e/<harness>/<worker>/<recorded_at>/<receipt_id>  empty (a worker's receipts in age order)
//	t/<recorded_at>/<receipt_id>                     empty (age order, every harness)
//	u/<harness>                                      proof JSON
//	a/<receipt_id>                                   a receipt file found at adoption (never removed)
//
// Layout 3 keeps the entries once, by id, and the two orders as bare keys:
// a hook scans its worker's e/ keys (at most 100) on every delivery, and
// bare keys fit some 30 to a page where entries fitted six. A worker's
// count is the number of its e/ keys (layout 2 kept it in n/, one more
// page written per hook). The proofs sort right after the age keys (they
// were h/): a new receipt's age key and its harness's proof, both written
// by every delivery, share the last page.
const ReceiptsName = "receipts"

// proves reports whether the entry is a proof (fsm replay's rule).
func proves(e receipt.Entry) bool {
	return e.Status == events.ReceiptStatusSuccess && fsm.Proven(fsm.State(e.State))
}

// ReceiptProof is what a harness's state at an instant needs besides its
// recorded state, with fsm replay's semantics: Epoch is the position of
// the last event that moved the harness out of the proven states (every
// proof before it is void), NewestAt the recorded_at of the newest
// unpruned proof after it (preflight.succeeded into a proven state, or a
// successful receipt.recorded), LastAt the newest recorded_at of any event
// of the harness stream. Times are the envelopes' (RFC 3339, nanoseconds).
type ReceiptProof struct {
	Epoch    uint64 `json:"epoch"`
	LastAt   string `json:"last_at,omitempty"`
	NewestAt string `json:"newest_at,omitempty"`
	NewestID string `json:"newest_id,omitempty"`
}

// receiptsProjection folds the harness streams' proofs and receipts.
type receiptsProjection struct{}

func init() { register(receiptsProjection{}) }

func (receiptsProjection) Name() string { return ReceiptsName }

// Version 3: layout 3 (entries once by id, above), and receipt.adopted
// proves nothing while harness.proof_revoked voids the proofs before it
// (issue 24).
func (receiptsProjection) Version() int { return 3 }

// Handles every event of the harness streams: moving events void proofs,
// and every event advances the stream's clock.
func (receiptsProjection) Handles(t string) bool {
	spec, ok := events.Lookup(t)
	return ok && spec.StreamPrefix == events.HarnessPrefix
}

func (receiptsProjection) Apply(kv KV, _ Bodies, e *events.Envelope) error {
	id, ok := strings.CutPrefix(e.Stream, events.HarnessPrefix)
	if !ok {
		return fmt.Errorf("%s on stream %s", e.Type, e.Stream)
	}
	p, err := plainPayload(e)
	if err != nil {
		return err
	}
	proof, err := ReceiptProofOf(kv, id)
	if err != nil {
		return err
	}
	at := e.RecordedAt.UTC().Format(time.RFC3339Nano)
	if laterThan(at, proof.LastAt) {
		proof.LastAt = at
	}
	if tr, moves := events.Moves(p); moves && !fsm.Proven(fsm.State(tr.To)) {
		proof.Epoch, proof.NewestAt, proof.NewestID = e.Position, "", ""
	}
	if err := foldReceipt(kv, &proof, id, at, e, p); err != nil {
		return err
	}
	return putJSON(kv, proofKey(id), proof)
}

// foldReceipt applies p, the payload of e on harness id's stream (recorded
// at at, RFC 3339 with nanoseconds), to the index and to proof.
func foldReceipt(kv KV, proof *ReceiptProof, id, at string, e *events.Envelope, p any) error {
	switch pl := p.(type) {
	case *events.PreflightSucceeded:
		if fsm.Proven(fsm.State(pl.To)) {
			proof.prove(at, pl.ReceiptID)
		}
	case *events.ReceiptRecorded:
		entry := receipt.EntryOf(pl, id, e.Position)
		if entry.RecordedAt == "" {
			entry.RecordedAt = events.ReceiptTime(e.RecordedAt)
		}
		if err := putEntry(kv, entry); err != nil {
			return err
		}
		if proves(entry) {
			proof.prove(at, pl.ReceiptID)
		}
	case *events.ReceiptAdopted:
		proof.Epoch, proof.NewestAt, proof.NewestID = e.Position, "", ""
		return adoptEntry(kv, receipt.EntryOf(&pl.ReceiptRecorded, id, e.Position))
	case *events.ProofRevoked:
		// Receipts an import brought prove nothing here (fsm replay).
		proof.Epoch, proof.NewestAt, proof.NewestID = e.Position, "", ""
	case *events.ReceiptForeign:
		return markForeign(kv, pl.ReceiptID)
	case *events.ReceiptPruned:
		if err := dropEntry(kv, pl.ReceiptID); err != nil {
			return err
		}
		if pl.ReceiptID == proof.NewestID {
			return proof.recompute(kv, id)
		}
	}
	return nil
}

// adoptEntry indexes a receipt another writer's file holds: retention
// drops the entry, never the file. It proves nothing here (fsm replay):
// the proofs before it are void.
func adoptEntry(kv KV, entry receipt.Entry) error {
	entry.Adopted = true
	if err := putEntry(kv, entry); err != nil {
		return err
	}
	return markForeign(kv, entry.ReceiptID)
}

func (p *ReceiptProof) prove(at, id string) {
	if p.NewestAt == "" || !laterThan(p.NewestAt, at) {
		p.NewestAt, p.NewestID = at, id
	}
}

// recompute finds the newest remaining proof after the epoch, among the
// indexed receipts. (Proofs that only a preflight.succeeded carries have no
// index entry; a writer records both events together, so a pruned newest
// receipt leaves no such proof newer than itself.)
func (p *ReceiptProof) recompute(kv KV, harness string) error {
	p.NewestAt, p.NewestID = "", ""
	return kv.ForEach([]byte("e/"+harness+"/"), func(k, _ []byte) error {
		e, err := entryAt(kv, k)
		if err != nil {
			return err
		}
		if e.Position <= p.Epoch || !proves(e) {
			return nil
		}
		// The proof's time is its envelope's; whole seconds here differ
		// only below a second, and only for pruned (expired) neighbours.
		at, err := time.Parse(events.ReceiptTimeFormat, e.RecordedAt)
		if err != nil {
			return fmt.Errorf("receipt index entry %s: %w", e.ReceiptID, err)
		}
		p.prove(at.Format(time.RFC3339Nano), e.ReceiptID)
		return nil
	})
}

func laterThan(a, b string) bool {
	if b == "" {
		return a != ""
	}
	ta, err1 := time.Parse(time.RFC3339Nano, a)
	tb, err2 := time.Parse(time.RFC3339Nano, b)
	return err1 == nil && err2 == nil && ta.After(tb)
}

func entryKey(e receipt.Entry) string {
	return "e/" + e.HarnessID + "/" + e.Worker + "/" + e.RecordedAt + "/" + e.ReceiptID
}

func ageKey(e receipt.Entry) string { return "t/" + e.RecordedAt + "/" + e.ReceiptID }

func idKey(receiptID string) []byte { return []byte("i/" + receiptID) }

func proofKey(harness string) []byte { return []byte("u/" + harness) }

// entryAt is the entry an e/ or t/ key names (its last component is the
// receipt id).
func entryAt(kv KV, k []byte) (receipt.Entry, error) {
	id := string(k[bytes.LastIndexByte(k, '/')+1:])
	e, ok, err := ReceiptByID(kv, id)
	if err == nil && !ok {
		err = fmt.Errorf("receipt index: key %s names a missing entry", k)
	}
	return e, err
}

// putEntry indexes a receipt. The fold is total: an id or worker that
// cannot be a key component (no writer of ours produces one; receipt files
// are named receipt-<uuid>) is not indexed, and a receipt id recorded again
// replaces its earlier entry.
func putEntry(kv KV, e receipt.Entry) error {
	if e.ReceiptID == "" || strings.Contains(e.ReceiptID, "/") || strings.Contains(e.Worker, "/") {
		return nil
	}
	if err := dropEntry(kv, e.ReceiptID); err != nil {
		return err
	}
	if err := putJSON(kv, idKey(e.ReceiptID), e); err != nil {
		return err
	}
	if err := kv.Put([]byte(entryKey(e)), nil); err != nil {
		return err
	}
	return kv.Put([]byte(ageKey(e)), nil)
}

// WorkerReceiptCount is the number of retained receipts of a harness/worker:
// its e/ keys, at most the retention limit.
func WorkerReceiptCount(kv KV, harness, worker string) int {
	n := 0
	_ = kv.ForEach([]byte("e/"+harness+"/"+worker+"/"), func(_, _ []byte) error { n++; return nil })
	return n
}

// markForeign records a receipt file found at adoption.
func markForeign(kv KV, receiptID string) error {
	if receiptID == "" || strings.Contains(receiptID, "/") {
		return nil
	}
	return kv.Put([]byte("a/"+receiptID), []byte{1})
}

// Kept reports whether the receipt file of an id must stay on disk although
// the index may not retain it: it is retained, or another writer's file
// found at adoption (receipt.adopted, receipt.foreign), which the ledger
// did not create and so never removes.
func Kept(kv KV, receiptID string) bool {
	return Indexed(kv, receiptID) || kv.Get([]byte("a/"+receiptID)) != nil
}

// WorkerReceiptIDs is the set of receipt ids harness/worker retains, read
// from the index's keys alone (e/<harness>/<worker>/<recorded_at>/<id>):
// one scan of at most the retention limit instead of a lookup per id when
// a caller checks a whole directory of receipt files.
func WorkerReceiptIDs(kv KV, harness, worker string) (map[string]bool, error) {
	ids := map[string]bool{}
	err := kv.ForEach([]byte("e/"+harness+"/"+worker+"/"), func(k, _ []byte) error {
		if i := bytes.LastIndexByte(k, '/'); i >= 0 {
			ids[string(k[i+1:])] = true
		}
		return nil
	})
	return ids, err
}

// Indexed reports whether a receipt id is retained.
func Indexed(kv KV, receiptID string) bool { return kv.Get(idKey(receiptID)) != nil }

// dropEntry removes a receipt from the index; an unknown id is a no-op (the
// event records retention, and the receipt may predate the index).
func dropEntry(kv KV, receiptID string) error {
	e, ok, err := ReceiptByID(kv, receiptID)
	if err != nil || !ok {
		return err
	}
	for _, key := range []string{entryKey(e), ageKey(e), "i/" + receiptID} {
		if err := kv.Delete([]byte(key)); err != nil {
			return err
		}
	}
	return nil
}

// ReceiptProofOf returns harness id's proof summary (zero when none).
func ReceiptProofOf(kv KV, harness string) (ReceiptProof, error) {
	raw := kv.Get(proofKey(harness))
	if raw == nil {
		return ReceiptProof{}, nil
	}
	p, err := decodeJSON[ReceiptProof](raw)
	if err != nil {
		return p, fmt.Errorf("receipt proof %s: %w", harness, err)
	}
	return p, nil
}

// HarnessReceipts returns the retained receipts of a harness, newest first
// (recorded_at, then receipt id, descending).
func HarnessReceipts(kv KV, harness string) ([]receipt.Entry, error) {
	out, err := entries(kv, "e/"+harness+"/", -1)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].RecordedAt != out[j].RecordedAt {
			return out[i].RecordedAt > out[j].RecordedAt
		}
		return out[i].ReceiptID > out[j].ReceiptID
	})
	return out, err
}

// WorkerReceipts returns the retained receipts of one harness/worker,
// oldest first (recorded_at, then receipt id).
func WorkerReceipts(kv KV, harness, worker string) ([]receipt.Entry, error) {
	return entries(kv, "e/"+harness+"/"+worker+"/", -1)
}

// OldestWorkerReceipts returns at most n of the oldest retained receipts
// of one harness/worker (all of them when n < 0), oldest first; retention
// only ever needs the ones beyond the newest 99.
func OldestWorkerReceipts(kv KV, harness, worker string, n int) ([]receipt.Entry, error) {
	if n == 0 {
		return nil, nil
	}
	return entries(kv, "e/"+harness+"/"+worker+"/", n)
}

func entries(kv KV, prefix string, limit int) ([]receipt.Entry, error) {
	var out []receipt.Entry
	err := kv.ForEach([]byte(prefix), func(k, _ []byte) error {
		e, err := entryAt(kv, k)
		if err != nil {
			return err
		}
		out = append(out, e)
		if len(out) == limit {
			return errStopScan
		}
		return nil
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	return out, err
}

// ReceiptByID returns a retained receipt by id.
func ReceiptByID(kv KV, receiptID string) (receipt.Entry, bool, error) {
	raw := kv.Get(idKey(receiptID))
	if raw == nil {
		return receipt.Entry{}, false, nil
	}
	e, err := decodeJSON[receipt.Entry](raw)
	if err != nil {
		return e, false, fmt.Errorf("receipt index entry: %w", err)
	}
	return e, true, nil
}

var errStopScan = errors.New("stop")

// ReceiptsRecordedBy returns every retained receipt, of any harness,
// recorded at or before cutoff (a receipt-format time), oldest first. It
// reads the age index only as far as cutoff.
func ReceiptsRecordedBy(kv KV, cutoff string) ([]receipt.Entry, error) {
	var out []receipt.Entry
	err := kv.ForEach([]byte("t/"), func(k, _ []byte) error {
		if ts, _, _ := strings.Cut(string(k[2:]), "/"); ts > cutoff {
			return errStopScan
		}
		e, err := entryAt(kv, k)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	return out, err
}

// StateAt is harness id's state at instant now, from the harness-state
// projection (hkv) and the receipt index (rkv), with fsm replay's meaning
// (fsm.StateAt over the harness stream, without reading the stream): the
// recorded state, except that a proven state whose newest unpruned proof is
// no longer fresh has expired to configured-awaiting-proof. Freshness is
// judged at the later of now and the stream's newest event, as replay
// does. The result is pinned to fsm.StateAt by a differential test; it
// relies on writers recording a receipt.recorded with every proving
// preflight.succeeded (the command layer does, in one transaction).
func StateAt(hkv, rkv KV, id string, now time.Time) (fsm.State, error) {
	h, ok, err := HarnessState(hkv, id)
	if err != nil || !ok {
		return fsm.Initial, err
	}
	recorded := fsm.State(h.State)
	if !fsm.Proven(recorded) {
		return recorded, nil
	}
	p, err := ReceiptProofOf(rkv, id)
	if err != nil {
		return "", err
	}
	t := now
	if last, err := time.Parse(time.RFC3339Nano, p.LastAt); err == nil && last.After(t) {
		t = last
	}
	if p.NewestAt != "" {
		newest, err := time.Parse(time.RFC3339Nano, p.NewestAt)
		if err != nil {
			return "", fmt.Errorf("receipt proof %s: %w", id, err)
		}
		if fsm.Fresh(newest, t) {
			return recorded, nil
		}
	}
	return fsm.ConfiguredAwaitingProof, nil
}
