package preflight

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

func TestNormalized(t *testing.T) {
	keep := []string{"abc123", "019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b", "codex:explorer:0123456789abcdef", "a@b.c_d-e", strings.Repeat("a", 128)}
	for _, v := range keep {
		if got := Normalized("session", v); got != v {
			t.Errorf("%q normalized to %q", v, got)
		}
	}
	hashed := []string{"", ".", "..", "my project", "/home/u/x", strings.Repeat("a", 129), "a\nb", "é",
		"sk-proj-abcdefghijklmnopqrstuvwxyz", "diagnosis"}
	for _, v := range hashed {
		got := Normalized("session", v)
		if got != "session-"+adapters.SHA256Hex([]byte(v))[:24] {
			t.Errorf("%q normalized to %q", v, got)
		}
	}
}

func TestHookIdentity(t *testing.T) {
	start := HookIdentity("codex", HookInput{Event: SessionStart, SessionID: "s1"})
	if start != (Identity{AgentProfile: "codex", WorkflowID: "s1", SessionID: "s1"}) {
		t.Errorf("session start: %+v", start)
	}
	if stop := HookIdentity("codex", HookInput{Event: Stop, SessionID: "s1"}); stop != start {
		t.Errorf("a stop is the same worker as its start: %+v", stop)
	}
	sub := HookIdentity("claude-code", HookInput{Event: SubagentStart, SessionID: "s1", AgentID: "agent-1", AgentType: "general purpose"})
	want := Identity{
		AgentProfile: "claude-code:" + Normalized("agent-type", "general purpose") + ":" + adapters.SHA256Hex([]byte("agent-1"))[:16],
		WorkflowID:   "s1", SessionID: "agent-1",
	}
	if sub != want || !strings.HasPrefix(sub.AgentProfile, "claude-code:agent-type-") {
		t.Errorf("subagent: %+v, want %+v", sub, want)
	}
	other := HookIdentity("claude-code", HookInput{Event: SubagentStart, SessionID: "s1", AgentID: "agent-2", AgentType: "general purpose"})
	if other.AgentProfile == sub.AgentProfile || WorkerKeyFingerprint("claude-code", other.AgentProfile) == WorkerKeyFingerprint("claude-code", sub.AgentProfile) {
		t.Error("two subagents share a worker")
	}
	if WorkerKeyFingerprint("codex", "x") == WorkerKeyFingerprint("claude-code", "x") {
		t.Error("the worker key must name the harness")
	}
	if n, a := ProjectName("/tmp/my project"); n != "my project" || a != Normalized("project", "my project") {
		t.Errorf("project name: %q %q", n, a)
	}
}

// A subagent's lessons are filed under the parent session's agent profile
// (which recurs), named by the subagent's session; a main session's under
// its own identity.
func TestCaptureIdentity(t *testing.T) {
	for _, tc := range []struct {
		in   HookInput
		want Identity
	}{
		{HookInput{Event: Stop, SessionID: "s1"}, Identity{AgentProfile: "codex", WorkflowID: "s1", SessionID: "s1"}},
		{HookInput{Event: SubagentStop, SessionID: "s1", AgentID: "agent-1", AgentType: "general purpose"}, Identity{AgentProfile: "codex", WorkflowID: "s1", SessionID: "agent-1"}},
		{HookInput{Event: SubagentStop, SessionID: "s1", AgentID: "agent-2", AgentType: "reviewer"}, Identity{AgentProfile: "codex", WorkflowID: "s1", SessionID: "agent-2"}},
		{HookInput{Event: SubagentStop, SessionID: "s 1", AgentID: "/tmp/agent 3", AgentType: "x"},
			Identity{AgentProfile: "codex", WorkflowID: Normalized("session", "s 1"), SessionID: Normalized("agent", "/tmp/agent 3")}},
	} {
		got := CaptureIdentity("codex", tc.in)
		if got != tc.want {
			t.Errorf("%+v: %+v, want %+v", tc.in, got, tc.want)
		}
		if w := HookIdentity("codex", tc.in); tc.in.Subagent() && (w.AgentProfile == got.AgentProfile || w.SessionID != got.SessionID) {
			t.Errorf("the worker identity must stay the subagent's: %+v", w)
		}
	}
}

func testReceipt() receipt.Receipt {
	return receipt.Receipt{
		SchemaVersion: 1, ProtocolVersion: 1, ReceiptID: "receipt-01234567-89ab-4def-8123-456789abcdef",
		HarnessID: "claude-code", AdapterVersion: "4", BridgeFingerprint: strings.Repeat("b", 64),
		StoreID: "01234567-89ab-4def-8123-456789abcdef", ProjectRootFingerprint: strings.Repeat("a", 64),
		WorkerKeyFingerprint: strings.Repeat("e", 64), Session: Identity{AgentProfile: "claude-code", WorkflowID: "workflow-01", SessionID: "session-01"},
		State: "active", QueryClass: "startup_fallback", ResultCount: 0,
		SelectedMemoryIDsSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		DurationMS:              18, Status: "success", RecordedAt: "2026-08-13T12:00:00Z",
	}
}

// The JSON preflight response carries the receipt's summary: no session
// identity, one state.
func TestJSONOutputSummary(t *testing.T) {
	out := string(JSONOutput("ctx", "active", testReceipt().Summary()))
	if strings.Contains(out, "agent_profile") || !strings.HasPrefix(out, `{"context":"ctx","state":"active","receipt":{"schema_version":1,`) || strings.Count(out, `"state"`) != 1 {
		t.Errorf("json output: %s", out)
	}
}

// Each of the eight verification rules, violated alone, rejects the
// receipt with its own number.
func TestVerifyEightRules(t *testing.T) {
	now := time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC)
	fp := strings.Repeat("b", 64)
	m := adapters.Manifest{SchemaVersion: 1, ProtocolVersion: 1, StoreID: "01234567-89ab-4def-8123-456789abcdef",
		ProjectRootFingerprint: strings.Repeat("a", 64),
		Harnesses:              map[string]adapters.Record{"claude-code": {AdapterVersion: "4", BridgeFingerprint: fp}}}
	if err := Verify(testReceipt(), m, "claude-code", fp, now); err != nil {
		t.Fatalf("valid receipt rejected: %v", err)
	}
	cases := []struct {
		rule int
		mut  func(*receipt.Receipt, *adapters.Manifest, *string, *time.Time)
	}{
		{1, func(r *receipt.Receipt, _ *adapters.Manifest, _ *string, _ *time.Time) { r.SchemaVersion = 2 }},
		{1, func(_ *receipt.Receipt, m *adapters.Manifest, _ *string, _ *time.Time) { m.ProtocolVersion = 2 }},
		{2, func(r *receipt.Receipt, _ *adapters.Manifest, _ *string, _ *time.Time) { r.HarnessID = "codex" }},
		{3, func(r *receipt.Receipt, _ *adapters.Manifest, _ *string, _ *time.Time) { r.AdapterVersion = "3" }},
		{4, func(r *receipt.Receipt, _ *adapters.Manifest, _ *string, _ *time.Time) {
			r.StoreID = "11234567-89ab-4def-8123-456789abcdef"
		}},
		{5, func(r *receipt.Receipt, _ *adapters.Manifest, _ *string, _ *time.Time) {
			r.ProjectRootFingerprint = strings.Repeat("c", 64)
		}},
		{6, func(r *receipt.Receipt, _ *adapters.Manifest, _ *string, _ *time.Time) {
			r.BridgeFingerprint = strings.Repeat("d", 64)
		}},
		{6, func(_ *receipt.Receipt, _ *adapters.Manifest, disk *string, _ *time.Time) {
			*disk = strings.Repeat("d", 64)
		}},
		{7, func(r *receipt.Receipt, _ *adapters.Manifest, _ *string, _ *time.Time) { r.Status = "failed" }},
		{7, func(r *receipt.Receipt, _ *adapters.Manifest, _ *string, _ *time.Time) {
			r.State = string(fsm.ConfiguredAwaitingProof)
		}},
		{8, func(_ *receipt.Receipt, _ *adapters.Manifest, _ *string, now *time.Time) {
			*now = now.Add(24 * time.Hour * 30)
		}},
		{8, func(_ *receipt.Receipt, _ *adapters.Manifest, _ *string, now *time.Time) {
			*now = time.Date(2026, 8, 13, 11, 59, 59, 0, time.UTC)
		}},
	}
	for i, c := range cases {
		r, mm, disk, at := testReceipt(), m, fp, now
		mm.Harnesses = map[string]adapters.Record{"claude-code": m.Harnesses["claude-code"]}
		c.mut(&r, &mm, &disk, &at)
		err := Verify(r, mm, "claude-code", disk, at)
		var re *receipt.Error
		if !errors.As(err, &re) || re.Rule != c.rule {
			t.Errorf("case %d: %v, want rule %d", i, err, c.rule)
		}
	}
	// 30 days minus a second still proves.
	if err := Verify(testReceipt(), m, "claude-code", fp, time.Date(2026, 9, 12, 11, 59, 59, 0, time.UTC)); err != nil {
		t.Errorf("29d23h59m59s old: %v", err)
	}
}

func TestRetain(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return receipt.FormatTime(now.Add(-d)) }
	var worker []receipt.Entry
	for i := 0; i < 100; i++ {
		worker = append(worker, receipt.Entry{HarnessID: "codex", Worker: "w", ReceiptID: "r" + string(rune('A'+i/26)) + string(rune('a'+i%26)), RecordedAt: at(time.Duration(100-i) * time.Minute)})
	}
	if Beyond(len(worker)) != 1 || Beyond(99) != 0 || Beyond(0) != 0 {
		t.Fatal("Beyond")
	}
	ps := Retain(now, nil, worker[:Beyond(len(worker))])
	if len(ps) != 1 || ps[0].ReceiptID != worker[0].ReceiptID || ps[0].Reason != PruneOverLimit {
		t.Fatalf("101st receipt: %+v", ps)
	}
	expired := []receipt.Entry{
		{HarnessID: "pi", Worker: "x", ReceiptID: "old2", RecordedAt: at(31 * 24 * time.Hour)},
		{HarnessID: "codex", Worker: "w", ReceiptID: "old1", RecordedAt: at(30 * 24 * time.Hour)},
		{HarnessID: "codex", Worker: "w", ReceiptID: "young", RecordedAt: at(30*24*time.Hour - time.Second)},
	}
	// The worker holds 102: old1 and young (oldest) and 100 more; three
	// must go, old1 by age, young and the next by count.
	ps = Retain(now, expired, append([]receipt.Entry{expired[1], expired[2]}, worker[:1]...))
	var got []string
	for _, p := range ps {
		got = append(got, p.ReceiptID+":"+p.Reason)
	}
	if strings.Join(got, ",") != "old2:expired,old1:expired,young:over_limit,"+worker[0].ReceiptID+":over_limit" {
		t.Errorf("expiry: %v (exactly 30 days is expired, a second younger is not)", got)
	}
	// Ties in recorded_at: the higher id is newer; the lowest ids make room.
	var tied []receipt.Entry
	for i := 0; i < 101; i++ {
		tied = append(tied, receipt.Entry{HarnessID: "codex", Worker: "w", ReceiptID: string(rune('A'+i/26)) + string(rune('a'+i%26)), RecordedAt: receipt.FormatTime(now)})
	}
	ps = Retain(now, nil, tied[:Beyond(len(tied))])
	if len(ps) != 2 || ps[0].ReceiptID != tied[0].ReceiptID || ps[1].ReceiptID != tied[1].ReceiptID {
		t.Errorf("ties: %+v", ps)
	}
}
