package projections

import (
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// An adopted receipt (receipt.adopted, as ledgers before issue 24 hold
// it) proves nothing: the index and fsm replay agree that its recorded
// prove lapses at once, and that a harness.proof_revoked (a restore) voids
// a proof of this store's own preflight the same way. Its file, and the
// file of an untrusted one (receipt.foreign), is kept even after retention
// drops the entry: the ledger did not create them.
func TestAdoptedReceipts(t *testing.T) {
	start := time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)
	l := newLedger(t, start)
	l.publish("claude-code")
	const adopted, foreign = "receipt-0b8e6f2a-1c3d-4e5f-8a9b-0c1d2e3f4a5b", "receipt-1c9f7a3b-2d4e-4f60-9b0c-1d2e3f4a5b6c"
	w := strings.Repeat("e", 64)
	f := l.factory("cli")
	l.append(
		f.Must(events.HarnessStream("claude-code"), events.TypeReceiptForeign, &events.ReceiptForeign{
			HarnessID: "claude-code", ReceiptID: foreign, Path: ".tree-ring/activation/receipts/claude-code/" + w + "/" + foreign + ".json",
			SHA256: strings.Repeat("4", 64), Reason: "rule_8",
		}),
		f.Must(events.HarnessStream("claude-code"), events.TypeReceiptAdopted, &events.ReceiptAdopted{
			Transition: events.Transition{From: string(fsm.ConfiguredAwaitingProof), To: string(fsm.Active)},
			ReceiptRecorded: events.ReceiptRecorded{
				HarnessID: "claude-code", ReceiptID: adopted, ProtocolVersion: 1, AdapterVersion: "4", BridgeFingerprint: strings.Repeat("b", 64),
				StoreID: "5b0c9d3e-7a41-4f2b-9c6d-1e8f2a3b4c5d", ProjectRootFingerprint: strings.Repeat("a", 64), WorkerKeyFingerprint: w,
				State: "active", QueryClass: "startup_fallback", SelectedMemoryIDsSHA256: strings.Repeat("f", 64), Status: "success",
				SHA256: strings.Repeat("5", 64), RecordedAt: "2026-09-01T08:00:00Z",
				Path: ".tree-ring/activation/receipts/claude-code/" + w + "/" + adopted + ".json",
			},
		}),
	)
	mark := time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Time
		want fsm.State
	}{
		{start.Add(time.Hour), fsm.ConfiguredAwaitingProof},
		{mark.Add(-time.Second), fsm.ConfiguredAwaitingProof},
		{mark.Add(30 * time.Minute), fsm.ConfiguredAwaitingProof},
	} {
		replayed, err := fsm.StateAt(l.envs, "claude-code", tc.at)
		if err != nil {
			t.Fatal(err)
		}
		got, err := StateAt(l.kv[HarnessesName], l.kv[ReceiptsName], "claude-code", tc.at)
		if err != nil || got != tc.want || replayed != tc.want {
			t.Fatalf("at %s: index %s, replay %s, want %s (%v)", tc.at, got, replayed, tc.want, err)
		}
	}
	rkv := l.kv[ReceiptsName]
	e, ok, err := ReceiptByID(rkv, adopted)
	if err != nil || !ok || !e.Adopted || e.Path == "" {
		t.Fatalf("adopted entry %+v %v %v", e, ok, err)
	}
	if indexed(rkv, foreign) || !kept(rkv, foreign) || !kept(rkv, adopted) {
		t.Fatal("foreign receipt: want kept, not indexed")
	}
	l.append(f.Must(events.HarnessStream("claude-code"), events.TypeReceiptPruned, &events.ReceiptPruned{
		HarnessID: "claude-code", WorkerKeyFingerprint: w, ReceiptID: adopted, Reason: "expired",
	}))
	if indexed(rkv, adopted) || !kept(rkv, adopted) {
		t.Fatal("a pruned adopted receipt's file must stay kept")
	}
	if kept(rkv, "receipt-2da08b4c-3e5f-4071-a0c1-2e3f4a5b6c7d") {
		t.Fatal("an unknown receipt is kept")
	}
}

func TestRevokedProofAgreesWithReplay(t *testing.T) {
	start := time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)
	l := newLedger(t, start)
	l.publish("codex")
	f := l.factory("cli")
	l.append(f.Must(events.HarnessStream("codex"), events.TypePreflightSucceeded, &events.PreflightSucceeded{
		Transition: events.Transition{From: string(fsm.ConfiguredAwaitingProof), To: string(fsm.Active)}, HarnessID: "codex",
		WorkerKeyFingerprint: strings.Repeat("e", 64), ReceiptID: "receipt-1", QueryClass: "startup_fallback", SelectedMemoryIDsSHA256: strings.Repeat("f", 64),
	}))
	proved := l.envs[len(l.envs)-1].RecordedAt
	l.now = l.now.Add(time.Hour)
	l.append(f.Must(events.HarnessStream("codex"), events.TypeProofRevoked, &events.ProofRevoked{HarnessID: "codex", Reason: events.ProofRevokedRestored, ReceiptID: "receipt-1"}))
	revoked := l.envs[len(l.envs)-1].RecordedAt
	for _, tc := range []struct {
		at   time.Time
		want fsm.State
	}{{proved, fsm.Active}, {revoked.Add(time.Minute), fsm.ConfiguredAwaitingProof}} {
		replayed, err := fsm.StateAt(l.envs, "codex", tc.at)
		if err != nil {
			t.Fatal(err)
		}
		if tc.at.After(revoked) {
			// The index holds the state at its head only.
			got, err := StateAt(l.kv[HarnessesName], l.kv[ReceiptsName], "codex", tc.at)
			if err != nil || got != tc.want {
				t.Fatalf("at %s: index %s, want %s (%v)", tc.at, got, tc.want, err)
			}
		}
		if replayed != tc.want {
			t.Fatalf("at %s: replay %s, want %s", tc.at, replayed, tc.want)
		}
	}
}

// indexed reports whether the index retains a receipt id.
func indexed(kv KV, receiptID string) bool {
	_, ok, _ := ReceiptByID(kv, receiptID)
	return ok
}

// kept reports whether a receipt file must stay on disk: retained, or
// another writer's (Foreign).
func kept(kv KV, receiptID string) bool { return indexed(kv, receiptID) || Foreign(kv, receiptID) }
