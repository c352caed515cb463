package projections

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
)

// runFixture mints run events on a fixed clock and id source.
type runFixture struct {
	f   *events.Factory
	now time.Time
}

func newRunFixture() *runFixture {
	r := &runFixture{now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	clock := eventstest.Clock(r.now, time.Second)
	r.f = &events.Factory{Now: func() time.Time { r.now = clock(); return r.now }, Actor: "cli", NewID: eventstest.IDs(0)}
	return r
}

func (r *runFixture) at() string { return events.FormatRunTime(r.now) }

func (r *runFixture) started(scope string, pid int) (string, events.Envelope) {
	id := r.f.NewID().String()
	return id, r.f.Must(events.RunStream(id), events.TypeRunStarted, &events.RunStarted{
		RunID: id, ScopeKey: scope, Command: events.RunCmdCapture, Stage: "start", PID: pid, StartedAt: r.at()})
}

func (r *runFixture) finished(id, scope, status, diag string) events.Envelope {
	return r.f.Must(events.RunStream(id), events.TypeRunFinished, &events.RunFinished{
		RunID: id, ScopeKey: scope, Status: status, Stage: "done", EndedAt: r.at(), DurationMS: 1000, Diagnostic: diag})
}

func (r *runFixture) interrupted(id, scope string, pid int) events.Envelope {
	return r.f.Must(events.RunStream(id), events.TypeRunInterrupted, &events.RunInterrupted{
		RunID: id, ScopeKey: scope, PID: pid, DetectedAt: r.at(), DetectedByPID: 1})
}

var scopeA, scopeB = strings.Repeat("a", 24), strings.Repeat("b", 24)

func apply(t testing.TB, kv KV, evs ...events.Envelope) {
	t.Helper()
	for i := range evs {
		if err := (Runs{}).Apply(kv, nil, &evs[i]); err != nil {
			t.Fatal(err)
		}
	}
}

func statuses(t *testing.T, kv KV, scope string, n int) string {
	t.Helper()
	recs, _, err := LatestRuns(kv, scope, n)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, r.Status)
	}
	return strings.Join(out, ",")
}

func TestRunsFold(t *testing.T) {
	f := newRunFixture()
	kv := NewMemKV()
	a1, s1 := f.started(scopeA, 10)
	a2, s2 := f.started(scopeA, 11)
	a3, s3 := f.started(scopeA, 12)
	b1, s4 := f.started(scopeB, 13)
	apply(t, kv, s1, s2, s3, s4)
	if got := statuses(t, kv, scopeA, 10); got != "running,running,running" {
		t.Fatal(got)
	}
	if run, _ := RunningRuns(kv, scopeA, 10); len(run) != 3 || run[0].RunID != a1 || run[0].PID != 10 {
		t.Fatalf("%+v", run)
	}
	apply(t, kv,
		f.finished(a1, scopeA, events.RunStatusSucceeded, ""),
		f.finished(a2, scopeA, events.RunStatusFailed, "ledger_locked"),
		f.interrupted(a3, scopeA, 12),
		f.finished(b1, scopeB, events.RunStatusAborted, ""))
	if got := statuses(t, kv, scopeA, 10); got != "interrupted,failed,succeeded" {
		t.Fatal(got)
	}
	if got := statuses(t, kv, scopeB, 10); got != "aborted" {
		t.Fatal(got)
	}
	if run, _ := RunningRuns(kv, scopeA, 10); len(run) != 0 {
		t.Fatalf("still running: %+v", run)
	}
	recs, examined, _ := LatestRuns(kv, scopeA, 2)
	if len(recs) != 2 || examined != 2 || recs[1].Diagnostic != "ledger_locked" || *recs[1].DurationMS != 1000 || recs[1].EndedAt == "" {
		t.Fatalf("%+v (examined %d)", recs, examined)
	}
	if !AwaitsFinish(kv, scopeA, a3) || AwaitsFinish(kv, scopeA, a1) {
		t.Fatal("AwaitsFinish")
	}

	// First terminal wins, except that the run's own run.finished closes
	// an interrupted run.
	apply(t, kv,
		f.finished(a1, scopeA, events.RunStatusFailed, "late"),
		f.interrupted(a2, scopeA, 11),
		f.finished(a3, scopeA, events.RunStatusSucceeded, ""),
		f.interrupted(a3, scopeA, 12))
	if got := statuses(t, kv, scopeA, 10); got != "succeeded,failed,succeeded" {
		t.Fatal(got)
	}
	if AwaitsFinish(kv, scopeA, a3) {
		t.Fatal("a3 still awaits a finish")
	}
	// Terminal events of a scope the run does not belong to change nothing.
	_, s5 := f.started(scopeA, 14)
	apply(t, kv, s5)
	id5 := s5.Stream[len(events.RunPrefix):]
	apply(t, kv, f.finished(id5, scopeB, events.RunStatusSucceeded, ""))
	if got := statuses(t, kv, scopeA, 1); got != "running" {
		t.Fatal(got)
	}
}

func TestRunsEventOnForeignStream(t *testing.T) {
	f := newRunFixture()
	_, s := f.started(scopeA, 1)
	s.Stream = events.RunStream("01M6A6FT00000000000000000Z")
	if err := (Runs{}).Apply(NewMemKV(), nil, &s); err == nil || !strings.Contains(err.Error(), "is on stream") {
		t.Fatalf("%v", err)
	}
}

// Retention: a scope keeps its latest MaxRunsPerScope records; the slot of
// the oldest is reused, a dropped running run stays in the running index,
// and a dropped interrupted run no longer awaits a finish.
func TestRunsRetention(t *testing.T) {
	f := newRunFixture()
	kv := NewMemKV()
	first, s := f.started(scopeA, 7) // stays running
	apply(t, kv, s)
	second, s := f.started(scopeA, 8)
	apply(t, kv, s, f.interrupted(second, scopeA, 8))
	var last string
	for i := 0; i < MaxRunsPerScope+3; i++ {
		id, s := f.started(scopeA, 9)
		apply(t, kv, s, f.finished(id, scopeA, events.RunStatusSucceeded, ""))
		last = id
	}
	recs, examined, err := LatestRuns(kv, scopeA, 50)
	if err != nil || len(recs) != 50 || examined != 50 || recs[0].RunID != last {
		t.Fatalf("%d records, examined %d, newest %s: %v", len(recs), examined, recs[0].RunID, err)
	}
	all, examined, _ := LatestRuns(kv, scopeA, 1<<20)
	if len(all) != MaxRunsPerScope || examined != MaxRunsPerScope {
		t.Fatalf("kept %d, examined %d", len(all), examined)
	}
	n := 0
	_ = EachRun(kv, func(r *RunRecord) error { n++; return nil })
	if n != MaxRunsPerScope {
		t.Fatalf("EachRun saw %d", n)
	}
	if run, _ := RunningRuns(kv, scopeA, 10); len(run) != 1 || run[0].RunID != first {
		t.Fatalf("running index: %+v", run)
	}
	if AwaitsFinish(kv, scopeA, second) {
		t.Fatal("a dropped interrupted run still awaits a finish")
	}
	// Ending the dropped running run clears the index without touching the
	// record that reused its slot.
	apply(t, kv, f.interrupted(first, scopeA, 7))
	if run, _ := RunningRuns(kv, scopeA, 10); len(run) != 0 {
		t.Fatalf("%+v", run)
	}
	if got := statuses(t, kv, scopeA, 1); got != "succeeded" {
		t.Fatal(got)
	}
}

// The fold is deterministic: the same events give the same bytes.
func TestRunsDeterministic(t *testing.T) {
	build := func() *MemKV {
		f := newRunFixture()
		kv := NewMemKV()
		for i := 0; i < 30; i++ {
			scope := []string{scopeA, scopeB}[i%2]
			id, s := f.started(scope, 100+i)
			apply(t, kv, s)
			switch i % 3 {
			case 0:
				apply(t, kv, f.finished(id, scope, events.RunStatusSucceeded, ""))
			case 1:
				apply(t, kv, f.interrupted(id, scope, 100+i))
			}
		}
		return kv
	}
	a, b := build(), build()
	if fmt.Sprint(a.Keys()) != fmt.Sprint(b.Keys()) {
		t.Fatal("keys differ")
	}
	for _, k := range a.Keys() {
		if !bytes.Equal(a.Get([]byte(k)), b.Get([]byte(k))) {
			t.Fatalf("value of %q differs", k)
		}
	}
}

func TestRunRecordCodec(t *testing.T) {
	d, rc, items := int64(12), 0, int64(1<<40)
	full := RunRecord{
		SchemaVersion: RunRecordSchema, RunID: "01M6A6FT000000000000000001", ScopeKey: scopeA, Command: "integrations hook",
		Harness: "claude-code", Status: events.RunStatusFailed, Stage: "render", PID: 1<<31 - 1,
		StartedAt: "2026-11-01T12:00:00.000Z", UpdatedAt: "2026-11-01T12:00:01.000Z", EndedAt: "2026-11-01T12:00:01.000Z",
		DurationMS: &d, Diagnostic: "receipt_write", InputSHA256: strings.Repeat("f", 64), InputChars: 99,
		Telemetry: &events.RunTelemetry{QueryClass: events.QueryClassTaskHint, ResultCount: &rc, ReceiptID: "receipt-01", Items: &items},
	}
	for _, r := range []RunRecord{full, {SchemaVersion: 1, RunID: full.RunID, ScopeKey: scopeB, Command: "capture", Status: events.RunStatusRunning, Stage: "start", PID: 1, StartedAt: full.StartedAt, UpdatedAt: full.StartedAt}} {
		b := encodeRecord(&r)
		got, err := decodeRecord(b)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := jsonOf(got), jsonOf(r); g != w {
			t.Fatalf("round trip:\n got %s\nwant %s", g, w)
		}
		for i := 0; i < len(b); i++ {
			if _, err := decodeRecord(b[:i]); err == nil {
				t.Fatalf("truncated record of %d bytes decoded", i)
			}
		}
	}
}

// FuzzRunRecordDecode: decoding stored record bytes never panics, and what
// decodes re-encodes to the same bytes.
func FuzzRunRecordDecode(f *testing.F) {
	d := int64(3)
	f.Add(encodeRecord(&RunRecord{RunID: "01M6A6FT000000000000000001", ScopeKey: scopeA, Command: "capture", Status: "aborted", Stage: "x", PID: 3, DurationMS: &d}))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			return
		}
		r2, err := decodeRecord(encodeRecord(&r))
		if err != nil || jsonOf(r2) != jsonOf(r) {
			t.Fatalf("re-encoded record differs: %v\n%s\n%s", err, jsonOf(r), jsonOf(r2))
		}
	})
}

func jsonOf(r RunRecord) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// BenchmarkRunsFold folds one run (started + finished) into a store-like
// KV: the per-run cost a rebuild and verify pay.
func BenchmarkRunsFold(b *testing.B) {
	f := newRunFixture()
	kv := NewMemKV()
	evs := make([]events.Envelope, 0, 2*b.N)
	for i := 0; i < b.N; i++ {
		id, s := f.started(scopeA, 5)
		evs = append(evs, s, f.finished(id, scopeA, events.RunStatusSucceeded, ""))
	}
	b.ResetTimer()
	for i := range evs {
		if err := (Runs{}).Apply(kv, nil, &evs[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// The batch (fold.Batcher) leaves the bucket byte for byte as folding the
// same events one at a time does, and a run started and finished in one
// batch writes no u/ key at all: nothing is put, nothing deleted.
func TestRunsBatchMatchesOneByOne(t *testing.T) {
	f := newRunFixture()
	var evs []events.Envelope
	for i := 0; i < 30; i++ {
		scope := []string{scopeA, scopeB}[i%2]
		id, s := f.started(scope, 100+i)
		evs = append(evs, s)
		switch i % 3 {
		case 0:
			evs = append(evs, f.finished(id, scope, events.RunStatusSucceeded, ""))
		case 1:
			evs = append(evs, f.interrupted(id, scope, 100+i), f.finished(id, scope, events.RunStatusFailed, "late"))
		}
	}
	one := NewMemKV()
	apply(t, one, evs...)
	batched := &countingKV{MemKV: NewMemKV()}
	for lo := 0; lo < len(evs); lo += 7 { // batches that end mid-run too
		b := (Runs{}).Batch(batched)
		apply(t, b, evs[lo:min(lo+7, len(evs))]...)
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(one.Keys()) != fmt.Sprint(batched.Keys()) {
		t.Fatalf("keys %v, one by one %v", batched.Keys(), one.Keys())
	}
	for _, k := range one.Keys() {
		if !bytes.Equal(one.Get([]byte(k)), batched.Get([]byte(k))) {
			t.Fatalf("value of %q differs", k)
		}
	}

	// A hook's run: started and finished in one transaction.
	kv := &countingKV{MemKV: NewMemKV()}
	id, s := f.started(scopeA, 7)
	b := (Runs{}).Batch(kv)
	apply(t, b, s, f.finished(id, scopeA, events.RunStatusSucceeded, ""))
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, k := range kv.touched {
		if strings.HasPrefix(k, "u/") {
			t.Errorf("a run started and finished in one batch wrote %q", k)
		}
	}
}

// countingKV records the keys put or deleted; deleting an absent key
// writes nothing, as in bbolt (Bucket.Delete returns before it touches a
// node).
type countingKV struct {
	*MemKV
	touched []string
}

func (k *countingKV) Put(key, v []byte) error {
	k.touched = append(k.touched, string(key))
	return k.MemKV.Put(key, v)
}

func (k *countingKV) Delete(key []byte) error {
	if k.MemKV.Get(key) != nil {
		k.touched = append(k.touched, string(key))
	}
	return k.MemKV.Delete(key)
}
