package adapters

import "github.com/tree-ring/tree-ring/fsm"

// Gemini CLI: two handler entries (SessionStart, AfterAgent) in the
// project's .gemini/settings.json, managed as one block so the user's own
// settings can live beside them, and the shared skill (Gemini CLI reads
// .agents/skills). The contract was established against Gemini CLI 0.61.0
// (docs/adapters/gemini-cli.md): hook timeouts are milliseconds, the hook
// runs with the project as its working directory, a failing hook is
// reported and skipped (the session goes on without context), and project
// hooks run only in a trusted folder, which status reads from Gemini's own
// settings and trustedFolders.json (gemini_trust.go), never writes.
const (
	geminiSettings = ".gemini/settings.json"
	geminiBlockID  = "gemini-cli"
	// geminiTimeoutMS bounds each hook on Gemini's side (milliseconds).
	geminiTimeoutMS = 10_000
)

// geminiEvents are the hook events Tree Ring registers, in order, with the
// description that identifies each handler as Tree Ring's. AfterAgent is
// Gemini's stop: {"decision":"block","reason":R} makes the agent go on
// with R as its next prompt.
var geminiEvents = []struct{ Event, Description string }{
	{"SessionStart", "Tree Ring Memory managed lifecycle v1"},
	{"AfterAgent", "Tree Ring Memory managed capture checkpoint v1"},
}

func init() {
	register(&Adapter{
		ID: "gemini-cli", Name: "Gemini CLI", Version: "1", Capability: NativePreflight, Support: Maintained,
		Executable:     "gemini",
		HooksSwitch:    geminiHooksOff,
		ProjectMarkers: []string{".gemini", "GEMINI.md"},
		HomeMarkers:    []string{".gemini"},
		RestingState:   fsm.ConfiguredAwaitingProof,
		BridgePath:     geminiSettings,
		OwnedFiles:     []string{SharedSkill},
		ManagedBlocks:  []BlockTarget{{Path: geminiSettings, BlockID: geminiBlockID, Format: GeminiSettings}},
		Stdin: StdinContract{
			Mode:     LifecycleHook,
			Events:   []string{"SessionStart", "AfterAgent"},
			Required: []string{"session_id", "cwd", "hook_event_name"},
			EventRequired: map[string][]string{
				"AfterAgent": {"stop_hook_active"},
			},
			Forbidden: hookForbidden,
			Output: `SessionStart: {"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"..."}}; ` +
				`AfterAgent: {"decision":"block","reason":"..."} once per session, {} afterwards`,
			TimeoutSeconds: geminiTimeoutMS / 1000,
			// Gemini CLI reads exit 2 as "deny": on AfterAgent a retry
			// with the stderr as the next prompt.
			FailureExit: NonBlockingExit,
		},
		TrustGate:                decisionGate(geminiFolderTrust, geminiStep),
		CheckpointOncePerSession: true,
		TrustStep:                geminiStep,
		material:                 geminiMaterial,
	})
}

func geminiStep(TrustDecision) string { return geminiTrustStep }

const geminiTrustStep = "Trust this project in Gemini CLI itself (Tree Ring never changes Gemini CLI's trust settings): " +
	"run `gemini` in the project and choose \"Trust folder\", or add this project's path with the value \"TRUST_FOLDER\" to " +
	"~/.gemini/trustedFolders.json; untrusted, Gemini skips project hooks (headless runs exit 55). Then open a new Gemini CLI session."

// geminiHandler is one handler entry; field order is the wire order.
type geminiHandler struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Command     string `json:"command"`
	Description string `json:"description"`
	Timeout     int    `json:"timeout"`
}

type geminiEntry struct {
	Matcher string          `json:"matcher"`
	Hooks   []geminiHandler `json:"hooks"`
}

func geminiEntryFor(i int) geminiEntry {
	return geminiEntry{Matcher: "", Hooks: []geminiHandler{{
		Name: "tree-ring-memory", Type: "command", Command: HookCommand("gemini-cli"),
		Description: geminiEvents[i].Description, Timeout: geminiTimeoutMS,
	}}}
}

var geminiHookSettings = hookSettings{
	path: geminiSettings, harness: "gemini-cli", events: []string{geminiEvents[0].Event, geminiEvents[1].Event},
	entry: func(i int) any { return geminiEntryFor(i) },
}

// GeminiSettingsSnippet is the settings document holding exactly Tree
// Ring's two entries, pretty-printed: the file Tree Ring creates when
// .gemini/settings.json is absent and the snippet a user merges by hand
// (appending each entry to hooks.<Event>) when it exists.
func GeminiSettingsSnippet() []byte {
	type hooks struct {
		SessionStart []geminiEntry `json:"SessionStart"`
		AfterAgent   []geminiEntry `json:"AfterAgent"`
	}
	doc := struct {
		Hooks hooks `json:"hooks"`
	}{hooks{SessionStart: []geminiEntry{geminiEntryFor(0)}, AfterAgent: []geminiEntry{geminiEntryFor(1)}}}
	return prettyJSON(doc)
}

func geminiMaterial(Context) Material {
	whole := GeminiSettingsSnippet()
	return Material{
		BridgePath: geminiSettings,
		Files:      []File{{Path: SharedSkill, Data: []byte(SkillBridge), Mode: 0o644}},
		Blocks: []Block{{
			Path: geminiSettings, ID: geminiBlockID, Format: GeminiSettings,
			Digest: geminiHookSettings.digestInput(), Whole: whole, Snippet: string(whole),
		}},
	}
}
