package projections

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

// ledger folds envelopes into MemKVs the way bolt does (positions, stream
// versions) and keeps them for fsm replay.
type ledger struct {
	t        *testing.T
	now      time.Time
	ids      func() ulid.ULID
	receipts int // receipts recorded so far
	versions map[string]uint64
	envs     []events.Envelope
	kv       map[string]*MemKV
}

func newLedger(t *testing.T, start time.Time) *ledger {
	l := &ledger{t: t, now: start, ids: eventstest.IDs(0), versions: map[string]uint64{}, kv: map[string]*MemKV{}}
	for _, p := range All() {
		l.kv[p.Name()] = NewMemKV()
	}
	return l
}

func (l *ledger) factory(actor string) *events.Factory {
	return &events.Factory{Now: func() time.Time { return l.now }, Actor: actor, NewID: l.ids}
}

// append assigns positions and versions in order and folds every
// projection, as one bolt transaction would.
func (l *ledger) append(evs ...events.Envelope) {
	l.t.Helper()
	for _, e := range evs {
		l.versions[e.Stream]++
		e.Version = l.versions[e.Stream]
		e.Position = uint64(len(l.envs) + 1)
		for _, p := range All() {
			if p.Handles(e.Type) {
				if err := p.Apply(l.kv[p.Name()], nil, &e); err != nil {
					l.t.Fatalf("%s at %d: %v", p.Name(), e.Position, err)
				}
			}
		}
		l.envs = append(l.envs, e)
	}
}

func (l *ledger) state(h string) fsm.State {
	l.t.Helper()
	s, err := StateAt(l.kv[HarnessesName], l.kv[ReceiptsName], h, l.now)
	if err != nil {
		l.t.Fatal(err)
	}
	return s
}

func (l *ledger) move(h, typ, transition string, payload func(events.Transition) any) bool {
	l.t.Helper()
	cur := l.state(h)
	to, err := fsm.Decide(cur, transition)
	if err != nil {
		return false
	}
	e, err := l.factory(h).New(events.HarnessStream(h), typ, payload(events.Transition{From: string(cur), To: string(to)}))
	if err != nil {
		l.t.Fatal(err)
	}
	l.append(e)
	return true
}

// preflight records one proof exactly as the command layer does: the state
// at now, the decided transition, preflight.succeeded, receipt.recorded and
// the retention prunes, streams in sorted order.
func (l *ledger) preflight(h, worker string) bool {
	l.t.Helper()
	cur := l.state(h)
	if !preflight.Eligible(h, cur) {
		return false
	}
	to, err := fsm.Decide(cur, fsm.Prove)
	if err != nil {
		l.t.Fatal(err)
	}
	l.receipts++
	id := fmt.Sprintf("receipt-%08d", l.receipts)
	wk := strings.Repeat(worker, 64)[:64]
	f := l.factory(h)
	by := map[string][]events.Envelope{}
	add := func(stream, typ string, p any) {
		e, err := f.New(stream, typ, p)
		if err != nil {
			l.t.Fatal(err)
		}
		by[stream] = append(by[stream], e)
	}
	stream := events.HarnessStream(h)
	add(stream, events.TypePreflightSucceeded, &events.PreflightSucceeded{Transition: events.Transition{From: string(cur), To: string(to)},
		HarnessID: h, WorkerKeyFingerprint: wk, ReceiptID: id, QueryClass: "startup_fallback", SelectedMemoryIDsSHA256: strings.Repeat("0", 64)})
	add(stream, events.TypeReceiptRecorded, &events.ReceiptRecorded{HarnessID: h, ReceiptID: id, ProtocolVersion: 1, AdapterVersion: "4",
		BridgeFingerprint: strings.Repeat("b", 64), StoreID: "s", ProjectRootFingerprint: strings.Repeat("a", 64), WorkerKeyFingerprint: wk,
		State: string(to), QueryClass: "startup_fallback", SelectedMemoryIDsSHA256: strings.Repeat("0", 64), Status: "success",
		SHA256: strings.Repeat("f", 64), RecordedAt: receipt.FormatTime(l.now), Path: "r/" + id + ".json"})
	rkv := l.kv[ReceiptsName]
	expired, err := ReceiptsRecordedBy(rkv, receipt.FormatTime(l.now.Add(-preflight.RetentionAge)))
	if err != nil {
		l.t.Fatal(err)
	}
	beyond, err := OldestWorkerReceipts(rkv, h, wk, preflight.Beyond(WorkerReceiptCount(rkv, h, wk)))
	if err != nil {
		l.t.Fatal(err)
	}
	if all, _ := WorkerReceipts(rkv, h, wk); len(all) != WorkerReceiptCount(rkv, h, wk) {
		l.t.Fatalf("worker count %d, entries %d", WorkerReceiptCount(rkv, h, wk), len(all))
	}
	var ex, mn []receipt.Entry
	for _, e := range expired {
		ex = append(ex, indexedOf(e))
	}
	for _, e := range beyond {
		mn = append(mn, indexedOf(e))
	}
	for _, p := range preflight.Retain(l.now, ex, mn) {
		add(events.HarnessStream(p.HarnessID), events.TypeReceiptPruned, &events.ReceiptPruned{HarnessID: p.HarnessID, WorkerKeyFingerprint: p.Worker, ReceiptID: p.ReceiptID, Reason: p.Reason})
	}
	streams := make([]string, 0, len(by))
	for s := range by {
		streams = append(streams, s)
	}
	slices.Sort(streams)
	for _, s := range streams {
		l.append(by[s]...)
	}
	return true
}

func (l *ledger) publish(h string) bool {
	return l.move(h, events.TypeBridgePublished, fsm.Publish, func(tr events.Transition) any {
		return &events.BridgePublished{Transition: tr, HarnessID: h, AdapterVersion: "4", Capability: "native-preflight",
			BridgeFingerprint: strings.Repeat("b", 64), OwnedFiles: []events.FileDigest{}, ManagedBlocks: []events.BlockDigest{}, ChangedPaths: []string{},
			RecordState: string(fsm.ConfiguredAwaitingProof)}
	})
}

func (l *ledger) drift(h string) bool {
	return l.move(h, events.TypeBridgeDriftDetected, fsm.Drift, func(tr events.Transition) any {
		return &events.BridgeDriftDetected{Transition: tr, HarnessID: h, Paths: []string{"x"}}
	})
}

// TestStateAtMatchesReplay pins the receipt index's state at an instant to
// fsm replay (fsm.StateAt over the stream) over random writer histories:
// publications, drifts, preflights from several workers (with retention
// pruning across harnesses), clock jumps across the 30-day boundary. The
// histories are written with StateAt deciding each `from`, so a divergence
// also surfaces as a replay from-mismatch.
func TestStateAtMatchesReplay(t *testing.T) {
	for seed := uint64(1); seed <= 16; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		l := newLedger(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		hs := []string{"codex", "claude-code"}
		latest := l.now
		for _, h := range hs {
			l.publish(h)
		}
		for step := 0; step < 300; step++ {
			switch d := r.IntN(100); {
			case d < 5:
				l.now = l.now.Add(time.Duration(r.IntN(40*24)) * time.Hour)
			case d < 20:
				l.now = l.now.Add(time.Duration(r.IntN(3600)) * time.Second)
			case d < 23:
				// A writer clock that stepped back: replay judges at the
				// stream's newest event, and so must the index.
				l.now = l.now.Add(-time.Duration(r.IntN(48)) * time.Hour)
			}
			if l.now.After(latest) {
				latest = l.now
			}
			h := hs[r.IntN(len(hs))]
			switch d := r.IntN(100); {
			case d < 3:
				l.drift(h)
			case d < 8:
				l.publish(h)
			default:
				l.preflight(h, string(rune('a'+r.IntN(3))))
			}
			if step%5 != 4 {
				continue
			}
			for _, at := range []time.Time{latest, latest.Add(time.Duration(r.IntN(35*24)) * time.Hour)} {
				replayed, err := fsm.Replay(l.envs, at)
				if err != nil {
					t.Fatalf("seed %d step %d: replay: %v", seed, step, err)
				}
				for _, h := range replayed {
					got, err := StateAt(l.kv[HarnessesName], l.kv[ReceiptsName], h.Harness, at)
					if err != nil || got != h.State {
						t.Fatalf("seed %d step %d %s at %s: index says %s, replay says %s (%v)", seed, step, h.Harness, at, got, h.State, err)
					}
				}
			}
		}
	}
}

// TestReceiptIndexRetention: 101 receipts of one worker keep 100 in the
// index, the oldest pruned; expiry prunes across harnesses; a drift voids
// earlier proofs.
func TestReceiptIndexRetention(t *testing.T) {
	l := newLedger(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l.publish("codex")
	l.publish("claude-code")
	l.preflight("claude-code", "z")
	l.now = l.now.Add(time.Hour)
	for i := 0; i < 101; i++ {
		l.now = l.now.Add(time.Second)
		l.preflight("codex", "a")
	}
	rkv := l.kv[ReceiptsName]
	wk := strings.Repeat("a", 64)
	mine, _ := WorkerReceipts(rkv, "codex", wk)
	if len(mine) != 100 {
		t.Fatalf("%d receipts retained, want 100", len(mine))
	}
	// The keys-only set names exactly the retained entries.
	ids, err := WorkerReceiptIDs(rkv, "codex", wk)
	if err != nil || len(ids) != len(mine) {
		t.Fatalf("WorkerReceiptIDs: %d ids, %v; want %d", len(ids), err, len(mine))
	}
	for _, e := range mine {
		if !ids[e.ReceiptID] {
			t.Errorf("WorkerReceiptIDs misses %s", e.ReceiptID)
		}
	}
	if _, ok, _ := ReceiptByID(rkv, "receipt-00000002"); ok {
		t.Error("the oldest codex receipt is still indexed")
	}
	if _, ok, _ := ReceiptByID(rkv, "receipt-00000003"); !ok {
		t.Error("the second oldest codex receipt was pruned")
	}
	if all, _ := HarnessReceipts(rkv, "codex"); len(all) != 100 || all[0].RecordedAt < all[99].RecordedAt {
		t.Errorf("harness receipts not newest first")
	}
	if l.state("codex") != fsm.Active || l.state("claude-code") != fsm.Active {
		t.Fatal("both harnesses should be active")
	}
	l.now = l.now.Add(31 * 24 * time.Hour)
	if l.state("claude-code") != fsm.ConfiguredAwaitingProof {
		t.Error("31 days later claude-code should have expired")
	}
	l.preflight("codex", "b")
	if rs, _ := HarnessReceipts(rkv, "claude-code"); len(rs) != 0 {
		t.Errorf("expired claude-code receipts kept: %d", len(rs))
	}
	if rs, _ := HarnessReceipts(rkv, "codex"); len(rs) != 1 {
		t.Errorf("codex keeps %d receipts after expiry, want only the new one", len(rs))
	}
	pruned := 0
	for _, e := range l.envs {
		if e.Type == events.TypeReceiptPruned {
			pruned++
		}
	}
	if pruned != 1+1+100 {
		t.Errorf("%d receipt.pruned events, want 102", pruned)
	}
	l.drift("codex")
	p, _ := ReceiptProofOf(rkv, "codex")
	if p.NewestAt != "" || l.state("codex") != fsm.NeedsUserReview {
		t.Errorf("drift should void proofs: %+v %s", p, l.state("codex"))
	}
}

// indexedOf converts an index entry for preflight's retention decision.
func indexedOf(e receipt.Entry) receipt.Entry {
	return receipt.Entry{HarnessID: e.HarnessID, Worker: e.Worker, ReceiptID: e.ReceiptID, RecordedAt: e.RecordedAt, Path: e.Path}
}

// The harness and receipts folds handle exactly the types their sets
// named when they were built from the catalogue: every harness-stream type
// (receipts), the harness-stream types whose payload carries a transition
// (harnesses), and no unknown type.
func TestHarnessFoldsHandle(t *testing.T) {
	for _, typ := range append(events.Types(), "no.such.type") {
		spec, known := events.Lookup(typ)
		harness := known && spec.StreamPrefix == events.HarnessPrefix
		moves := false
		if known {
			_, moves = events.Moves(spec.NewPayload())
		}
		if got := (receiptsProjection{}).Handles(typ); got != harness {
			t.Errorf("receipts Handles(%s) = %v, want %v", typ, got, harness)
		}
		if got := (&harnessesProjection{}).Handles(typ); got != (harness && moves) {
			t.Errorf("harnesses Handles(%s) = %v, want %v", typ, got, harness && moves)
		}
	}
}

// A receipt.pruned is found by its worker's entries; one that names
// another worker (no writer of ours emits it) still drops the receipt by
// id, as replay does, and the proof it carried with it.
func TestReceiptPrunedOfAnotherWorker(t *testing.T) {
	l := newLedger(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l.publish("codex")
	l.preflight("codex", "a")
	l.now = l.now.Add(time.Minute)
	pr, err := l.factory("codex").New(events.HarnessStream("codex"), events.TypeReceiptPruned, &events.ReceiptPruned{
		HarnessID: "codex", WorkerKeyFingerprint: strings.Repeat("b", 64), ReceiptID: "receipt-00000001", Reason: "retention"})
	if err != nil {
		t.Fatal(err)
	}
	l.append(pr)
	rkv := l.kv[ReceiptsName]
	if _, ok, _ := ReceiptByID(rkv, "receipt-00000001"); ok {
		t.Error("the pruned receipt is still indexed")
	}
	if rs, _ := AllReceipts(rkv); len(rs) != 0 {
		t.Errorf("%d receipts retained, want none", len(rs))
	}
	replayed, err := fsm.Replay(l.envs, l.now)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.state("codex"); len(replayed) != 1 || got != replayed[0].State || got != fsm.ConfiguredAwaitingProof {
		t.Errorf("index says %s, replay %+v", got, replayed)
	}
}
