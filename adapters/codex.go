package adapters

import (
	"bytes"
	"encoding/json"

	"github.com/tree-ring/tree-ring/fsm"
)

// Codex CLI: lifecycle hooks in .codex/hooks.json, the shared skill and a
// marked block in the root AGENTS.md that points at the local guidance.
const (
	codexHooks    = ".codex/hooks.json"
	rootAgents    = "AGENTS.md"
	codexBlockID  = "codex"
	codexHookDesc = "Tree Ring Memory managed lifecycle v4"
)

func init() {
	register(&Adapter{
		ID: "codex", Name: "Codex", Version: "4", Capability: NativePreflight, Support: Maintained,
		TrustGate: &TrustGate{Inspect: codexTrust}, TrustStep: func(TrustDecision) string { return codexTrustStep }, DirectPreflight: true,
		Executable:     "codex",
		ProjectMarkers: []string{".codex", "AGENTS.md"},
		HomeMarkers:    []string{".codex"},
		RestingState:   fsm.ConfiguredAwaitingProof,
		BridgePath:     codexHooks,
		// AGENTS.md as a complete owned file is accepted from legacy
		// manifests; Tree Ring itself only ever records the block.
		OwnedFiles:    []string{SharedSkill, codexHooks, rootAgents},
		ManagedBlocks: []BlockTarget{{Path: rootAgents, BlockID: codexBlockID, Format: MarkdownBlock}},
		Stdin:         lifecycleContract(),
		material:      codexMaterial,
	})
}

const codexTrustStep = "Trust the project (`codex exec --trust` once, or the trust prompt of an interactive `codex` session) " +
	"and Tree Ring's hooks (`/hooks` in an interactive `codex` session; `codex exec` has no review screen); " +
	"`tree-ring integrations status` prints the exact `config.toml` lines."

func codexMaterial(Context) Material {
	block := MarkdownBlockText(codexBlockID, codexBlockBody)
	return Material{
		BridgePath: codexHooks,
		Files: []File{
			{Path: SharedSkill, Data: []byte(SkillBridge), Mode: 0o644},
			{Path: codexHooks, Data: CodexHooksJSON(), Mode: 0o644},
		},
		Blocks: []Block{{
			Path: rootAgents, ID: codexBlockID, Format: MarkdownBlock,
			Digest: []byte(block), Whole: []byte(block), Snippet: block,
		}},
	}
}

const codexBlockBody = "## Tree Ring Memory\n\n" +
	"Read `.tree-ring/AGENTS.md`, `.tree-ring/SKILL.md` and `.tree-ring/CLI.md` before substantive work. " +
	"The Codex lifecycle hooks in `.codex/hooks.json` run receipt-backed recall when a session or subagent starts and one capture checkpoint when it stops. " +
	"Do not claim memory is active without a valid project-local recall receipt. " +
	"Capture zero to three concise durable candidates; never store a transcript or invent memory.\n"

type codexHandler struct {
	Type                   string `json:"type"`
	Command                string `json:"command"`
	Timeout                int    `json:"timeout"`
	StatusMessage          string `json:"statusMessage"`
	AdditionalContextLimit int    `json:"additionalContextLimit,omitempty"`
}

type codexGroup struct {
	Matcher string         `json:"matcher,omitempty"`
	Hooks   []codexHandler `json:"hooks"`
}

// CodexHooksJSON is the exact .codex/hooks.json Tree Ring publishes: the
// four lifecycle events, no prompt, tool or SessionEnd hooks, synchronous
// and bounded to ten seconds; pretty JSON with a trailing newline.
func CodexHooksJSON() []byte {
	cmd := HookCommand("codex")
	start := codexHandler{Type: "command", Command: cmd, Timeout: 10, StatusMessage: "Loading Tree Ring memory", AdditionalContextLimit: 6000}
	doc := struct {
		Description string `json:"description"`
		Hooks       struct {
			SessionStart  []codexGroup `json:"SessionStart"`
			SubagentStart []codexGroup `json:"SubagentStart"`
			Stop          []codexGroup `json:"Stop"`
			SubagentStop  []codexGroup `json:"SubagentStop"`
		} `json:"hooks"`
	}{Description: codexHookDesc}
	doc.Hooks.SessionStart = []codexGroup{{Matcher: "startup|resume|clear|compact", Hooks: []codexHandler{start}}}
	doc.Hooks.SubagentStart = []codexGroup{{Hooks: []codexHandler{start}}}
	doc.Hooks.Stop = []codexGroup{{Hooks: []codexHandler{{Type: "command", Command: cmd, Timeout: 10, StatusMessage: "Checking durable Tree Ring memory"}}}}
	doc.Hooks.SubagentStop = []codexGroup{{Hooks: []codexHandler{{Type: "command", Command: cmd, Timeout: 10, StatusMessage: "Checking durable Tree Ring worker memory"}}}}
	return prettyJSON(doc)
}

// prettyJSON encodes v with two-space indentation, no HTML escaping and a
// trailing newline. It panics on values that cannot be encoded (only
// constant shapes are passed).
func prettyJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// compactJSON is prettyJSON without indentation or trailing newline.
func compactJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
