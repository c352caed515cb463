package events

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ScopeError reports a run scope that cannot be derived: the identity is
// missing or unsafe. Commands fail closed on it; the message never
// contains the identity itself.
type ScopeError struct {
	What   string // "source root", "session id", "harness"
	Reason string // "missing", "not a directory", "containing a control character", ...
}

// Diagnostic is the run diagnostic code of an unsafe scope.
func (e *ScopeError) Diagnostic() string { return "scope_unsafe" }

func (e *ScopeError) Error() string {
	return fmt.Sprintf("run scope: %s is %s; refusing to record or list runs without a safe identity", e.What, e.Reason)
}

// scopeDomain separates scope digests from every other SHA-256 we compute.
const scopeDomain = "tree-ring.run-scope.v1\x00"

func scopeKey(parts ...string) string {
	h := sha256.New()
	h.Write([]byte(scopeDomain))
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:RunScopeKeyLen/2])
}

// CLIScopeKey is the run scope of a CLI invocation in the project whose
// canonical (absolute, symlink-free) root is canonical. The caller
// canonicalizes (the path must name an existing directory); the path
// itself is never stored.
func CLIScopeKey(canonical string) string { return scopeKey("cli", canonical) }

// MaxSessionChars bounds a session identity (the protocol's identity bound).
const MaxSessionChars = 256

// SessionScope derives the run scope of one harness session from the
// authoritative session identity the harness supplied (hook stdin, the
// preflight's session id). The identity is never stored.
func SessionScope(harness, sessionID string) (string, error) {
	if harness == "" {
		return "", &ScopeError{What: "harness", Reason: "missing"}
	}
	if ValidHarnessID(harness) != nil {
		return "", &ScopeError{What: "harness", Reason: "not a harness id"}
	}
	if sessionID == "" {
		return "", &ScopeError{What: "session id", Reason: "missing"}
	}
	if reason := UnsafeScopeText(sessionID); reason != "" {
		return "", &ScopeError{What: "session id", Reason: reason}
	}
	switch {
	case strings.TrimSpace(sessionID) != sessionID:
		return "", &ScopeError{What: "session id", Reason: "padded with whitespace"}
	case utf8.RuneCountInString(sessionID) > MaxSessionChars:
		return "", &ScopeError{What: "session id", Reason: fmt.Sprintf("longer than %d characters", MaxSessionChars)}
	case strings.Contains(sessionID, "trcap_v1_"):
		return "", &ScopeError{What: "session id", Reason: "carrying a capability token"}
	}
	return scopeKey("session", harness, sessionID), nil
}

// CheckpointScope is the run scope of one harness session's capture
// checkpoints, kept apart from SessionScope so that its records are
// exactly the checkpoints issued (docs/runs.md). The identity is checked
// as SessionScope checks it and never stored.
func CheckpointScope(harness, sessionID string) (string, error) {
	if _, err := SessionScope(harness, sessionID); err != nil {
		return "", err
	}
	return scopeKey("checkpoint", harness, sessionID), nil
}

// UnsafeScopeText is why s cannot identify a scope ("" when it can):
// invalid UTF-8 or a control character.
func UnsafeScopeText(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "containing a control character"
		}
	}
	return ""
}
