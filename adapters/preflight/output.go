package preflight

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/events/strictjson"
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
// JSON or capabilities. Written by hand, byte for byte what encodeLine
// writes for the same object (TestOutputsMatchEncodingJSON): every hook
// prints it, and reflection's first use cost more than the rest.
func HookOutput(event, context string) []byte {
	b := make([]byte, 0, len(`{"hookSpecificOutput":{"hookEventName":"","additionalContext":""}}`)+len(event)+len(context)+len(context)/8+8)
	b = append(b, `{"hookSpecificOutput":{"hookEventName":`...)
	b = strictjson.AppendStringNoHTML(b, event)
	b = append(b, `,"additionalContext":`...)
	b = strictjson.AppendStringNoHTML(b, context)
	return append(b, "}}\n"...)
}

// JSONOutput is the json and pi-before-agent-start response:
// {"context":C,"state":S,"receipt":ActivationReceiptSummary}.
func JSONOutput(context, state string, s receipt.Summary) []byte {
	return encodeLine(struct {
		Context string          `json:"context"`
		State   string          `json:"state"`
		Receipt receipt.Summary `json:"receipt"`
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

// Placeholders of the capture lines: plain words, inert in any shell and
// unchanged by XML escaping (Codex escapes a Stop reason before the model
// sees it). Run unreplaced, capture refuses each one by name (the rule is
// memory.Capture's).
const (
	SummaryPlaceholder   = memory.SummaryPlaceholder
	EventTypePlaceholder = memory.EventTypePlaceholder
	RingPlaceholder      = memory.RingPlaceholder

	placeholders = " capture " + SummaryPlaceholder + " --event-type " + EventTypePlaceholder + " --ring " + RingPlaceholder + " "
)

// FillCapture replaces a printed capture line's placeholders as the
// checkpoint's instructions tell the agent to (the demo and the tests play
// the agent): the summary in double quotes, the event type and ring as they
// are. A line without the placeholders is returned unchanged.
func FillCapture(line, summary, eventType, ring string) string {
	return strings.Replace(line, placeholders, ` capture "`+summary+`" --event-type `+eventType+" --ring "+ring+" ", 1)
}

// CheckpointReason is the automatic capture checkpoint instruction for a
// worker: review only outcomes already in the working context and submit
// zero to three concise durable candidates, each through one exact strict
// capture command line (the project's installed binary and store by
// absolute path, the project alias, the worker identity, operation id
// auto-<checkpoint>-<1|2|3> and source ref agent-checkpoint:<checkpoint>).
//
// Each line runs as printed from any directory: no command substitution
// (Gemini CLI refuses any $(...)), no redirection, no quotes (but around a
// project path that needs them), and nothing an XML escape changes; the
// allowed values are in the prose, not inside the command. projectRoot is the canonical absolute project root: it
// reaches only the harness's stop output, never the ledger or a receipt. It
// never contains --scope (capture fixes scope to agent), the transcript
// path or the last assistant message. project and the identity are
// normalized values ([A-Za-z0-9-_.:@]), shell words as they are.
func CheckpointReason(checkpoint, project, projectRoot string, id Identity) string {
	store := filepath.Join(projectRoot, adapters.StoreDir)
	var b strings.Builder
	b.WriteString("Tree Ring automatic capture checkpoint ")
	b.WriteString(checkpoint)
	b.WriteString(". Review only outcomes already in your working context and submit zero to three concise durable candidates " +
		"(a preference, decision, lesson, warning, correction or seed that will matter in a later session). " +
		"Zero is correct when nothing reusable occurred. Run one strict capture command per candidate, " +
		"using the next unused line below exactly as printed, from any directory, replacing only the three placeholders: " +
		SummaryPlaceholder + " with the candidate as one line in double quotes (no quote, backslash, dollar sign or backtick inside it), " +
		EventTypePlaceholder + " with preference, decision, lesson, warning, correction or seed, and " +
		RingPlaceholder + " with cambium, scar or seed.\n")
	for slot := 1; slot <= 3; slot++ {
		b.WriteString(shellWord(filepath.Join(store, "bin", "tree-ring")))
		b.WriteString(" --root ")
		b.WriteString(shellWord(store))
		b.WriteString(placeholders + "--project ")
		b.WriteString(project)
		b.WriteString(" --agent-profile ")
		b.WriteString(id.AgentProfile)
		b.WriteString(" --workflow-id ")
		b.WriteString(id.WorkflowID)
		b.WriteString(" --session-id ")
		b.WriteString(id.SessionID)
		b.WriteString(" --operation-id auto-")
		b.WriteString(checkpoint)
		b.WriteString("-")
		b.WriteByte(byte('0' + slot))
		b.WriteString(" --source-ref agent-checkpoint:")
		b.WriteString(checkpoint)
		b.WriteString("\n")
	}
	b.WriteString("Capture accepts only normal-sensitivity cambium, scar or seed candidates in agent scope, one concise line each. " +
		"If nothing durable occurred, write nothing and finish. Never capture a transcript, a secret, a prompt of the user or invented memory.")
	return b.String()
}

// shellWord is path as one POSIX shell word: as it is when every byte is
// inert in sh and in XML text, else single-quoted (an embedded quote
// closes, escapes and reopens). A quoted path is still one word for sh,
// but an XML escape may show the model &apos; instead of the quote
// (docs/preflight.md).
func shellWord(path string) string {
	inert := path != "" && !strings.ContainsFunc(path, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%=", r))
	})
	if inert {
		return path
	}
	return "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
}
