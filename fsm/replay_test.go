package fsm

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
)

var t0 = time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// log builds envelopes as a ledger would: fixed clock and ids, positions
// and stream versions assigned in order. It does not chain hashes (replay
// does not read them; verify and DecodeEnvelope do).
type log struct {
	t    testing.TB
	now  time.Time
	n    uint64 // events appended
	ids  func() ulid.ULID
	ver  map[string]uint64
	envs []events.Envelope
}

func newLog(t testing.TB) *log {
	return &log{t: t, now: t0, ids: eventstest.IDs(0), ver: map[string]uint64{}}
}

func (l *log) factory() *events.Factory {
	return &events.Factory{Now: func() time.Time { return l.now }, NewID: l.ids, Actor: "test"}
}

func (l *log) add(stream, typ string, p any) *events.Envelope {
	l.t.Helper()
	e, err := l.factory().New(stream, typ, p)
	if err != nil {
		l.t.Fatal(err)
	}
	l.n++
	l.ver[stream]++
	e.Position, e.Version = l.n, l.ver[stream]
	l.envs = append(l.envs, e)
	return &l.envs[len(l.envs)-1]
}

func (l *log) after(d time.Duration) *log { l.now = l.now.Add(d); return l }

func tr(from, to State) events.Transition {
	return events.Transition{From: string(from), To: string(to)}
}

func worker(c byte) string { return strings.Repeat(string(c), 64) }

// Event builders for harness h.
func (l *log) publish(h string, from, to State) *events.Envelope {
	return l.add(events.HarnessStream(h), events.TypeBridgePublished, &events.BridgePublished{
		Transition: tr(from, to), HarnessID: h, AdapterVersion: "4", Capability: "native-preflight",
		BridgeFingerprint: strings.Repeat("cd", 32), OwnedFiles: []events.FileDigest{}, ManagedBlocks: []events.BlockDigest{}, ChangedPaths: []string{".codex/hooks.json"},
	})
}

func (l *log) prove(h string, from, to State, receipt string, w byte) *events.Envelope {
	return l.add(events.HarnessStream(h), events.TypePreflightSucceeded, &events.PreflightSucceeded{
		Transition: tr(from, to), HarnessID: h, WorkerKeyFingerprint: worker(w), ReceiptID: receipt,
		QueryClass: "startup_fallback", ResultCount: 3, SelectedMemoryIDsSHA256: strings.Repeat("ee", 32), DurationMS: 12,
	})
}

func (l *log) drift(h string, from State) *events.Envelope {
	return l.add(events.HarnessStream(h), events.TypeBridgeDriftDetected, &events.BridgeDriftDetected{
		Transition: tr(from, NeedsUserReview), HarnessID: h, Paths: []string{".codex/hooks.json"},
	})
}

func (l *log) prune(h, receipt string, w byte) *events.Envelope {
	return l.add(events.HarnessStream(h), events.TypeReceiptPruned, &events.ReceiptPruned{
		HarnessID: h, WorkerKeyFingerprint: worker(w), ReceiptID: receipt, Reason: "invalid",
	})
}

func replayOne(t *testing.T, l *log, h string, at time.Time) *History {
	t.Helper()
	hs, err := Replay(l.envs, at)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range hs {
		if x.Harness == h {
			return x
		}
	}
	t.Fatalf("no history for %s", h)
	return nil
}

// steps renders the transition steps compactly, as fixtures do.
func steps(h *History) string {
	var out []string
	for _, s := range h.Steps {
		if s.Transition == "" {
			continue
		}
		pos := fmt.Sprint(s.Position)
		if s.Derived {
			pos = "derived@" + s.At.Format(time.RFC3339)
		}
		out = append(out, fmt.Sprintf("%s %s %s->%s", pos, s.Transition, s.From, s.To))
	}
	return strings.Join(out, "; ")
}

func TestReplayExpiryBoundary(t *testing.T) {
	l := newLog(t)
	l.publish("codex", Unsupported, ConfiguredAwaitingProof)
	rec := l.after(time.Hour).prove("codex", ConfiguredAwaitingProof, Active, "receipt-1", 'a').RecordedAt
	expiry := rec.Add(30 * day)

	if h := replayOne(t, l, "codex", expiry.Add(-time.Second)); h.State != Active || h.Recorded != Active {
		t.Fatalf("one second before the 30th day: %s (%s)", h.State, steps(h))
	}
	h := replayOne(t, l, "codex", expiry)
	if h.State != ConfiguredAwaitingProof || h.Recorded != Active {
		t.Fatalf("at the 30th day: state %s recorded %s", h.State, h.Recorded)
	}
	want := "1 publish unsupported->configured-awaiting-proof; 2 prove configured-awaiting-proof->active; derived@2026-10-01T10:00:00Z expire active->configured-awaiting-proof"
	if got := steps(h); got != want {
		t.Fatalf("steps:\n got %s\nwant %s", got, want)
	}
	last := h.Steps[len(h.Steps)-1]
	if last.Position != 0 || last.Type != "" || !strings.Contains(last.Reason(), "receipt-1") {
		t.Errorf("derived step %+v reason %q", last, last.Reason())
	}
	// Long after, the expiry is still dated on the 30th day, not at the instant.
	if h := replayOne(t, l, "codex", expiry.Add(100*day)); !h.Steps[len(h.Steps)-1].At.Equal(expiry) {
		t.Errorf("derived step dated %s, want %s", h.Steps[len(h.Steps)-1].At, expiry)
	}
}

func TestReplayInstantIsAPrefix(t *testing.T) {
	l := newLog(t)
	l.publish("codex", Unsupported, ConfiguredAwaitingProof)
	at := l.now
	l.after(time.Minute).prove("codex", ConfiguredAwaitingProof, Active, "receipt-1", 'a')
	// A broken event after the instant is not part of the history then.
	l.drift("codex", NeedsPlugin)
	h := replayOne(t, l, "codex", at)
	if h.State != ConfiguredAwaitingProof || h.Events != 1 || h.Later != 2 {
		t.Fatalf("state %s events %d later %d", h.State, h.Events, h.Later)
	}
	if _, err := Replay(l.envs, l.now); err == nil {
		t.Fatal("the broken event is part of the history at the end")
	}
}

func TestReplayTwoWorkers(t *testing.T) {
	l := newLog(t)
	l.publish("claude-code", Unsupported, ConfiguredAwaitingProof)
	r1 := l.after(time.Hour).prove("claude-code", ConfiguredAwaitingProof, Active, "receipt-w1", 'a').RecordedAt
	r2 := l.after(10*day).prove("claude-code", Active, Active, "receipt-w2", 'b').RecordedAt

	// Worker a's receipt is 35 days old, worker b's 25: still active.
	h := replayOne(t, l, "claude-code", r1.Add(35*day))
	if h.State != Active {
		t.Fatalf("worker b's fresh receipt should keep it active: %s", steps(h))
	}
	ws := h.Workers()
	if len(ws) != 2 || ws[0].ID != "receipt-w1" || Fresh(ws[0].At, r1.Add(35*day)) || ws[1].ID != "receipt-w2" || !Fresh(ws[1].At, r1.Add(35*day)) {
		t.Fatalf("workers %+v", ws)
	}
	h = replayOne(t, l, "claude-code", r2.Add(30*day))
	if h.State != ConfiguredAwaitingProof || !h.Steps[len(h.Steps)-1].At.Equal(r2.Add(30*day)) {
		t.Fatalf("both expired: %s", steps(h))
	}
}

func TestReplayReceiptsDoNotSurviveLeavingProof(t *testing.T) {
	l := newLog(t)
	l.publish("codex", Unsupported, ConfiguredAwaitingProof)
	l.after(time.Hour).prove("codex", ConfiguredAwaitingProof, Active, "receipt-old", 'a')
	l.after(time.Hour).drift("codex", Active)
	l.after(time.Hour).publish("codex", NeedsUserReview, ConfiguredAwaitingProof)
	h := replayOne(t, l, "codex", l.now.Add(time.Hour))
	if h.State != ConfiguredAwaitingProof || len(h.Workers()) != 0 {
		t.Fatalf("a receipt from before the drift still counts: %s %+v", h.State, h.Workers())
	}
}

func TestReplayWriterWithOrWithoutTheClock(t *testing.T) {
	for _, from := range []State{ConfiguredAwaitingProof, Active} {
		l := newLog(t)
		l.publish("codex", Unsupported, ConfiguredAwaitingProof)
		l.after(time.Hour).prove("codex", ConfiguredAwaitingProof, Active, "receipt-1", 'a')
		// 40 days later: a writer that derived the expiry records from
		// configured-awaiting-proof; one that read the recorded state, active.
		l.after(40*day).drift("codex", from)
		h := replayOne(t, l, "codex", l.now)
		want := "1 publish unsupported->configured-awaiting-proof; 2 prove configured-awaiting-proof->active; derived@2026-10-01T10:00:00Z expire active->configured-awaiting-proof; 3 drift " + string(from) + "->needs-user-review"
		if got := steps(h); got != want || h.State != NeedsUserReview {
			t.Errorf("from %s:\n got %s\nwant %s", from, got, want)
		}
	}
}

func TestReplayPrune(t *testing.T) {
	l := newLog(t)
	l.publish("codex", Unsupported, ConfiguredAwaitingProof)
	l.after(time.Hour).prove("codex", ConfiguredAwaitingProof, Active, "receipt-1", 'a')
	l.after(day).prove("codex", Active, Active, "receipt-2", 'a')
	l.after(day).prune("codex", "receipt-2", 'a')
	if h := replayOne(t, l, "codex", l.now); h.State != Active {
		t.Fatalf("receipt-1 is still fresh: %s", steps(h))
	}
	pruned := l.after(day).prune("codex", "receipt-1", 'a').RecordedAt
	h := replayOne(t, l, "codex", l.now.Add(time.Hour))
	last := h.Steps[len(h.Steps)-1]
	if h.State != ConfiguredAwaitingProof || !last.Derived || !last.At.Equal(pruned) || last.Reason() != "no receipt proves this state" {
		t.Fatalf("pruning the last proof: %s; last %+v %q", steps(h), last, last.Reason())
	}
}

func TestReplayReceiptRecordedAndPreflightShareOneReceipt(t *testing.T) {
	l := newLog(t)
	l.publish("pi", Unsupported, ConfiguredAwaitingProof)
	l.after(time.Minute).add(events.HarnessStream("pi"), events.TypeReceiptRecorded, &events.ReceiptRecorded{
		HarnessID: "pi", ReceiptID: "receipt-9", ProtocolVersion: 1, AdapterVersion: "1", BridgeFingerprint: strings.Repeat("cd", 32),
		StoreID: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", ProjectRootFingerprint: strings.Repeat("ab", 32), WorkerKeyFingerprint: worker('a'),
		State: "active", QueryClass: "task_hint", ResultCount: 2, SelectedMemoryIDsSHA256: strings.Repeat("ee", 32), Status: "success", SHA256: strings.Repeat("ff", 32),
	})
	first := l.envs[len(l.envs)-1].RecordedAt
	l.after(time.Second).prove("pi", ConfiguredAwaitingProof, Active, "receipt-9", 'a')
	h := replayOne(t, l, "pi", l.now)
	ws := h.Workers()
	if h.State != Active || len(ws) != 1 || !ws[0].At.Equal(first) {
		t.Fatalf("state %s workers %+v", h.State, ws)
	}
	// receipt.recorded moves nothing: its step keeps the state.
	if s := h.Steps[1]; s.Transition != "" || s.From != ConfiguredAwaitingProof || s.To != ConfiguredAwaitingProof ||
		s.Reason() != "receipt receipt-9, worker aaaaaaaaaaaa, success active, task_hint, 2 results" {
		t.Fatalf("receipt step %+v %q", s, s.Reason())
	}
	if r := h.Steps[2].Reason(); r != "receipt receipt-9, worker aaaaaaaaaaaa, startup_fallback, 3 results" {
		t.Fatalf("preflight reason %q", r)
	}
}

func TestReplayErrorsNameThePosition(t *testing.T) {
	type mk func(l *log)
	cases := []struct {
		name   string
		build  mk
		kind   ReplayErrorKind
		pos    uint64
		detail string
	}{
		{"from mismatch", func(l *log) {
			l.publish("codex", Unsupported, ConfiguredAwaitingProof)
			l.prove("codex", NeedsTrust, Active, "receipt-1", 'a')
		}, FromMismatch, 2, "recorded from needs-trust, but the state there is configured-awaiting-proof"},
		{"stream starts late", func(l *log) {
			l.publish("codex", Unsupported, ConfiguredAwaitingProof)
			l.envs[0].Version = 2
		}, OutOfOrder, 1, "the stream starts at version 2"},
		{"version gap", func(l *log) {
			l.publish("codex", Unsupported, ConfiguredAwaitingProof)
			l.prove("codex", ConfiguredAwaitingProof, Active, "receipt-1", 'a')
			l.envs[1].Version = 3
		}, OutOfOrder, 2, "version 3 follows version 1"},
		{"swapped lines of one stream", func(l *log) {
			l.publish("codex", Unsupported, ConfiguredAwaitingProof)
			l.prove("codex", ConfiguredAwaitingProof, Active, "receipt-1", 'a')
			l.envs[0], l.envs[1] = l.envs[1], l.envs[0]
		}, OutOfOrder, 2, "the stream starts at version 2"},
		{"positions going back", func(l *log) {
			l.add(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{StoreID: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", Format: 1})
			l.publish("codex", Unsupported, ConfiguredAwaitingProof)
			l.envs[0], l.envs[1] = l.envs[1], l.envs[0]
			l.envs[0].Position, l.envs[1].Position = 3, 1
		}, OutOfOrder, 1, "follows position 3"},
		{"harness mismatch", func(l *log) {
			e := l.publish("codex", Unsupported, ConfiguredAwaitingProof)
			e.Stream = events.HarnessStream("goose")
		}, BadEvent, 1, `payload names harness "codex" on stream harness/goose`},
		{"unknown state", func(l *log) {
			e := l.publish("codex", Unsupported, ConfiguredAwaitingProof)
			e.Payload = []byte(strings.Replace(string(e.Payload), `"to":"configured-awaiting-proof"`, `"to":"activ"`, 1))
		}, BadEvent, 1, `recorded to "activ" is not a state`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newLog(t)
			c.build(l)
			_, err := Replay(l.envs, l.now.Add(day))
			var re *ReplayError
			if !errors.As(err, &re) || re.Kind != c.kind || re.Position != c.pos || !strings.Contains(re.Detail, c.detail) {
				t.Fatalf("got %v, want %s at position %d (%s)", err, c.kind, c.pos, c.detail)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("position %d ", c.pos)) || !strings.Contains(err.Error(), "refusing to invent a state") {
				t.Errorf("message %q", err)
			}
		})
	}
}

func TestStateAt(t *testing.T) {
	l := newLog(t)
	l.publish("codex", Unsupported, ConfiguredAwaitingProof)
	l.after(time.Hour).prove("codex", ConfiguredAwaitingProof, Active, "receipt-1", 'a')
	l.add(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{StoreID: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", Format: 1})
	for _, c := range []struct {
		h    string
		at   time.Time
		want State
	}{
		{"codex", l.now, Active},
		{"codex", l.now.Add(31 * day), ConfiguredAwaitingProof},
		{"pi", l.now, Unsupported},
	} {
		got, err := StateAt(l.envs, c.h, c.at)
		if err != nil || got != c.want {
			t.Errorf("StateAt(%s, %s) = %s %v, want %s", c.h, c.at, got, err, c.want)
		}
		// A writer deciding from that state gets a from that replays.
		if c.h == "codex" {
			if next, err := Decide(got, Prove); err != nil || next != Active {
				t.Errorf("Decide(%s, prove) = %s %v", got, next, err)
			}
		}
	}
}

func TestFresh(t *testing.T) {
	rec := t0
	for _, c := range []struct {
		at   time.Time
		want bool
	}{
		{rec.Add(-time.Nanosecond), false}, // in the future
		{rec, true},
		{rec.Add(30*day - time.Nanosecond), true},
		{rec.Add(30 * day), false},
	} {
		if Fresh(rec, c.at) != c.want {
			t.Errorf("Fresh at %s = %v", c.at.Sub(rec), !c.want)
		}
	}
}

// Reasons carry codes, ids, shortened fingerprints and counts: never paths,
// task-hint digests or anything free-form beyond a bounded code.
func TestReasonsArePrivacySafe(t *testing.T) {
	l := newLog(t)
	l.publish("codex", Unsupported, ConfiguredAwaitingProof)
	hint := strings.Repeat("9", 64)
	l.add(events.HarnessStream("codex"), events.TypePreflightSucceeded, &events.PreflightSucceeded{
		Transition: tr(ConfiguredAwaitingProof, Active), HarnessID: "codex", WorkerKeyFingerprint: worker('a'), ReceiptID: "receipt-1",
		QueryClass: "task_hint", ResultCount: 2, SelectedMemoryIDsSHA256: strings.Repeat("ee", 32), TaskHintSHA256: hint, TaskHintChars: 120,
	})
	l.add(events.HarnessStream("codex"), events.TypePublicationReviewRequired, &events.PublicationReviewRequired{
		Transition: tr(Active, NeedsUserReview), HarnessID: "codex", Reason: "existing_hook\nINJECTED " + strings.Repeat("x", 200), Paths: []string{".codex/hooks.json", "AGENTS.md"},
	})
	h := replayOne(t, l, "codex", l.now)
	for _, s := range h.Steps {
		r := s.Reason()
		if strings.Contains(r, "/") || strings.Contains(r, "AGENTS.md") || strings.Contains(r, hint[:12]) || strings.Contains(r, "\n") || len([]rune(r)) > 200 {
			t.Errorf("%s reason %q", s.Type, r)
		}
	}
	if got := h.Steps[2].Reason(); !strings.HasPrefix(got, "reason existing_hook?INJECTED xxx") || !strings.HasSuffix(got, "…, 2 paths") {
		t.Errorf("review reason %q", got)
	}
}

func (l *log) adopt(h string, from, to State, receipt string, w byte, recordedAt time.Time) *events.Envelope {
	return l.add(events.HarnessStream(h), events.TypeReceiptAdopted, &events.ReceiptAdopted{
		Transition: tr(from, to),
		ReceiptRecorded: events.ReceiptRecorded{
			HarnessID: h, ReceiptID: receipt, ProtocolVersion: 1, AdapterVersion: "4", BridgeFingerprint: strings.Repeat("cd", 32),
			StoreID: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", ProjectRootFingerprint: strings.Repeat("ab", 32), WorkerKeyFingerprint: worker(w),
			State: string(to), QueryClass: "startup_fallback", ResultCount: 1, SelectedMemoryIDsSHA256: strings.Repeat("ee", 32), Status: "success",
			SHA256: strings.Repeat("ff", 32), RecordedAt: events.ReceiptTime(recordedAt),
		},
	})
}

func (l *log) revoke(h, newest string) *events.Envelope {
	return l.add(events.HarnessStream(h), events.TypeProofRevoked, &events.ProofRevoked{HarnessID: h, Reason: events.ProofRevokedRestored, ReceiptID: newest})
}

// Issue 24 finding 2: a receipt another writer left (an adopted store's,
// or a clone's forged one) is history, never proof: the adoption's recorded
// prove transition lapses at once, and only this store's own preflight
// proves afterwards.
func TestReplayAdoptedReceiptIsNotProof(t *testing.T) {
	l := newLog(t)
	l.publish("claude-code", Unsupported, ConfiguredAwaitingProof)
	adopted := l.after(time.Second).adopt("claude-code", ConfiguredAwaitingProof, Active, "receipt-clone", 'a', t0).RecordedAt
	h := replayOne(t, l, "claude-code", l.now.Add(time.Hour))
	want := "1 publish unsupported->configured-awaiting-proof; 2 prove configured-awaiting-proof->active; derived@" +
		adopted.Format(time.RFC3339) + " expire active->configured-awaiting-proof"
	last := h.Steps[len(h.Steps)-1]
	if got := steps(h); got != want || h.State != ConfiguredAwaitingProof || len(h.Workers()) != 0 || last.Reason() != NotProofHere {
		t.Fatalf("adopted receipt:\n got %s (%s, %q)\nwant %s", got, h.State, last.Reason(), want)
	}
	// A local preflight, decided from the derived state, proves.
	l.after(time.Minute).prove("claude-code", ConfiguredAwaitingProof, Active, "receipt-here", 'b')
	if h := replayOne(t, l, "claude-code", l.now); h.State != Active || len(h.Workers()) != 1 || h.Workers()[0].ID != "receipt-here" {
		t.Fatalf("a local preflight after adoption: %s %+v", steps(h), h.Workers())
	}
}

// The restore case: `events import` of this store's export on another
// machine brings fresh receipts; the harness.proof_revoked it records
// after them leaves the harness configured-awaiting-proof (before it, at
// the original machine's instants, the history stays active), until a
// preflight here proves again.
func TestReplayRevokedAfterRestore(t *testing.T) {
	l := newLog(t)
	l.publish("codex", Unsupported, ConfiguredAwaitingProof)
	proved := l.after(time.Hour).prove("codex", ConfiguredAwaitingProof, Active, "receipt-1", 'a').RecordedAt
	revoked := l.after(time.Hour).revoke("codex", "receipt-1").RecordedAt
	if h := replayOne(t, l, "codex", proved.Add(time.Minute)); h.State != Active {
		t.Fatalf("before the restore the history is active: %s", steps(h))
	}
	h := replayOne(t, l, "codex", revoked.Add(time.Minute))
	last := h.Steps[len(h.Steps)-1]
	if h.State != ConfiguredAwaitingProof || !last.Derived || !last.At.Equal(revoked) || last.Reason() != NotProofHere {
		t.Fatalf("after the restore: %s %q", steps(h), last.Reason())
	}
	if r := h.Steps[2].Reason(); r != "receipts up to receipt-1 revoked, reason restored" {
		t.Fatalf("revocation reason %q", r)
	}
	l.after(time.Minute).prove("codex", ConfiguredAwaitingProof, Active, "receipt-2", 'a')
	if h := replayOne(t, l, "codex", l.now); h.State != Active {
		t.Fatalf("a preflight here proves again: %s", steps(h))
	}
}
