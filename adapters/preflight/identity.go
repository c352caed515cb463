package preflight

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events/receipt"
)

// Identity is a worker's session identity: the session a receipt names.
type Identity = receipt.Session

// Normalized is the published identity normalization: v is kept when it is
// at most 128 bytes of [A-Za-z0-9-_.:@], not "." or "..", and inspects as
// normal sensitivity; otherwise it becomes "{label}-{sha256(v)[:24]}". The
// result is therefore always safe inside double quotes in a shell command
// and as a path component.
func Normalized(label, v string) string {
	if receipt.SafeIdent(v) {
		return v
	}
	return label + "-" + adapters.SHA256Hex([]byte(v))[:24]
}

// HookIdentity derives the worker identity of a lifecycle event, as
// published:
//
//   - SessionStart, Stop: agent profile = the harness id; workflow and
//     session = normalized("session", session_id).
//   - SubagentStart, SubagentStop: agent profile =
//     "{harness}:{normalized("agent-type", agent_type)}:{sha256(agent_id)[:16]}",
//     workflow = normalized("session", session_id) (the parent session),
//     session = normalized("agent", agent_id).
//
// agent_id and agent_type only ever select this worker identity; they are
// never a store, project, capability or coordinator identity.
func HookIdentity(harness string, in HookInput) Identity {
	session := Normalized("session", in.SessionID)
	if !in.Subagent() {
		return Identity{AgentProfile: harness, WorkflowID: session, SessionID: session}
	}
	return Identity{
		AgentProfile: harness + ":" + Normalized("agent-type", in.AgentType) + ":" + adapters.SHA256Hex([]byte(in.AgentID))[:16],
		WorkflowID:   session,
		SessionID:    Normalized("agent", in.AgentID),
	}
}

// CaptureIdentity is the identity a stop checkpoint's capture lines file
// lessons under. For Stop it is HookIdentity's. For SubagentStop it is the
// parent session's agent profile (the harness id, which recurs), the
// parent session as workflow, and the subagent's own session
// (normalized("agent", agent_id), as HookIdentity derives it) as session:
// the subagent's worker profile embeds a hash of agent_id, new on every
// spawn, so a lesson filed under it would never be recalled again. The
// subagent stays named by the session (provenance in agent scope), and its
// worker identity is unchanged for receipts and recall: a new worker still
// inherits no previous worker's notes (docs/memory.md).
func CaptureIdentity(harness string, in HookInput) Identity {
	id := HookIdentity(harness, in)
	if in.Subagent() {
		id.AgentProfile = harness
	}
	return id
}

// WorkerKeyFingerprint identifies a worker (a harness and an agent profile:
// the unit of receipt retention) without naming it: the lowercase hex
// SHA-256 of the length-delimited fields "worker", harness id, agent
// profile, each an unsigned 64-bit big-endian length followed by its bytes
// (the bridge fingerprint's encoding).
func WorkerKeyFingerprint(harness, agentProfile string) string {
	h := sha256.New()
	var n [8]byte
	for _, f := range []string{"worker", harness, agentProfile} {
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ProjectName is the recall project of a project root: its basename, and
// the alias normalized("project", basename) that capture commands use
// ("project" when the basename is empty).
func ProjectName(canonicalRoot string) (name, alias string) {
	name = filepath.Base(canonicalRoot)
	if name == "/" || name == "." {
		name = ""
	}
	if name == "" {
		return "", "project"
	}
	return name, Normalized("project", name)
}
