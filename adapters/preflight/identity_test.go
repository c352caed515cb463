package preflight

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events/receipt"
)

// receiptWith is the test receipt of harness carrying identity id.
func receiptWith(harness string, id Identity) receipt.Receipt {
	r := testReceipt()
	r.HarnessID, r.Session = harness, id
	r.WorkerKeyFingerprint = WorkerKeyFingerprint(harness, id.AgentProfile)
	return r
}

// TestSubagentProfileLongTypeWithColon: an agent type of 100 bytes or more
// holding ':' gives a subagent profile past the 128 bytes of a plain
// identifier, with more than three ':'-separated parts; the receipt of
// such a worker decodes (issue 18: it was refused, so the hook delivered
// context while status stayed configured-awaiting-proof).
func TestSubagentProfileLongTypeWithColon(t *testing.T) {
	for _, c := range []struct {
		harness string
		typ     string
	}{
		{"claude-code", strings.Repeat("p", 60) + ":" + strings.Repeat("a", 39)}, // 100 bytes
		{"codex", strings.Repeat("p", 60) + ":" + strings.Repeat("a", 45)},       // 106 bytes
		{"claude-code", "plugin:" + strings.Repeat("a", 121)},                    // 128 bytes, kept as is
		{"claude-code", "a:b:c:" + strings.Repeat("d", 100)},
	} {
		id := HookIdentity(c.harness, HookInput{Event: SubagentStart, SessionID: "s1", AgentID: "agent-1", AgentType: c.typ})
		if !strings.Contains(id.AgentProfile, c.typ) || len(id.AgentProfile) <= receipt.MaxIdentBytes {
			t.Fatalf("%s: profile %q does not keep the type", c.harness, id.AgentProfile)
		}
		r := receiptWith(c.harness, id)
		back, err := receipt.Decode(r.Encode())
		if err != nil || back != r {
			t.Fatalf("%s %q: receipt does not decode: %v", c.harness, c.typ, err)
		}
	}
}

// FuzzIdentityReceipt is the property of every identity path: whatever
// identity normalization derives (lifecycle hooks of codex and Claude
// Code, main and subagent; adapter requests of Claude Code, Pi and Agent
// Zero; direct mode), the receipt recording it decodes back to the same
// receipt.
func FuzzIdentityReceipt(f *testing.F) {
	f.Add("s1", "agent-1", "general purpose", "pi", "wf")
	f.Add("019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b", "a", strings.Repeat("p", 60)+":"+strings.Repeat("a", 45), "agent:zero", "w:1")
	f.Add("..", "", "a:b:c", strings.Repeat("x", 129), "/home/u")
	f.Fuzz(func(t *testing.T, session, agentID, agentType, profile, workflow string) {
		type derived struct {
			harness string
			id      Identity
		}
		var ids []derived
		for _, h := range []string{"codex", "claude-code"} {
			for _, ev := range []string{SessionStart, SubagentStart} {
				ids = append(ids, derived{h, HookIdentity(h, HookInput{Event: ev, SessionID: session, AgentID: agentID, AgentType: agentType})})
			}
		}
		stdin := func(m map[string]string) []byte { b, _ := json.Marshal(m); return b }
		for _, h := range []string{"pi", "agent-zero"} {
			if req, err := ParseAdapter(h, stdin(map[string]string{"agent_profile": profile, "workflow_id": workflow, "session_id": session})); err == nil {
				ids = append(ids, derived{h, req.Identity})
			}
		}
		if req, err := ParseAdapter("claude-code", stdin(map[string]string{"session_id": session, "cwd": "/p"})); err == nil {
			ids = append(ids, derived{"claude-code", req.Identity})
		}
		if req, err := DirectRequest(profile, workflow, session); err == nil {
			ids = append(ids, derived{"codex", req.Identity})
		}
		for _, d := range ids {
			r := receiptWith(d.harness, d.id)
			back, err := receipt.Decode(r.Encode())
			if err != nil || back != r {
				t.Fatalf("%s identity %+v: receipt does not decode: %v", d.harness, d.id, err)
			}
		}
	})
}
