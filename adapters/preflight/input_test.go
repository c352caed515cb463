package preflight

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
)

func contract(t testing.TB, id string) adapters.StdinContract {
	t.Helper()
	a, ok := adapters.Lookup(id)
	if !ok {
		t.Fatalf("no adapter %s", id)
	}
	return a.Stdin
}

func payload(t *testing.T, harness, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "harness-payloads", harness, name))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.ReplaceAll(string(b), "__CWD__", "/proj"))
}

func TestParseHookRealClientPayloads(t *testing.T) {
	cases := []struct {
		harness, file string
		want          HookInput
	}{
		{"claude-code", "session-start.json", HookInput{Event: SessionStart, SessionID: "abc123", Cwd: "/proj"}},
		{"claude-code", "session-start-resume-agent.json", HookInput{Event: SessionStart, SessionID: "abc123", Cwd: "/proj"}},
		{"claude-code", "subagent-start.json", HookInput{Event: SubagentStart, SessionID: "abc123", Cwd: "/proj", AgentID: "agent-abc123", AgentType: "Explore"}},
		{"claude-code", "stop.json", HookInput{Event: Stop, SessionID: "abc123", Cwd: "/proj"}},
		{"claude-code", "stop-active.json", HookInput{Event: Stop, SessionID: "abc123", Cwd: "/proj", StopHookActive: true}},
		{"claude-code", "subagent-stop.json", HookInput{Event: SubagentStop, SessionID: "abc123", Cwd: "/proj", AgentID: "def456", AgentType: "Explore"}},
		{"codex", "session-start.json", HookInput{Event: SessionStart, SessionID: "019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b", Cwd: "/proj"}},
		{"codex", "subagent-start.json", HookInput{Event: SubagentStart, SessionID: "019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b", Cwd: "/proj", AgentID: "019a1b2c-aaaa-7000-8000-00000000child", AgentType: "explorer"}},
		{"codex", "stop.json", HookInput{Event: Stop, SessionID: "019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b", Cwd: "/proj"}},
		{"codex", "subagent-stop.json", HookInput{Event: SubagentStop, SessionID: "019a1b2c-3d4e-7f60-8a9b-0c1d2e3f4a5b", Cwd: "/proj", AgentID: "019a1b2c-aaaa-7000-8000-00000000child", AgentType: "explorer"}},
	}
	for _, c := range cases {
		got, err := ParseHook(contract(t, c.harness), payload(t, c.harness, c.file))
		if err != nil {
			t.Errorf("%s/%s: %v", c.harness, c.file, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s/%s: got %+v, want %+v", c.harness, c.file, got, c.want)
		}
	}
	if _, err := ParseHook(contract(t, "codex"), payload(t, "codex", "pre-compact-unhooked.json")); err == nil {
		t.Error("PreCompact accepted: only the four lifecycle events are hooked")
	}
}

func TestParseHookRefusals(t *testing.T) {
	c := contract(t, "codex")
	base := `"session_id":"s","cwd":"/p","hook_event_name":"SessionStart"`
	cases := map[string]string{
		"empty object":           `{}`,
		"array":                  `[` + "{" + base + "}" + `]`,
		"string":                 `"x"`,
		"trailing data":          `{` + base + `} {}`,
		"invalid json":           `{` + base,
		"missing cwd":            `{"session_id":"s","hook_event_name":"SessionStart"}`,
		"blank session":          `{"session_id":"  ","cwd":"/p","hook_event_name":"SessionStart"}`,
		"number session":         `{"session_id":7,"cwd":"/p","hook_event_name":"SessionStart"}`,
		"unknown event":          `{"session_id":"s","cwd":"/p","hook_event_name":"UserPromptSubmit","prompt":"x"}`,
		"subagent without id":    `{` + strings.Replace(base, "SessionStart", "SubagentStart", 1) + `,"agent_type":"x"}`,
		"stop without guard":     `{` + strings.Replace(base, "SessionStart", "Stop", 1) + `}`,
		"stop guard string":      `{` + strings.Replace(base, "SessionStart", "Stop", 1) + `,"stop_hook_active":"false"}`,
		"repeated cwd":           `{` + base + `,"cwd":"/elsewhere"}`,
		"repeated benign key":    `{` + base + `,"model":"a","model":"b"}`,
		"repeated nested key":    `{` + base + `,"x":{"a":1,"\u0061":2}}`,
		"deep nesting":           `{` + base + `,"x":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`,
		"forbidden via escape":   `{` + base + `,"\u0063apability":"x"}`,
		"forbidden upper/hyphen": `{` + base + `,"Memory-Root":"x"}`,
	}
	for name, in := range cases {
		if _, err := ParseHook(c, []byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	big := `{` + base + `,"pad":"` + strings.Repeat("a", adapters.MaxStdinBytes) + `"}`
	if _, err := ParseHook(c, []byte(big)); err == nil || !strings.Contains(err.Error(), "exceeds 1 MiB") {
		t.Errorf("over 1 MiB: %v", err)
	}
}

// Every key on the published hook list is refused (and named), whatever
// its value; benign host metadata next to it is not.
func TestParseHookForbiddenKeys(t *testing.T) {
	c := contract(t, "claude-code")
	for _, k := range []string{"authorization", "bridge_fingerprint", "capabilities", "capability", "coordinator_capability", "harness_id",
		"memory_root", "project_root", "project_root_fingerprint", "receipt", "receipt_id", "root", "state", "store_id", "task_hint",
		"token", "tree_ring_coordinator_token"} {
		// As written, upper-cased (TREE_RING_COORDINATOR_TOKEN is the
		// protocol's spelling) and with its first letter escaped.
		for _, written := range []string{k, strings.ToUpper(k), fmt.Sprintf("%su%04x%s", "\\", k[0], k[1:])} {
			in := `{"session_id":"s","cwd":"/p","hook_event_name":"SessionStart","transcript_path":"/t","` + written + `":null}`
			_, err := ParseHook(c, []byte(in))
			var fe *ForbiddenError
			if !errors.As(err, &fe) || len(fe.Keys) != 1 || fe.Keys[0] != k || !strings.Contains(err.Error(), "lifecycle hook stdin contains forbidden fields") {
				t.Errorf("%s: %v", written, err)
			}
		}
	}
	// Hook hosts nest benign metadata: only top-level keys are checked.
	in := `{"session_id":"s","cwd":"/p","hook_event_name":"Stop","stop_hook_active":false,"background_tasks":[{"capability":"x","token":"y","state":"running","receipt":{"root":"/r"}}]}`
	if _, err := ParseHook(c, []byte(in)); err != nil {
		t.Errorf("nested benign metadata refused: %v", err)
	}
}

// Errors never echo a value, and only echo a key when it is a plain
// identifier.
func TestParseErrorsCarryNoValues(t *testing.T) {
	const canary = "CANARY-7d1f-value"
	ins := []string{
		`{"session_id":"` + canary + `","cwd":"/p","hook_event_name":"` + canary + `"}`,
		`{"session_id":"s","cwd":"/p","hook_event_name":"SessionStart","` + canary + `/x":1,"` + canary + `/x":2}`,
		`{"session_id":1,"cwd":"` + canary + `","hook_event_name":"SessionStart"}`,
	}
	checked := 0 // error messages searched for the canary
	for _, in := range ins {
		_, err := ParseHook(contract(t, "codex"), []byte(in))
		checked++
		if err == nil || strings.Contains(err.Error(), canary) {
			t.Errorf("%s: %v", in, err)
		}
	}
	for _, key := range []string{canary + "/k", canary, "Session-" + canary} {
		_, err := ParseAdapter("pi", []byte(`{"agent_profile":"pi","workflow_id":"w","session_id":"s","`+key+`":"`+canary+`","`+key+`":1}`))
		checked++
		if err == nil || strings.Contains(err.Error(), canary) {
			t.Errorf("pi repeated key: %v", err)
		}
	}
	// A forbidden key is named in its normalized form, never its value.
	_, err := ParseAdapter("agent-zero", []byte(`{"agent_profile":"a","workflow_id":"w","session_id":"s","chat":{"Task-Hint":"`+canary+`"},"task_hint":"`+canary+`"}`))
	checked++
	if err == nil || !strings.Contains(err.Error(), `forbidden field: "task_hint"`) || strings.Contains(err.Error(), canary) {
		t.Errorf("agent zero task hint: %v", err)
	}
	if !t.Failed() {
		t.Logf("canary: parse errors: %d error messages searched, 0 hits", checked)
	}
}

func TestCheckContract(t *testing.T) {
	ok := map[[3]string]bool{
		{"codex", "direct", FormatJSON}:                    true,
		{"claude-code", "stdin", FormatClaudeSessionStart}: true,
		{"pi", "stdin", FormatPi}:                          true,
		{"agent-zero", "stdin", FormatJSON}:                true,
		{"opencode", "stdin", FormatJSON}:                  true,
	}
	for _, h := range adapters.IDs() {
		for _, mode := range []string{"direct", "stdin"} {
			for _, f := range Formats {
				err := CheckContract(h, mode == "stdin", f)
				if want := ok[[3]string{h, mode, f}]; (err == nil) != want {
					t.Errorf("%s %s %s: %v, want ok=%v", h, mode, f, err, want)
				}
			}
		}
	}
}

func TestParseAdapter(t *testing.T) {
	r, err := ParseAdapter("pi", []byte(`{"agent_profile":"pi","workflow_id":"/home/u/.pi/sessions/a b.jsonl","session_id":"/home/u/.pi/sessions/a b.jsonl","task_hint":"project startup constraints"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Identity.AgentProfile != "pi" || !strings.HasPrefix(r.Identity.WorkflowID, "workflow-") || !strings.HasPrefix(r.Identity.SessionID, "session-") || r.TaskHint != "project startup constraints" {
		t.Errorf("pi: %+v (an absolute session path must be normalized away)", r)
	}
	if r, err := ParseAdapter("pi", []byte(`{"agent_profile":"pi","workflow_id":"w","session_id":"s","task_hint":null}`)); err != nil || r.TaskHint != "" {
		t.Errorf("null hint: %+v %v", r, err)
	}
	r, err = ParseAdapter("claude-code", []byte(`{"session_id":"abc","cwd":"/p","hook_event_name":"SessionStart","transcript_path":"/t","agent_type":"claude-code"}`))
	if err != nil || r.Identity != (Identity{AgentProfile: "claude-code", WorkflowID: "abc", SessionID: "abc"}) || r.Cwd != "/p" {
		t.Errorf("claude: %+v %v", r, err)
	}
	if r, err := ParseAdapter("agent-zero", []byte(`{"agent_profile":"agent-zero-worker","workflow_id":"w","session_id":"s"}`)); err != nil || r.Identity.AgentProfile != "agent-zero-worker" {
		t.Errorf("agent zero: %+v %v", r, err)
	}
	refused := map[string][2]string{
		"pi missing session":     {"pi", `{"agent_profile":"pi","workflow_id":"w"}`},
		"pi hint number":         {"pi", `{"agent_profile":"pi","workflow_id":"w","session_id":"s","task_hint":3}`},
		"pi nested forbidden":    {"pi", `{"agent_profile":"pi","workflow_id":"w","session_id":"s","task_hint":{"Receipt-ID":"x"}}`},
		"pi state":               {"pi", `{"agent_profile":"pi","workflow_id":"w","session_id":"s","state":"active"}`},
		"agent zero task hint":   {"agent-zero", `{"agent_profile":"a","workflow_id":"w","session_id":"s","task_hint":"x"}`},
		"agent zero token":       {"agent-zero", `{"agent_profile":"a","workflow_id":"w","session_id":"s","TOKEN":"x"}`},
		"claude other agent":     {"claude-code", `{"session_id":"abc","cwd":"/p","agent_type":"reviewer"}`},
		"claude no cwd":          {"claude-code", `{"session_id":"abc"}`},
		"claude nested store id": {"claude-code", `{"session_id":"abc","cwd":"/p","meta":[{"store_id":"x"}]}`},
		"codex has no stdin":     {"codex", `{"agent_profile":"a","workflow_id":"w","session_id":"s"}`},
	}
	for name, c := range refused {
		if _, err := ParseAdapter(c[0], []byte(c[1])); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	var fe *ForbiddenError
	if _, err := ParseAdapter("pi", []byte(`{"agent_profile":"pi","workflow_id":"w","session_id":"s","task_hint":{"Receipt-ID":"x"}}`)); !errors.As(err, &fe) || fe.Keys[0] != "receipt_id" {
		t.Errorf("nested forbidden not named in normalized form: %v", err)
	}
	if _, err := DirectRequest("a", "", "s"); !errors.Is(err, ErrDirectFlags) {
		t.Errorf("direct without workflow: %v", err)
	}
}

// Benign host metadata outside the request's fields (Pi's model, Agent
// Zero's chat title, anything nested under them) is ignored, as a hook
// ignores it, and its value reaches no field of the Request; the forbidden
// and claim keys stay refused, also nested under an ignored key.
func TestParseAdapterIgnoresBenignMetadata(t *testing.T) {
	const canary = "CANARY-3b9e-metadata"
	ignored := map[string][2]string{
		"pi model":            {"pi", `{"agent_profile":"pi","workflow_id":"w","session_id":"s","task_hint":"startup","model":"gpt-x","note":"` + canary + `"}`},
		"pi prompt":           {"pi", `{"agent_profile":"pi","workflow_id":"w","session_id":"s","prompt":"` + canary + `"}`},
		"agent zero title":    {"agent-zero", `{"agent_profile":"agent-zero-worker","workflow_id":"w","session_id":"s","chat_title":"` + canary + `"}`},
		"agent zero nest":     {"agent-zero", `{"agent_profile":"agent-zero-worker","workflow_id":"w","session_id":"s","ctx":{"model":"` + canary + `","turns":[1,{"x":null}]}}`},
		"opencode model":      {"opencode", `{"agent_profile":"opencode:build","workflow_id":"w","session_id":"s","model":"` + canary + `"}`},
		"pi invalid metadata": {"pi", `{"agent_profile":"pi","workflow_id":"w","session_id":"s","model":{"a":[true,false,null,1e3]}}`},
	}
	for name, c := range ignored {
		r, err := ParseAdapter(c[0], []byte(c[1]))
		if err != nil {
			t.Errorf("%s: refused: %v", name, err)
			continue
		}
		if got := fmt.Sprintf("%+v", r); strings.Contains(got, canary) || strings.Contains(got, "gpt-x") {
			t.Errorf("%s: an ignored value reached the request: %s", name, got)
		}
		if r.Identity.WorkflowID != "w" || r.Identity.SessionID != "s" {
			t.Errorf("%s: identity %+v", name, r.Identity)
		}
	}
	refused := map[string][2]string{
		"pi claims a store":           {"pi", `{"agent_profile":"pi","workflow_id":"w","session_id":"s","model":"gpt-x","store_id":"x"}`},
		"agent zero nested token":     {"agent-zero", `{"agent_profile":"a","workflow_id":"w","session_id":"s","chat_title":"t","meta":{"Authorization":"x"}}`},
		"agent zero harness identity": {"agent-zero", `{"agent_profile":"a","workflow_id":"w","session_id":"s","chat_title":"t","harness_id":"pi"}`},
		"pi nested capability":        {"pi", `{"agent_profile":"pi","workflow_id":"w","session_id":"s","model":{"coordinator-capability":"x"}}`},
		"opencode task hint":          {"opencode", `{"agent_profile":"o","workflow_id":"w","session_id":"s","task_hint":"x"}`},
	}
	for name, c := range refused {
		var fe *ForbiddenError
		if _, err := ParseAdapter(c[0], []byte(c[1])); !errors.As(err, &fe) {
			t.Errorf("%s: %v, want a forbidden-field refusal", name, err)
		}
	}
}

// A parse never reads a value it does not need: the benign fields of a
// real payload can be anything, including invalid UTF-8 and huge nests.
func TestParseHookSkipsBenignValues(t *testing.T) {
	var m map[string]any
	if err := json.Unmarshal(payload(t, "claude-code", "stop.json"), &m); err != nil {
		t.Fatal(err)
	}
	m["last_assistant_message"] = strings.Repeat("x", 500_000)
	m["unknown_host_field"] = map[string]any{"a": []any{1, 2, map[string]any{"b": nil}}}
	b, _ := json.Marshal(m)
	if _, err := ParseHook(contract(t, "claude-code"), b); err != nil {
		t.Fatal(err)
	}
}

// Stdin that is not UTF-8 text is refused, so two byte strings a decoder
// would both turn into U+FFFD never name the same worker; valid non-ASCII
// text and escaped surrogate pairs are accepted.
func TestParseHookUTF8(t *testing.T) {
	c := contract(t, "codex")
	doc := func(session string) []byte {
		return []byte(`{"session_id":"` + session + `","cwd":"/p","hook_event_name":"SessionStart","model":"m"}`)
	}
	for name, session := range map[string]string{
		"invalid byte ff":      "s\xff",
		"invalid byte fe":      "s\xfe",
		"truncated sequence":   "s\xe2\x82",
		"lone high surrogate":  `s\ud800`,
		"lone low surrogate":   `s\udc00`,
		"high then non-low":    `s\ud800\u0041`,
		"high at the very end": `s\udbff`,
	} {
		_, err := ParseHook(c, doc(session))
		if err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := ParseAdapter("pi", []byte(`{"agent_profile":"a","workflow_id":"w","session_id":"`+session+`"}`)); err == nil {
			t.Errorf("%s: adapter stdin accepted", name)
		}
	}
	for _, session := range []string{"sé", `s\u00e9`, `s\ud83d\ude00`, `s\\ud800`, `s\"\u0041`} {
		if _, err := ParseHook(c, doc(session)); err != nil {
			t.Errorf("%q refused: %v", session, err)
		}
	}
}
