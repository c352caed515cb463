package preflight

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
)

// encodeLine is compact JSON without HTML escaping and with one trailing
// newline: the one object a harness reads from stdout.
func encodeLine(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only strings, ints and structs of them
	}
	return buf.Bytes()
}

// HookOutput is the lifecycle start output (and the claude-session-start
// format): {"hookSpecificOutput":{"hookEventName":E,"additionalContext":C}}.
// It carries only the rendered safe context: never hook input, receipt
// JSON or capabilities.
func HookOutput(event, context string) []byte {
	type specific struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	}
	return encodeLine(struct {
		HookSpecificOutput specific `json:"hookSpecificOutput"`
	}{specific{event, context}})
}

// JSONOutput is the json and pi-before-agent-start response:
// {"context":C,"state":S,"receipt":ActivationReceiptSummary}.
func JSONOutput(context, state string, s Summary) []byte {
	return encodeLine(struct {
		Context string  `json:"context"`
		State   string  `json:"state"`
		Receipt Summary `json:"receipt"`
	}{context, state, s})
}

// StopDone is the output when the host re-runs a stop hook with
// stop_hook_active true: an empty object, so the turn can finish.
var StopDone = []byte("{}\n")

// StopOutput is the first stop attempt's continuation decision:
// {"decision":"block","reason":R}. Codex and Claude Code read it as "keep
// going with this instruction", not as an error.
func StopOutput(reason string) []byte {
	return encodeLine(struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}{"block", reason})
}

// CheckpointReason is the automatic capture checkpoint instruction for a
// worker: review only outcomes already in the working context and submit
// zero to three concise durable candidates, each through one exact strict
// capture command line (the runtime prefix of adapters.CaptureCommandPrefix,
// the project alias, the worker identity, operation id
// auto-<checkpoint>-<1|2|3> and source ref agent-checkpoint:<checkpoint>).
// It never contains --scope (capture fixes scope to agent), the transcript
// path or the last assistant message. project and the identity are
// normalized values, safe inside double quotes.
func CheckpointReason(checkpoint, project string, id Identity) string {
	var b strings.Builder
	b.WriteString("Tree Ring automatic capture checkpoint ")
	b.WriteString(checkpoint)
	b.WriteString(". Review only outcomes already in your working context and submit zero to three concise durable candidates " +
		"(a preference, decision, lesson, warning, correction or seed that will matter in a later session). " +
		"Zero is correct when nothing reusable occurred. Run one strict capture command per candidate, " +
		"using the next unused line below, replacing only the summary, event type and ring:\n")
	for slot := 1; slot <= 3; slot++ {
		b.WriteString(adapters.CaptureCommandPrefix())
		b.WriteString(`; "$tree_ring" --root "$project_root/.tree-ring" capture "<concise summary>" --event-type <preference|decision|lesson|warning|correction|seed> --ring <cambium|scar|seed> --project "`)
		b.WriteString(project)
		b.WriteString(`" --agent-profile "`)
		b.WriteString(id.AgentProfile)
		b.WriteString(`" --workflow-id "`)
		b.WriteString(id.WorkflowID)
		b.WriteString(`" --session-id "`)
		b.WriteString(id.SessionID)
		b.WriteString(`" --operation-id auto-`)
		b.WriteString(checkpoint)
		b.WriteString("-")
		b.WriteByte(byte('0' + slot))
		b.WriteString(" --source-ref agent-checkpoint:")
		b.WriteString(checkpoint)
		b.WriteString("\n")
	}
	b.WriteString("Capture accepts only normal-sensitivity cambium, scar or seed candidates in agent scope, one concise line each. " +
		"If nothing durable occurred, write nothing and finish. Never capture a transcript, a secret, the user's prompt or invented memory.")
	return b.String()
}
