package adapters

import (
	"slices"
	"strings"
)

// StdinMode is how a harness hands its runtime identity to Tree Ring.
type StdinMode string

// Stdin modes.
const (
	// LifecycleHook: the host runs the managed hook command with its event
	// object on stdin (Codex, Claude Code).
	LifecycleHook StdinMode = "lifecycle-hook"
	// AdapterStdin: a Tree Ring bridge or plugin sends a fixed identity
	// object to `integrations preflight --input-json-stdin` (Pi, Agent Zero).
	AdapterStdin StdinMode = "adapter-stdin"
	// NoStdin: guidance-only adapters never invoke Tree Ring.
	NoStdin StdinMode = "none"
)

// MaxStdinBytes bounds every stdin document (larger input is rejected).
const MaxStdinBytes = 1 << 20

// StdinContract declares what a harness may send on stdin and what Tree
// Ring answers. The preflight and hook commands enforce it; it is data here
// so that the contract of every adapter is reviewed in one place and its
// fixtures under testdata/adapters/<id>/stdin are checked against it.
type StdinContract struct {
	Mode StdinMode
	// ContextFormats are the --context-format values valid for this
	// harness in adapter-stdin mode.
	ContextFormats []string
	// Events lists hook_event_name values a lifecycle hook accepts.
	Events []string
	// Required fields for every event or request; EventRequired adds per
	// event (lifecycle hooks only).
	Required      []string
	EventRequired map[string][]string
	// Optional fields that are read when present. Every other key that is
	// not Forbidden is benign host metadata (a model name, a chat title)
	// and ignored: never read, forwarded, logged or stored (the protocol's
	// input validation rule, for hooks and adapter stdin alike).
	Optional []string
	// Forbidden keys are rejected wherever they appear (matched after
	// lowercasing and mapping '-' to '_'), because they claim a store, root,
	// capability, identity or receipt that only the manifest may supply.
	Forbidden []string
	// ForbiddenNested applies Forbidden at every depth (adapter stdin);
	// otherwise only top-level keys are checked (lifecycle hooks, whose
	// hosts nest benign metadata such as background task descriptions).
	ForbiddenNested bool
	// Output describes the one JSON object written to stdout on success.
	Output string
	// TimeoutSeconds is the host-side bound written into the bridge (0:
	// the bridge applies its own bound in-process).
	TimeoutSeconds int
	// FailureExit is the exit code of a lifecycle hook that fails with a
	// handled error once --harness named this adapter (it replaces the
	// protocol's 2; an indeterminate outcome's 4 and an interrupt's 130
	// stay, no host reading them as a block): a code the host
	// reads as a non-blocking error on every event in Events, so that a
	// failing stop hook neither continues the agent with our stderr as its
	// reason nor loops, and a failing start leaves a session without
	// memory. Required in lifecycle-hook mode, 0 otherwise: `integrations
	// preflight` keeps the protocol's exit 2, which the Pi extension and
	// the Agent Zero plugin read.
	FailureExit int
}

// IsForbidden reports whether key is forbidden by the contract.
func (c StdinContract) IsForbidden(key string) bool {
	k := strings.ReplaceAll(strings.ToLower(key), "-", "_")
	for _, f := range c.Forbidden {
		if k == f {
			return true
		}
	}
	return false
}

// IsKnown reports whether key is read by the contract (required, required
// for some event, or optional).
func (c StdinContract) IsKnown(key string) bool {
	for _, k := range c.Required {
		if k == key {
			return true
		}
	}
	for _, ks := range c.EventRequired {
		for _, k := range ks {
			if k == key {
				return true
			}
		}
	}
	for _, k := range c.Optional {
		if k == key {
			return true
		}
	}
	return false
}

// hookForbidden: top-level fields that would carry a capability or claim
// a store, root, bridge fingerprint, harness identity or receipt state
// (the protocol's rejected inputs; only the manifest supplies these), plus
// task_hint, which a hook never takes; a lifecycle hook rejects them
// instead of ignoring them. No real client sends any of them
// (testdata/harness-payloads).
var hookForbidden = []string{"authorization", "bridge_fingerprint", "capabilities", "capability", "coordinator_capability", "harness_id",
	"memory_root", "project_root", "project_root_fingerprint", "receipt", "receipt_id", "root", "state", "store_id", "task_hint",
	"token", "tree_ring_coordinator_token"}

// AdapterStdinForbidden is the forbidden-key list of adapter-mode preflight
// stdin (checked at every depth), which also applies when a lifecycle
// harness (Claude Code) sends its session-start object to `integrations
// preflight --input-json-stdin`. The returned slice is a copy.
func AdapterStdinForbidden() []string { return append([]string(nil), adapterForbidden...) }

// adapterStdin is the stdin contract every adapter-preflight harness
// shares (Pi's extension, the Agent Zero plugin, the OpenCode plugin): the
// host's local session identity, the forbidden keys at any depth, and the
// {context, state, receipt} answer; they differ only in context formats
// and optional fields. A harness whose bridge sends no task hint refuses
// one (as the hooks do): a hint there would be model text reaching recall
// through a channel the protocol closes, not host metadata.
func adapterStdin(formats []string, optional ...string) StdinContract {
	forbidden := adapterForbidden
	if !slices.Contains(optional, "task_hint") {
		forbidden = append(slices.Clone(adapterForbidden), "task_hint")
	}
	return StdinContract{
		Mode:            AdapterStdin,
		ContextFormats:  formats,
		Required:        []string{"agent_profile", "workflow_id", "session_id"},
		Optional:        optional,
		Forbidden:       forbidden,
		ForbiddenNested: true,
		Output:          `{"context":"...","state":"active"|"active-isolated","receipt":{ActivationReceiptSummary}}`,
	}
}

// adapterForbidden is checked recursively in adapter stdin.
var adapterForbidden = []string{"authorization", "bridge_fingerprint", "capability", "capabilities", "coordinator_capability", "harness_id", "memory_root", "project_root", "project_root_fingerprint", "receipt", "receipt_id", "state", "store_id", "token", "tree_ring_coordinator_token"}

// NonBlockingExit is the failure exit of the lifecycle hooks of Claude Code,
// Codex and Gemini CLI: each reads exit 2 from a stop hook as "block, and
// continue with stderr as the reason" (observed: Claude Code 2.1.328 adds 8
// turns, Codex 0.169.0 and Gemini CLI 0.61.0 loop until killed) and exit 1
// as a failed hook it logs and skips, on every event (docs/exit-codes.md).
const NonBlockingExit = 1

func lifecycleContract() StdinContract {
	return StdinContract{
		Mode:     LifecycleHook,
		Events:   []string{"SessionStart", "SubagentStart", "Stop", "SubagentStop"},
		Required: []string{"session_id", "cwd", "hook_event_name"},
		EventRequired: map[string][]string{
			"SubagentStart": {"agent_id", "agent_type"},
			"Stop":          {"stop_hook_active"},
			"SubagentStop":  {"agent_id", "agent_type", "stop_hook_active"},
		},
		Forbidden:      hookForbidden,
		Output:         `start: {"hookSpecificOutput":{"hookEventName":"SessionStart"|"SubagentStart","additionalContext":"..."}}; stop: {"decision":"block","reason":"..."} on the first attempt, {} when stop_hook_active is true`,
		TimeoutSeconds: 10,
		FailureExit:    NonBlockingExit,
	}
}
