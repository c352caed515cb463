package adapters

import "github.com/tree-ring/tree-ring/fsm"

// Claude Code: the skill under .claude/skills and four handler entries in
// .claude/settings.json, managed as one block so the user's own settings can
// live beside them.
const (
	claudeSettings = ".claude/settings.json"
	claudeSkill    = ".claude/skills/tree-ring-memory/SKILL.md"
	claudeBlockID  = "claude-code"
)

// claudeEvents are the hook events Tree Ring registers, in order, with the
// description that identifies each handler as Tree Ring's.
var claudeEvents = []struct{ Event, Description string }{
	{"SessionStart", "Tree Ring Memory managed lifecycle v4"},
	{"SubagentStart", "Tree Ring Memory managed subagent lifecycle v4"},
	{"Stop", "Tree Ring Memory managed capture checkpoint v4"},
	{"SubagentStop", "Tree Ring Memory managed subagent capture checkpoint v4"},
}

func init() {
	contract := lifecycleContract()
	contract.ContextFormats = []string{"claude-session-start"}
	register(&Adapter{
		ID: "claude-code", Name: "Claude Code", Version: "4", Capability: NativePreflight, Support: Maintained,
		TrustGate:      &TrustGate{},
		HooksSwitch:    claudeHooksOff,
		Executable:     "claude",
		ProjectMarkers: []string{".claude", "CLAUDE.md"},
		HomeMarkers:    []string{".claude"},
		RestingState:   fsm.ConfiguredAwaitingProof,
		BridgePath:     claudeSettings,
		// settings.json as a complete owned file is accepted from manifests
		// that recorded a file Tree Ring created; we record the block.
		OwnedFiles:    []string{claudeSkill, claudeSettings},
		ManagedBlocks: []BlockTarget{{Path: claudeSettings, BlockID: claudeBlockID, Format: ClaudeSettings}},
		Stdin:         contract,
		material:      claudeMaterial,
	})
}

// claudeHandler is one handler entry; field order is the wire order.
type claudeHandler struct {
	Type        string `json:"type"`
	Command     string `json:"command"`
	Description string `json:"description"`
	Timeout     int    `json:"timeout"`
}

type claudeEntry struct {
	Matcher string          `json:"matcher"`
	Hooks   []claudeHandler `json:"hooks"`
}

func claudeEntryFor(i int) claudeEntry {
	return claudeEntry{Matcher: "", Hooks: []claudeHandler{{
		Type: "command", Command: HookCommand("claude-code"), Description: claudeEvents[i].Description, Timeout: 10,
	}}}
}

// ClaudeHandlerDigestInput is the byte string whose SHA-256 the manifest
// records for the settings block: the compact JSON of the handler list
// [["SessionStart",{entry}],["SubagentStart",{entry}],["Stop",{entry}],["SubagentStop",{entry}]].
func ClaudeHandlerDigestInput() []byte { return claudeHookSettings.digestInput() }

// ClaudeSettingsSnippet is the settings document holding exactly Tree Ring's
// four entries, pretty-printed. It is both the file Tree Ring creates when
// .claude/settings.json is absent and the snippet a user merges by hand
// (appending each entry to hooks.<Event>) when the file already exists.
func ClaudeSettingsSnippet() []byte {
	type hooks struct {
		SessionStart  []claudeEntry `json:"SessionStart"`
		SubagentStart []claudeEntry `json:"SubagentStart"`
		Stop          []claudeEntry `json:"Stop"`
		SubagentStop  []claudeEntry `json:"SubagentStop"`
	}
	doc := struct {
		Hooks hooks `json:"hooks"`
	}{hooks{
		SessionStart:  []claudeEntry{claudeEntryFor(0)},
		SubagentStart: []claudeEntry{claudeEntryFor(1)},
		Stop:          []claudeEntry{claudeEntryFor(2)},
		SubagentStop:  []claudeEntry{claudeEntryFor(3)},
	}}
	return prettyJSON(doc)
}

func claudeMaterial(Context) Material {
	whole := ClaudeSettingsSnippet()
	return Material{
		BridgePath: claudeSettings,
		Files:      []File{{Path: claudeSkill, Data: []byte(SkillBridge), Mode: 0o644}},
		Blocks: []Block{{
			Path: claudeSettings, ID: claudeBlockID, Format: ClaudeSettings,
			Digest: ClaudeHandlerDigestInput(), Whole: whole, Snippet: string(whole),
		}},
	}
}
