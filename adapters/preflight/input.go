package preflight

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events/strictjson"
)

// InputError is a refusal of stdin or of the request flags. Its message
// names keys from the published lists or fixed reasons, never a value.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErr(format string, a ...any) error { return &InputError{Msg: fmt.Sprintf(format, a...)} }

// ForbiddenError is the refusal of a capability-, root-, store-,
// identity- or receipt-bearing key. Keys are the normalized forms, which
// are on the published list.
type ForbiddenError struct {
	Hook bool // a lifecycle hook (else adapter stdin)
	Keys []string
}

func (e *ForbiddenError) Error() string {
	if e.Hook {
		return "lifecycle hook stdin contains forbidden fields: " + quoteKeys(e.Keys)
	}
	return "adapter preflight stdin contains a forbidden field: " + quoteKeys(e.Keys)
}

// Lifecycle hook events.
const (
	SessionStart  = "SessionStart"
	SubagentStart = "SubagentStart"
	Stop          = "Stop"
	SubagentStop  = "SubagentStop"
)

// HookInput is what Tree Ring reads from a lifecycle hook event: the
// host-owned identity fields and, for stops, the loop guard. Everything
// else the host sends (transcript paths, model, permission mode, effort,
// background tasks, the last assistant message, any unknown key) is
// skipped unread.
type HookInput struct {
	Event          string
	SessionID      string
	Cwd            string
	AgentID        string // subagent events
	AgentType      string // subagent events
	StopHookActive bool   // stop events
}

// Start reports whether the event starts a session or worker.
func (h HookInput) Start() bool { return h.Event == SessionStart || h.Event == SubagentStart }

// Subagent reports whether the event belongs to a subagent (worker).
func (h HookInput) Subagent() bool { return h.Event == SubagentStart || h.Event == SubagentStop }

// ParseHook validates a lifecycle hook event against the harness's
// contract: at most adapters.MaxStdinBytes; UTF-8 text (checkText); one
// JSON object without repeated keys; no forbidden top-level key; hook_event_name one of the
// contract's events; session_id, cwd (and agent_id, agent_type for
// subagent events) non-blank strings; stop_hook_active a boolean for stop
// events. Fields not needed for the event are not decoded.
func ParseHook(c adapters.StdinContract, data []byte) (HookInput, error) {
	if c.Mode != adapters.LifecycleHook {
		return HookInput{}, inputErr("this harness has no lifecycle hook contract")
	}
	if len(data) > adapters.MaxStdinBytes {
		return HookInput{}, inputErr("lifecycle hook stdin exceeds 1 MiB")
	}
	wanted := slices.Clone(c.Required)
	for _, ks := range c.EventRequired {
		wanted = append(wanted, ks...)
	}
	wanted = append(wanted, c.Optional...)
	if err := checkText(data); err != nil {
		return HookInput{}, inputErr("lifecycle hook stdin %v", err)
	}
	res, err := scan(data, scanSpec{wanted: wanted, forbidden: c.IsForbidden, nested: c.ForbiddenNested})
	if err != nil {
		return HookInput{}, inputErr("lifecycle hook stdin %v", err)
	}
	if len(res.forbidden) > 0 {
		return HookInput{}, &ForbiddenError{Hook: true, Keys: res.forbidden}
	}
	var in HookInput
	if in.Event, err = requiredString(res, "hook_event_name", "lifecycle hook stdin"); err != nil {
		return HookInput{}, err
	}
	if !slices.Contains(c.Events, in.Event) {
		return HookInput{}, inputErr("lifecycle hook stdin: hook_event_name is not one of %s", strings.Join(c.Events, ", "))
	}
	fields := map[string]*string{"session_id": &in.SessionID, "cwd": &in.Cwd, "agent_id": &in.AgentID, "agent_type": &in.AgentType}
	for _, k := range append(slices.Clone(c.Required), c.EventRequired[in.Event]...) {
		switch k {
		case "hook_event_name":
		case "stop_hook_active":
			raw, ok := res.values[k]
			if !ok || (string(raw) != "true" && string(raw) != "false") {
				return HookInput{}, inputErr("lifecycle hook stdin: %s requires a boolean stop_hook_active", in.Event)
			}
			in.StopHookActive = string(raw) == "true"
		default:
			dst, ok := fields[k]
			if !ok {
				return HookInput{}, inputErr("lifecycle hook contract names an unsupported field %q", k)
			}
			if *dst, err = requiredString(res, k, "lifecycle hook stdin"); err != nil {
				return HookInput{}, err
			}
		}
	}
	return in, nil
}

// requiredString decodes key as a non-blank string.
func requiredString(res scanResult, key, what string) (string, error) {
	raw, ok := res.values[key]
	if !ok {
		return "", inputErr("%s requires %s", what, key)
	}
	s, err := stringValue(raw)
	if err != nil || strings.TrimSpace(s) == "" {
		return "", inputErr("%s: %s must be a non-blank string", what, key)
	}
	return s, nil
}

// stringValue reads raw, one JSON value, as a string: with the checks of
// strictjson.Unmarshal into a string, without building its reflective
// schema (every hook reads its session id and cwd so).
func stringValue(raw []byte) (string, error) {
	r := strictjson.NewReader(raw, strictjson.Limits{})
	b, err := r.String()
	if err == nil {
		err = r.End()
	}
	return string(b), err
}

// Context formats of `integrations preflight --context-format`.
const (
	FormatJSON               = "json"
	FormatClaudeSessionStart = "claude-session-start"
	FormatPi                 = "pi-before-agent-start"
)

// Formats lists every context format.
var Formats = []string{FormatClaudeSessionStart, FormatPi, FormatJSON}

// ErrContract is the refusal of a (harness, mode, format) triple outside
// the published pairs.
var ErrContract = errors.New("invalid preflight harness contract")

// ErrDirectFlags is the refusal of direct mode without all three flags.
var ErrDirectFlags = errors.New("direct preflight requires --agent-profile, --workflow-id, and --session-id")

// CheckContract validates a preflight invocation's mode and format:
// direct flags only for a harness with DirectPreflight (codex) with json; adapter stdin only for the
// published pairs (claude-code with claude-session-start, pi with
// pi-before-agent-start, agent-zero with json).
func CheckContract(harness string, stdin bool, format string) error {
	if !stdin {
		if a, ok := adapters.Lookup(harness); ok && a.DirectPreflight && format == FormatJSON {
			return nil
		}
		return ErrContract
	}
	a, ok := adapters.Lookup(harness)
	if !ok || !slices.Contains(a.Stdin.ContextFormats, format) {
		return ErrContract
	}
	if a.Stdin.Mode == adapters.AdapterStdin || format == FormatClaudeSessionStart {
		return nil
	}
	return ErrContract
}

// Request is a validated adapter-stdin preflight request.
type Request struct {
	Identity Identity
	// Cwd is the Claude Code session's working directory (checked to be
	// inside the project by the caller); empty for other harnesses.
	Cwd string
	// TaskHint is the raw optional hint (Pi). It is passed to recall for
	// classification only and never stored, logged or echoed.
	TaskHint string
}

// ParseAdapter validates adapter stdin for harness in format (already
// checked by CheckContract): at most adapters.MaxStdinBytes; one JSON
// object; no forbidden key at any depth (the adapter-stdin list, matched
// lowercased with '-' as '_'); then the harness's fields:
//
//   - claude-code (claude-session-start): session_id and cwd required
//     non-blank strings; an agent_type, when present, must be "claude-code";
//     other keys are host metadata and skipped unread. Identity: agent
//     profile claude-code, workflow and session normalized("session",
//     session_id).
//   - pi: agent_profile, workflow_id, session_id (non-blank strings) and
//     an optional task_hint (string or null).
//   - agent-zero, opencode: agent_profile, workflow_id, session_id; a
//     task_hint is refused (the contract forbids it: their bridges send none).
//
// Any other key is benign host metadata (a model name, a chat title): its
// value is skipped unread, as ParseHook does, and reaches no Request.
//
// Identity values are normalized (an unsafe value becomes label-<digest>).
func ParseAdapter(harness string, data []byte) (Request, error) {
	a, ok := adapters.Lookup(harness)
	if !ok {
		return Request{}, ErrContract
	}
	if len(data) > adapters.MaxStdinBytes {
		return Request{}, inputErr("adapter preflight stdin exceeds 1 MiB")
	}
	forbidden := adapters.AdapterStdinForbidden()
	c := a.Stdin
	isForbidden := func(k string) bool {
		return slices.Contains(forbidden, normKey(k)) || c.Mode == adapters.AdapterStdin && c.IsForbidden(k)
	}
	wanted := append(slices.Clone(c.Required), c.Optional...)
	if harness == "claude-code" {
		wanted = []string{"session_id", "cwd", "agent_type"}
	}
	if err := checkText(data); err != nil {
		return Request{}, inputErr("adapter preflight stdin %v", err)
	}
	res, err := scan(data, scanSpec{wanted: wanted, forbidden: isForbidden, nested: true})
	if err != nil {
		return Request{}, inputErr("adapter preflight stdin %v", err)
	}
	if len(res.forbidden) > 0 {
		return Request{}, &ForbiddenError{Keys: res.forbidden}
	}
	if harness == "claude-code" {
		return claudeRequest(res)
	}
	if c.Mode != adapters.AdapterStdin {
		return Request{}, ErrContract
	}
	return adapterRequest(c, res)
}

// adapterRequest is the request of an adapter-stdin harness: the identity
// fields, and the task hint where the contract takes one (a forbidden key
// elsewhere, refused by the scan).
func adapterRequest(c adapters.StdinContract, res scanResult) (Request, error) {
	const what = "adapter preflight stdin"
	var r Request
	vals := map[string]string{}
	for _, k := range c.Required {
		var err error
		if vals[k], err = requiredString(res, k, what); err != nil {
			return Request{}, err
		}
	}
	if raw, ok := res.values["task_hint"]; ok && string(raw) != "null" {
		if err := strictjson.Unmarshal(raw, &r.TaskHint); err != nil {
			return Request{}, inputErr("invalid adapter preflight stdin fields: task_hint must be a string or null")
		}
	}
	r.Identity = Identity{
		AgentProfile: Normalized("agent-profile", vals["agent_profile"]),
		WorkflowID:   Normalized("workflow", vals["workflow_id"]),
		SessionID:    Normalized("session", vals["session_id"]),
	}
	return r, nil
}

// claudeRequest is the request of Claude Code's session-start object sent
// to adapter preflight: session_id and cwd, an agent_type only if it is
// claude-code.
func claudeRequest(res scanResult) (Request, error) {
	const what = "adapter preflight stdin"
	var r Request
	session, err := requiredString(res, "session_id", what)
	if err != nil {
		return Request{}, err
	}
	if r.Cwd, err = requiredString(res, "cwd", what); err != nil {
		return Request{}, err
	}
	if raw, ok := res.values["agent_type"]; ok {
		if t, err := stringValue(raw); err != nil || t != "claude-code" {
			return Request{}, inputErr("ambiguous Claude Code adapter identity")
		}
	}
	s := Normalized("session", session)
	r.Identity = Identity{AgentProfile: "claude-code", WorkflowID: s, SessionID: s}
	return r, nil
}

// DirectRequest builds the request of direct mode (codex, json) from the
// three flags, all required.
func DirectRequest(agentProfile, workflowID, sessionID string) (Request, error) {
	if strings.TrimSpace(agentProfile) == "" || strings.TrimSpace(workflowID) == "" || strings.TrimSpace(sessionID) == "" {
		return Request{}, ErrDirectFlags
	}
	return Request{Identity: Identity{
		AgentProfile: Normalized("agent-profile", agentProfile),
		WorkflowID:   Normalized("workflow", workflowID),
		SessionID:    Normalized("session", sessionID),
	}}, nil
}
