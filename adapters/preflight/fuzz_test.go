package preflight

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events/receipt"
)

// seedFiles adds every real-client payload and adapter stdin fixture.
func seedFiles(f *testing.F, globs ...string) {
	for _, g := range globs {
		files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", g))
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(bytes.ReplaceAll(b, []byte("__CWD__"), []byte("/proj")))
		}
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"session_id":"s","cwd":"/p","hook_event_name":"SessionStart","\u0063apability":1}`))
	f.Add([]byte(`{"agent_profile":"pi","workflow_id":"w","session_id":"s","task_hint":{"a":[{"Store-ID":1}]}}`))
	f.Add([]byte(`{"agent_profile":"pi","workflow_id":"w","session_id":"s","model":"gpt-x","chat_title":{"t":[1,{"Task-Hint":2}]}}`))
}

// looseDecode is the reference decoder of the differential targets:
// encoding/json (last duplicate wins), except that numbers stay
// json.Number. The hook contracts ignore benign values, so a number beyond
// float64 (1e700) is valid JSON the parsers accept and the reference must
// too.
func looseDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the document")
	}
	return nil
}

// topKeys decodes a document with looseDecode and returns its object, if it
// is one.
func topKeys(data []byte) (map[string]any, bool) {
	var m map[string]any
	if looseDecode(data, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// anyKey reports whether v holds, at any depth, a key for which match is true.
func anyKey(v any, match func(string) bool) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if match(k) || anyKey(e, match) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if anyKey(e, match) {
				return true
			}
		}
	}
	return false
}

func fuzzHook(f *testing.F, harness string) {
	seedFiles(f, "harness-payloads/"+harness+"/*.json", "adapters/"+harness+"/stdin/*.json")
	c := contract(f, harness)
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := ParseHook(c, data)
		m, isObj := topKeys(data)
		if isObj {
			for k := range m {
				if c.IsForbidden(k) && err == nil {
					t.Fatalf("forbidden key %q accepted", k)
				}
			}
		}
		if err != nil {
			return
		}
		if !isObj || len(data) > adapters.MaxStdinBytes {
			t.Fatalf("accepted a non-object or oversize input")
		}
		if !slices.Contains(c.Events, in.Event) || m["hook_event_name"] != in.Event ||
			strings.TrimSpace(in.SessionID) == "" || m["session_id"] != in.SessionID || m["cwd"] != in.Cwd {
			t.Fatalf("accepted %+v from %v", in, m)
		}
		if in.Subagent() && (m["agent_id"] != in.AgentID || m["agent_type"] != in.AgentType || strings.TrimSpace(in.AgentID) == "") {
			t.Fatalf("subagent identity %+v from %v", in, m)
		}
		if (in.Event == Stop || in.Event == SubagentStop) && m["stop_hook_active"] != in.StopHookActive {
			t.Fatalf("stop guard %+v from %v", in, m)
		}
		id := HookIdentity(harness, in)
		if !receipt.SafeIdent(id.WorkflowID) || !receipt.SafeIdent(id.SessionID) || !receipt.SafeIdent(id.AgentProfile) && !receipt.SubagentProfile(id.AgentProfile) {
			t.Fatalf("identity not normalized: %+v", id)
		}
	})
}

// FuzzHookCodex fuzzes the Codex lifecycle hook stdin contract.
func FuzzHookCodex(f *testing.F) { fuzzHook(f, "codex") }

// FuzzHookClaude fuzzes the Claude Code lifecycle hook stdin contract.
func FuzzHookClaude(f *testing.F) { fuzzHook(f, "claude-code") }

// FuzzHookGemini: the Gemini CLI lifecycle contract (SessionStart, AfterAgent).
func FuzzHookGemini(f *testing.F) { fuzzHook(f, "gemini-cli") }

func fuzzAdapter(f *testing.F, harness string, globs ...string) {
	seedFiles(f, globs...)
	forbidden := adapters.AdapterStdinForbidden()
	c := contract(f, harness)
	isForbidden := func(k string) bool {
		return slices.Contains(forbidden, normKey(k)) || c.Mode == adapters.AdapterStdin && c.IsForbidden(k)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseAdapter(harness, data)
		var v any
		decoded := looseDecode(data, &v) == nil
		if decoded && anyKey(v, isForbidden) && err == nil {
			t.Fatal("a forbidden key at some depth was accepted")
		}
		if err != nil {
			return
		}
		m, ok := topKeys(data)
		if !ok {
			t.Fatal("accepted a non-object")
		}
		if harness != "claude-code" {
			// Benign keys are ignored: the identity comes from the
			// contract's fields alone, whatever else the document holds.
			for _, k := range c.Required {
				if v, ok := m[k].(string); !ok || strings.TrimSpace(v) == "" {
					t.Fatalf("accepted without a non-blank %s", k)
				}
			}
			want := Identity{AgentProfile: Normalized("agent-profile", m["agent_profile"].(string)), WorkflowID: Normalized("workflow", m["workflow_id"].(string)), SessionID: Normalized("session", m["session_id"].(string))}
			if r.Identity != want {
				t.Fatalf("identity %+v, want %+v", r.Identity, want)
			}
			if h, _ := m["task_hint"].(string); h != r.TaskHint || r.TaskHint != "" && !slices.Contains(c.Optional, "task_hint") {
				t.Fatalf("task hint %q from %v", r.TaskHint, m["task_hint"])
			}
		} else if r.Identity.AgentProfile != "claude-code" || m["cwd"] != r.Cwd {
			t.Fatalf("claude identity %+v", r)
		}
		id := r.Identity
		if !receipt.SafeIdent(id.AgentProfile) || !receipt.SafeIdent(id.WorkflowID) || !receipt.SafeIdent(id.SessionID) {
			t.Fatalf("identity not normalized: %+v", id)
		}
	})
}

// FuzzAdapterClaude fuzzes claude-session-start preflight stdin.
func FuzzAdapterClaude(f *testing.F) {
	fuzzAdapter(f, "claude-code", "harness-payloads/claude-code/*.json", "adapters/claude-code/stdin/*.json")
}

// FuzzAdapterPi fuzzes Pi's before_agent_start preflight stdin.
func FuzzAdapterPi(f *testing.F) { fuzzAdapter(f, "pi", "adapters/pi/stdin/*.json") }

// FuzzAdapterAgentZero fuzzes the Agent Zero plugin's preflight stdin.
func FuzzAdapterAgentZero(f *testing.F) {
	fuzzAdapter(f, "agent-zero", "adapters/agent-zero/stdin/*.json")
}

// FuzzAdapterOpenCode fuzzes the OpenCode plugin's preflight stdin.
func FuzzAdapterOpenCode(f *testing.F) {
	fuzzAdapter(f, "opencode", "adapters/opencode/stdin/*.json")
}

// FuzzDescriptor fuzzes the plugin descriptor's content and its sibling
// plugin.yaml in memory, through the same two functions LoadDescriptor
// applies to the files (the path and file rules are table-tested), so it
// runs thousands of inputs a second instead of writing files per input.
func FuzzDescriptor(f *testing.F) {
	f.Add([]byte(goodDescriptor), []byte(goodPluginYAML))
	f.Add([]byte(`{}`), []byte("name: x\n"))
	f.Add([]byte(strings.Replace(goodDescriptor, `"enabled"`, `"\u0065nabled"`, 1)), []byte(goodPluginYAML+"name: tree_ring_memory\n"))
	f.Fuzz(func(t *testing.T, desc, yaml []byte) {
		if len(desc) > MaxDescriptorBytes || len(yaml) > MaxDescriptorBytes {
			return // readRegular refuses larger files
		}
		d, err := decodeDescriptor(desc)
		if err != nil {
			return
		}
		if CheckSeries(d, adapters.Contract()) != nil {
			t.Fatalf("incompatible release accepted: %+v", d)
		}
		var m map[string]any
		if json.Unmarshal(desc, &m) != nil || m["enabled"] != true || m["plugin_id"] != "tree_ring_memory" || len(m) != 7 {
			t.Fatalf("descriptor accepted: %s", desc)
		}
		if checkPluginYAML(yaml, d) != nil {
			return
		}
		if !bytes.Contains(yaml, []byte("name:")) || !bytes.Contains(yaml, []byte(d.PluginVersion)) {
			t.Fatalf("plugin.yaml accepted: %q", yaml)
		}
	})
}
