package adapters

import (
	"bytes"
	"encoding/json"

	"github.com/tree-ring/tree-ring/fsm"
)

// Codex CLI: lifecycle hooks in .codex/hooks.json, the shared skill and a
// marked block in the root AGENTS.md that points at the local guidance.
const (
	codexHooks       = ".codex/hooks.json"
	rootAgents       = "AGENTS.md"
	codexBlockID     = "codex"
	codexHooksID     = "codex-hooks"
	codexHookDesc    = "Tree Ring Memory managed lifecycle v4"
	codexHookTimeout = 10
)

func init() {
	register(&Adapter{
		ID: "codex", Name: "Codex", Version: "4", Capability: NativePreflight, Support: Maintained,
		TrustGate: &TrustGate{Inspect: codexTrust}, TrustStep: func(TrustDecision) string { return codexTrustStep }, DirectPreflight: true,
		HooksSwitch:    codexHooksOff,
		Executable:     "codex",
		ProjectMarkers: []string{".codex", "AGENTS.md"},
		HomeMarkers:    []string{".codex"},
		RestingState:   fsm.ConfiguredAwaitingProof,
		BridgePath:     codexHooks,
		// AGENTS.md as a complete owned file is accepted from legacy
		// manifests; Tree Ring itself only ever records the block.
		OwnedFiles: []string{SharedSkill, codexHooks, rootAgents},
		// The hooks block: Tree Ring's four groups merged by hand into a
		// .codex/hooks.json the user already had (File.Merged).
		ManagedBlocks: []BlockTarget{
			{Path: rootAgents, BlockID: codexBlockID, Format: MarkdownBlock},
			{Path: codexHooks, BlockID: codexHooksID, Format: CodexHooks},
		},
		Stdin:    lifecycleContract(),
		material: codexMaterial,
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
			{Path: codexHooks, Data: CodexHooksJSON(), Mode: 0o644, Merged: &Block{
				Path: codexHooks, ID: codexHooksID, Format: CodexHooks,
				Digest: codexHookSettings.digestInput(), Snippet: string(CodexHooksSnippet()),
			}},
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

// codexEvents are the events of Tree Ring's Codex hooks, in order.
var codexEvents = []string{"SessionStart", "SubagentStart", "Stop", "SubagentStop"}

// codexGroupFor is Tree Ring's one matcher group for codexEvents[i]: the
// start events load the brief (SessionStart for every source), the stop
// events issue the capture checkpoint; synchronous, bounded to ten seconds.
func codexGroupFor(i int) codexGroup {
	h := codexHandler{Type: "command", Command: HookCommand("codex"), Timeout: codexHookTimeout}
	switch codexEvents[i] {
	case "SessionStart":
		h.StatusMessage, h.AdditionalContextLimit = "Loading Tree Ring memory", 6000
		return codexGroup{Matcher: "startup|resume|clear|compact", Hooks: []codexHandler{h}}
	case "SubagentStart":
		h.StatusMessage, h.AdditionalContextLimit = "Loading Tree Ring memory", 6000
	case "Stop":
		h.StatusMessage = "Checking durable Tree Ring memory"
	default:
		h.StatusMessage = "Checking durable Tree Ring worker memory"
	}
	return codexGroup{Hooks: []codexHandler{h}}
}

var codexHookSettings = hookSettings{
	path: codexHooks, harness: "codex", events: codexEvents,
	entry: func(i int) any { return codexGroupFor(i) },
}

type codexHooksDoc struct {
	SessionStart  []codexGroup `json:"SessionStart"`
	SubagentStart []codexGroup `json:"SubagentStart"`
	Stop          []codexGroup `json:"Stop"`
	SubagentStop  []codexGroup `json:"SubagentStop"`
}

func codexHooksOf() codexHooksDoc {
	return codexHooksDoc{
		SessionStart:  []codexGroup{codexGroupFor(0)},
		SubagentStart: []codexGroup{codexGroupFor(1)},
		Stop:          []codexGroup{codexGroupFor(2)},
		SubagentStop:  []codexGroup{codexGroupFor(3)},
	}
}

// CodexHooksJSON is the exact .codex/hooks.json Tree Ring publishes: the
// four lifecycle events, no prompt, tool or SessionEnd hooks, synchronous
// and bounded to ten seconds; pretty JSON with a trailing newline.
func CodexHooksJSON() []byte {
	return prettyJSON(struct {
		Description string        `json:"description"`
		Hooks       codexHooksDoc `json:"hooks"`
	}{codexHookDesc, codexHooksOf()})
}

// CodexHooksSnippet is what a user merges by hand into a .codex/hooks.json
// of their own (appending each group to hooks.<Event>): Tree Ring's four
// groups, exactly as CodexHooksJSON has them, without the description that
// would replace the user's.
func CodexHooksSnippet() []byte {
	return prettyJSON(struct {
		Hooks codexHooksDoc `json:"hooks"`
	}{codexHooksOf()})
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
