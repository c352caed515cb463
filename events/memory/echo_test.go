package memory

import (
	"strings"
	"testing"
)

// Only what looks like a field name is echoed into an error message.
func TestEchoKey(t *testing.T) {
	for key, want := range map[string]string{
		"expires_at":               ` ("expires_at")`,
		"":                         "",
		"Expires":                  "",
		"/home/u/x":                "",
		"a b":                      "",
		strings.Repeat("k", 41):    "",
		"sk_live_abcdefghijklmnop": "",
	} {
		if got := EchoKey(key); got != want {
			t.Errorf("EchoKey(%q) = %q, want %q", key, got, want)
		}
	}
}
