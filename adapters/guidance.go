package adapters

import "github.com/tree-ring/tree-ring/fsm"

// Guidance-only harnesses: detected (read-only, by marker) so that users
// see them, never bridged and never active, until someone establishes the
// native contract against an installed client and authors an adapter (seed
// 004; docs/adapters/README.md). Each states its native gap in one
// sentence; docs/adapters/<id>.md gives the evidence.
//
// Markers are the harness's own project and home configuration paths.
// Antigravity's project directory .agents is also where Tree Ring publishes
// the shared skill, so only its hook and rule paths under it count.
//
// A package-level literal, which the linker lays out as data, so init only
// fills in the common fields and registers them (no allocation).
var guidance = []*Adapter{
	{
		ID: "hermes", Name: "Hermes", Executable: "hermes",
		ProjectMarkers: []string{".hermes", "hermes.toml"}, HomeMarkers: []string{".hermes"},
		NativeGap: "Native needs a documented Hermes session-start hook or extension whose output reaches the model before the first turn, verified against an installed client.",
	},
	{
		ID: "goose", Name: "Goose", Executable: "goose",
		ProjectMarkers: []string{".goose", "goosehints", ".goosehints"}, HomeMarkers: []string{".goose", ".config/goose"},
		NativeGap: "Native needs a Goose session-start hook or extension whose output reaches the model before the first turn, verified against an installed client.",
	},
	{
		ID: "crush", Name: "Crush", Executable: "crush",
		ProjectMarkers: []string{"crush.json", ".crush.json", ".crush", "crushrc"}, HomeMarkers: []string{".config/crush", ".local/share/crush"},
		NativeGap: "Native needs a Crush hook that runs at session start: its only hook event, PreToolUse, fires before a tool call, so its context output cannot reach the first turn.",
	},
	{
		ID: "kimi-code", Name: "Kimi Code", Executable: "kimi",
		ProjectMarkers: []string{".kimi"}, HomeMarkers: []string{".kimi", ".kimi-code", ".config/kimi"},
		NativeGap: "Native needs a Kimi Code session-start hook in project configuration (its beta hooks live in the user's config.toml and have no documented context output).",
	},
	{
		ID: "command-code", Name: "Command Code", Executable: "cmd",
		ProjectMarkers: []string{".commandcode"}, HomeMarkers: []string{".commandcode"},
		NativeGap: "Native needs a Command Code session-start hook: its hooks are PreToolUse, PostToolUse and Stop, none before the first turn.",
	},
	{
		ID: "kiro-cli", Name: "Kiro CLI", Executable: "kiro-cli",
		ProjectMarkers: []string{".kiro"}, HomeMarkers: []string{".kiro"},
		NativeGap: "Native needs a session identity in Kiro's hook input (agentSpawn sends only hook_event_name and cwd) and hooks outside the user's own agent files.",
	},
	{
		ID: "omp", Name: "Oh My Pi (omp)", Executable: "omp",
		ProjectMarkers: []string{".omp"}, HomeMarkers: []string{".omp"},
		NativeGap: "Native needs omp's extension contract established against an installed client (it needs Bun, not Node); Pi's bridge is not assumed to carry over to the fork.",
	},
	{
		ID: "grok-build", Name: "Grok Build CLI", Executable: "grok",
		ProjectMarkers: []string{".grok"}, HomeMarkers: []string{".grok"},
		NativeGap: "Native needs Grok Build's hook contract verified against an installed client; its project configuration takes only MCP servers, plugins and permission rules.",
	},
	{
		ID: "antigravity-cli", Name: "Antigravity CLI", Executable: "agy",
		ProjectMarkers: []string{".agents/hooks.json", ".agents/rules"}, HomeMarkers: []string{".gemini/antigravity-cli"},
		NativeGap: "Native needs project-scoped Antigravity hooks: the CLI loads lifecycle hooks only from globally installed plugins, and its print mode runs outside the workspace.",
	},
	{
		ID: "devin-cli", Name: "Devin CLI", Executable: "devin",
		ProjectMarkers: []string{".devin"}, HomeMarkers: []string{".config/devin"},
		NativeGap: "Native needs Devin CLI's SessionStart hook (.devin/hooks.v1.json) verified against an installed client: that its context output reaches the first model request.",
	},
	{
		ID: "cursor", Name: "Cursor", Executable: "cursor-agent",
		ProjectMarkers: []string{".cursor", ".cursorrules"}, HomeMarkers: []string{".cursor"},
		NativeGap: "Native needs Cursor's sessionStart hook verified against an installed client: its official reference was not retrievable and additional_context is reported ignored by some builds.",
	},
}

func init() {
	for _, a := range guidance {
		a.Version = "0"
		a.Capability = GuidanceOnly
		a.Support = Unsupported
		a.RestingState = fsm.Unsupported
		a.Stdin = StdinContract{Mode: NoStdin}
		register(a)
	}
}
