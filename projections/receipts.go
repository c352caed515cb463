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
//	e/<harness>/<worker>/<recorded_at>/<receipt_id>  entry (JSON, without what the key holds)
//	t/<recorded_at>/<receipt_id>                     <harness>/<worker> (age order, every harness)
//	u/<harness>                                      proof JSON
//	a/<receipt_id>                                   a receipt file found at adoption (never removed)
//
// Layout 4 keeps each entry in its worker's age order, where a hook reads
// them and where retention drops its worker's oldest, and no by-id key: a
// receipt id is random, so layout 3's i/<receipt_id> put every new entry
// (and every pruned one) on a leaf of its own, with its branches, in each
// hook's commit. A delivery now writes its worker's newest e/ key, its t/
// key and its harness's proof, which sort together at the end (u/ follows
// t/). A prune names its harness and worker; an id looked up without them
// (ReceiptByID) is a scan of the age index.
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

// Version 4: layout 4 (entries in their worker's order, above). Since
// version 3 receipt.adopted proves nothing while harness.proof_revoked
// voids the proofs before it (issue 24).
func (receiptsProjection) Version() int { return 4 }

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
		if err := dropEntry(kv, pl.HarnessID, pl.WorkerKeyFingerprint, pl.ReceiptID); err != nil {
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
	return kv.ForEach([]byte("e/"+harness+"/"), func(k, v []byte) error {
		e, err := entryOf(k, v)
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

func workerPrefix(harness, worker string) string { return "e/" + harness + "/" + worker + "/" }

func entryKey(e receipt.Entry) []byte {
	return []byte(workerPrefix(e.HarnessID, e.Worker) + e.RecordedAt + "/" + e.ReceiptID)
}

func ageKey(e receipt.Entry) []byte { return []byte("t/" + e.RecordedAt + "/" + e.ReceiptID) }

func proofKey(harness string) []byte { return []byte("u/" + harness) }

// storedEntry is an entry's value: the fields its e/ key does not hold.
type storedEntry struct {
	Path     string `json:"path,omitempty"`
	SHA256   string `json:"sha256"`
	State    string `json:"state"`
	Status   string `json:"status"`
	Position uint64 `json:"position"`
	Adopted  bool   `json:"adopted,omitempty"`
}

// entryOf decodes the entry at e/ key k with value v. The key is split
// from the right: a harness id is the rest.
func entryOf(k, v []byte) (receipt.Entry, error) {
	parts := strings.Split(string(k[len("e/"):]), "/")
	if len(parts) < 4 {
		return receipt.Entry{}, fmt.Errorf("receipt index: malformed key %s", k)
	}
	n := len(parts)
	s, err := decodeJSON[storedEntry](v)
	if err != nil {
		return receipt.Entry{}, fmt.Errorf("receipt index entry %s: %w", parts[n-1], err)
	}
	return receipt.Entry{
		ReceiptID: parts[n-1], HarnessID: strings.Join(parts[:n-3], "/"), Worker: parts[n-3], RecordedAt: parts[n-2],
		Path: s.Path, SHA256: s.SHA256, State: s.State, Status: s.Status, Position: s.Position, Adopted: s.Adopted,
	}, nil
}

// putEntry indexes a receipt. The fold is total: an id, worker or time
// that cannot be a key component (no writer of ours produces one; receipt
// files are named receipt-<uuid>) is not indexed, and a receipt id
// recorded again for its worker replaces the earlier entry. (An id is its
// file's, and a file holds its worker: adopting a file the index holds
// records the same worker again.)
func putEntry(kv KV, e receipt.Entry) error {
	if e.ReceiptID == "" || strings.ContainsRune(e.ReceiptID+e.Worker+e.RecordedAt, '/') {
		return nil
	}
	if old, ok, err := workerEntry(kv, e.HarnessID, e.Worker, e.ReceiptID); err != nil {
		return err
	} else if ok {
		if err := deleteEntry(kv, old); err != nil {
			return err
		}
	}
	if err := putJSON(kv, entryKey(e), storedEntry{Path: e.Path, SHA256: e.SHA256, State: e.State, Status: e.Status,
		Position: e.Position, Adopted: e.Adopted}); err != nil {
		return err
	}
	return kv.Put(ageKey(e), []byte(e.HarnessID+"/"+e.Worker))
}

// workerEntry finds receipt id among harness/worker's entries (at most the
// retention limit of keys).
func workerEntry(kv KV, harness, worker, receiptID string) (receipt.Entry, bool, error) {
	return findEntry(kv, []byte(workerPrefix(harness, worker)), receiptID, entryOf)
}

// findEntry scans the keys under prefix for the first that ends in
// /receiptID and decodes its entry.
func findEntry(kv KV, prefix []byte, receiptID string, decode func(k, v []byte) (receipt.Entry, error)) (receipt.Entry, bool, error) {
	var found receipt.Entry
	ok := false
	suffix := []byte("/" + receiptID)
	err := kv.ForEach(prefix, func(k, v []byte) error {
		if !bytes.HasSuffix(k, suffix) {
			return nil
		}
		e, err := decode(k, v)
		found, ok = e, err == nil
		if err == nil {
			err = errStopScan
		}
		return err
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	return found, ok, err
}

// WorkerReceiptCount is the number of retained receipts of a harness/worker:
// its e/ keys, at most the retention limit.
func WorkerReceiptCount(kv KV, harness, worker string) int {
	n := 0
	_ = kv.ForEach([]byte(workerPrefix(harness, worker)), func(_, _ []byte) error { n++; return nil })
	return n
}

// markForeign records a receipt file found at adoption.
func markForeign(kv KV, receiptID string) error {
	if receiptID == "" || strings.Contains(receiptID, "/") {
		return nil
	}
	return kv.Put([]byte("a/"+receiptID), []byte{1})
}

// Foreign reports whether a receipt file was another writer's, found at
// adoption (receipt.adopted, receipt.foreign): the ledger did not create
// it and so never removes it.
func Foreign(kv KV, receiptID string) bool { return kv.Get([]byte("a/"+receiptID)) != nil }

// WorkerReceiptIDs is the set of receipt ids harness/worker retains, read
// from the index's keys alone (e/<harness>/<worker>/<recorded_at>/<id>):
// one scan of at most the retention limit instead of a lookup per id when
// a caller checks a whole directory of receipt files.
func WorkerReceiptIDs(kv KV, harness, worker string) (map[string]bool, error) {
	ids := map[string]bool{}
	err := kv.ForEach([]byte(workerPrefix(harness, worker)), func(k, _ []byte) error {
		if i := bytes.LastIndexByte(k, '/'); i >= 0 {
			ids[string(k[i+1:])] = true
		}
		return nil
	})
	return ids, err
}

// dropEntry removes a receipt from the index: found among its worker's
// entries, as every prune of ours names them, else by id anywhere. An
// unknown id is a no-op (the event records retention, and the receipt may
// predate the index).
func dropEntry(kv KV, harness, worker, receiptID string) error {
	e, ok, err := workerEntry(kv, harness, worker, receiptID)
	if err == nil && !ok {
		e, ok, err = ReceiptByID(kv, receiptID)
	}
	if err != nil || !ok {
		return err
	}
	return deleteEntry(kv, e)
}

func deleteEntry(kv KV, e receipt.Entry) error {
	if err := kv.Delete(entryKey(e)); err != nil {
		return err
	}
	return kv.Delete(ageKey(e))
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
	return entries(kv, workerPrefix(harness, worker), -1)
}

// OldestWorkerReceipts returns at most n of the oldest retained receipts
// of one harness/worker (all of them when n < 0), oldest first; retention
// only ever needs the ones beyond the newest 99.
func OldestWorkerReceipts(kv KV, harness, worker string, n int) ([]receipt.Entry, error) {
	if n == 0 {
		return nil, nil
	}
	return entries(kv, workerPrefix(harness, worker), n)
}

func entries(kv KV, prefix string, limit int) ([]receipt.Entry, error) {
	var out []receipt.Entry
	err := kv.ForEach([]byte(prefix), func(k, v []byte) error {
		e, err := entryOf(k, v)
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

// ReceiptByID returns a retained receipt by id: a scan of the age index,
// for callers that know no worker (status, audits, tests).
func ReceiptByID(kv KV, receiptID string) (receipt.Entry, bool, error) {
	return findEntry(kv, []byte("t/"), receiptID, func(k, v []byte) (receipt.Entry, error) { return entryAtAge(kv, k, v) })
}

// entryAtAge is the entry a t/<recorded_at>/<receipt_id> key with value
// <harness>/<worker> names.
func entryAtAge(kv KV, k, v []byte) (receipt.Entry, error) {
	ek := append([]byte("e/"), v...)
	ek = append(append(ek, '/'), k[len("t/"):]...)
	raw := kv.Get(ek)
	if raw == nil {
		return receipt.Entry{}, fmt.Errorf("receipt index: key %s names a missing entry", k)
	}
	return entryOf(ek, raw)
}

var errStopScan = errors.New("stop")

// ReceiptsRecordedBy returns every retained receipt, of any harness,
// recorded at or before cutoff (a receipt-format time), oldest first. It
// reads the age index only as far as cutoff.
func ReceiptsRecordedBy(kv KV, cutoff string) ([]receipt.Entry, error) {
	var out []receipt.Entry
	err := kv.ForEach([]byte("t/"), func(k, v []byte) error {
		if ts, _, _ := strings.Cut(string(k[2:]), "/"); ts > cutoff {
			return errStopScan
		}
		e, err := entryAtAge(kv, k, v)
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
