package fsm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
)

// benchLog builds n harness events over four harnesses, one minute apart:
// detection and publication, then preflights (started, succeeded with its
// receipt, receipt.recorded) from two workers each, and every 50th
// preflight a drift followed by a republication. Transitions are decided
// with Decide, as a writer would.
func benchLog(b testing.TB, n int) []events.Envelope {
	b.Helper()
	l := newLog(b)
	hs := []string{"codex", "claude-code", "pi", "agent-zero"}
	state := map[string]State{}
	step := map[string]int{}
	move := func(h, tr string) events.Transition {
		cur := state[h]
		if cur == "" {
			cur = Initial
		}
		to, err := Decide(cur, tr)
		if err != nil {
			b.Fatal(err)
		}
		state[h] = to
		return events.Transition{From: string(cur), To: string(to)}
	}
	for i := 0; len(l.envs) < n; i++ {
		h := hs[i%len(hs)]
		k := step[h]
		step[h]++
		l.after(time.Minute)
		st := events.HarnessStream(h)
		w := worker(byte('a' + k%2))
		switch {
		case k == 0:
			l.add(st, events.TypeHarnessDetected, &events.HarnessDetected{Transition: move(h, Detect), HarnessID: h, AdapterVersion: "4", Capability: "native-preflight", Markers: []string{".x"}})
		case k == 1:
			l.publish(h, Unsupported, ConfiguredAwaitingProof)
			move(h, Publish)
		case k%150 == 0:
			l.drift(h, state[h])
			move(h, Drift)
			l.publish(h, NeedsUserReview, ConfiguredAwaitingProof)
			move(h, Publish)
		default:
			id := fmt.Sprintf("receipt-%d", i)
			l.add(st, events.TypePreflightStarted, &events.PreflightStarted{HarnessID: h, WorkerKeyFingerprint: w})
			l.add(st, events.TypePreflightSucceeded, &events.PreflightSucceeded{Transition: move(h, Prove), HarnessID: h, WorkerKeyFingerprint: w, ReceiptID: id,
				QueryClass: "task_hint", ResultCount: 8, SelectedMemoryIDsSHA256: strings.Repeat("ee", 32), DurationMS: 4, TaskHintSHA256: strings.Repeat("dd", 32), TaskHintChars: 40})
			l.add(st, events.TypeReceiptRecorded, &events.ReceiptRecorded{HarnessID: h, ReceiptID: id, ProtocolVersion: 1, AdapterVersion: "4", BridgeFingerprint: strings.Repeat("cd", 32),
				StoreID: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", ProjectRootFingerprint: strings.Repeat("ab", 32), WorkerKeyFingerprint: w, State: "active",
				QueryClass: "task_hint", ResultCount: 8, SelectedMemoryIDsSHA256: strings.Repeat("ee", 32), DurationMS: 4, Status: "success", SHA256: strings.Repeat("ff", 32)})
		}
	}
	return l.envs[:n]
}

const benchEvents = 100_000

// BenchmarkReplay100k replays 100,000 decoded envelopes (strict payload
// decoding included) into four timelines.
func BenchmarkReplay100k(b *testing.B) {
	envs := benchLog(b, benchEvents)
	at := envs[len(envs)-1].RecordedAt
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		hs, err := Replay(envs, at)
		if err != nil || len(hs) != 4 {
			b.Fatal(err, len(hs))
		}
	}
	b.ReportMetric(float64(benchEvents)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkReplay100kFromStored adds decoding of the stored bytes
// (events.DecodeStored), as `audit replay` does over the ledger.
func BenchmarkReplay100kFromStored(b *testing.B) {
	envs := benchLog(b, benchEvents)
	raw := make([][]byte, len(envs))
	for i := range envs {
		envs[i].Seal(events.GenesisHash)
		raw[i] = envs[i].Encode()
	}
	at := envs[len(envs)-1].RecordedAt
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r := NewReplayer(at)
		for _, v := range raw {
			e, err := events.DecodeStored(v)
			if err != nil {
				b.Fatal(err)
			}
			if err := r.Apply(&e); err != nil {
				b.Fatal(err)
			}
		}
		if hs := r.Finish(); len(hs) != 4 {
			b.Fatal(len(hs))
		}
	}
	b.ReportMetric(float64(benchEvents)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// The benchmark's history is itself sound: it replays without error, and
// ends active on every harness.
func TestBenchLogReplays(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 2,000 events")
	}
	l := benchLog(t, 2_000)
	hs, err := Replay(l, l[len(l)-1].RecordedAt)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.State != Active && h.State != ConfiguredAwaitingProof {
			t.Errorf("%s ends %s", h.Harness, h.State)
		}
	}
}
