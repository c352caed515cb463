package events

import (
	"errors"
	"strings"
	"testing"
)

// FuzzSessionScope: a session identity from a harness either yields a
// well-formed scope key (the same one every time) or a *ScopeError whose
// message is made of fixed words (never the identity).
func FuzzSessionScope(f *testing.F) {
	f.Add("claude-code", "session-01")
	f.Add("pi", "/home/u/.pi/sessions/a.jsonl")
	f.Add("codex", " padded ")
	f.Add("codex", "trcap_v1_deadbeef")
	f.Add("x", "\x00")
	// Every refusal and its boundary: 256 characters of 3 bytes each,
	// one more, a C1 control, a token inside, a harness id that is not one.
	f.Add("agent-zero", strings.Repeat("界", 256))
	f.Add("opencode", strings.Repeat("界", 257))
	f.Add("gemini", "a\u0085b")
	f.Add("pi", "s-trcap_v1_x")
	f.Add("Codex", "s")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, harness, session string) {
		k, err := SessionScope(harness, session)
		if err != nil {
			var se *ScopeError
			if !errors.As(err, &se) {
				t.Fatalf("untyped error %v", err)
			}
			// The message is built from fixed words only.
			fixed := map[string]bool{"missing": true, "not a harness id": true, "not valid UTF-8": true,
				"containing a control character": true, "padded with whitespace": true,
				"longer than 256 characters": true, "carrying a capability token": true}
			if se.What != "harness" && se.What != "session id" || !fixed[se.Reason] {
				t.Fatalf("message carries more than fixed words: %v", err)
			}
			return
		}
		if ValidScopeKey(k) != nil {
			t.Fatalf("bad key %q", k)
		}
		if k2, _ := SessionScope(harness, session); k2 != k {
			t.Fatal("not deterministic")
		}
		// The key names neither value, and another session of the same
		// harness is another scope.
		if len(session) > len(k) && strings.Contains(k, session) || strings.Contains(k, harness) && len(harness) > 8 {
			t.Fatalf("key %q carries its input", k)
		}
		if k2, err := SessionScope(harness, session+"x"); err == nil && k2 == k {
			t.Fatal("two sessions share a scope key")
		}
	})
}

// TestCheckpointScope: a session's checkpoint scope is its own key, apart
// from the session scope and from other harnesses' and sessions', and an
// identity the session scope refuses is refused the same way.
func TestCheckpointScope(t *testing.T) {
	c, err := CheckpointScope("gemini-cli", "68fb6ac1-afd5-49d2-a237-17238e8fe87e")
	if err != nil || ValidScopeKey(c) != nil {
		t.Fatalf("%q %v", c, err)
	}
	s, _ := SessionScope("gemini-cli", "68fb6ac1-afd5-49d2-a237-17238e8fe87e")
	o, _ := CheckpointScope("gemini-cli", "0b1c2d3e")
	h, _ := CheckpointScope("codex", "68fb6ac1-afd5-49d2-a237-17238e8fe87e")
	if c == s || c == o || c == h {
		t.Fatalf("scopes collide: %s %s %s %s", c, s, o, h)
	}
	for _, bad := range []string{"", " padded", "a\x00b", "trcap_v1_x"} {
		var se *ScopeError
		if _, err := CheckpointScope("gemini-cli", bad); !errors.As(err, &se) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
