package adapters

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
)

// stream builds the protocol's length-delimited field stream by hand, as
// an independent check of BridgeFingerprint's encoding.
func stream(fields ...string) []byte {
	var b bytes.Buffer
	for _, f := range fields {
		n := uint64(len(f))
		b.Write([]byte{byte(n >> 56), byte(n >> 48), byte(n >> 40), byte(n >> 32), byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		b.WriteString(f)
	}
	return b.Bytes()
}

func hexSum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestBridgeFingerprintEncoding(t *testing.T) {
	c, d, e := strings.Repeat("c", 64), strings.Repeat("d", 64), strings.Repeat("e", 64)
	files := []events.FileDigest{{Path: "z/SKILL.md", SHA256: c}, {Path: "a/hooks.json", SHA256: e}}
	blocks := []events.BlockDigest{{Path: "AGENTS.md", BlockID: "codex", SHA256: d, LeadingSeparator: "\n"}}
	want := hexSum(stream("codex", "4",
		"file", "a/hooks.json", e,
		"file", "z/SKILL.md", c,
		"block", "AGENTS.md", "codex", d, "\n"))
	if got := BridgeFingerprint("codex", "4", files, blocks); got != want {
		t.Fatalf("fingerprint %s, want %s", got, want)
	}
	if files[0].Path != "z/SKILL.md" {
		t.Fatal("BridgeFingerprint reordered its input")
	}
	// An empty separator still contributes a zero length field.
	blocks[0].LeadingSeparator = ""
	withEmpty := hexSum(stream("codex", "4", "file", "a/hooks.json", e, "file", "z/SKILL.md", c, "block", "AGENTS.md", "codex", d, ""))
	withoutField := hexSum(stream("codex", "4", "file", "a/hooks.json", e, "file", "z/SKILL.md", c, "block", "AGENTS.md", "codex", d))
	got := BridgeFingerprint("codex", "4", files, blocks)
	if got != withEmpty || got == withoutField {
		t.Fatalf("empty separator: got %s, want %s (not %s)", got, withEmpty, withoutField)
	}
	// Any field change changes the fingerprint; the project root is not an input.
	if BridgeFingerprint("codex", "5", files, blocks) == got || BridgeFingerprint("claude-code", "4", files, blocks) == got {
		t.Fatal("version or harness change did not change the fingerprint")
	}
}

func TestProjectRootFingerprint(t *testing.T) {
	if got, want := ProjectRootFingerprint("/work/project"), hexSum([]byte("/work/project")); got != want {
		t.Fatalf("%s != %s", got, want)
	}
}

func TestStoreID(t *testing.T) {
	id, err := NewStoreID(bytes.NewReader(bytes.Repeat([]byte{0xff}, 16)))
	if err != nil {
		t.Fatal(err)
	}
	if id != "ffffffff-ffff-4fff-bfff-ffffffffffff" {
		t.Fatalf("id %s", id)
	}
	id, err = NewStoreID(nil)
	if err != nil || !ValidStoreID(id) {
		t.Fatalf("random id %q invalid: %v", id, err)
	}
	other, _ := NewStoreID(nil)
	if other == id {
		t.Fatal("two random store ids are equal")
	}
	for _, bad := range []string{"", "01234567-89ab-3def-8123-456789abcdef", "01234567-89ab-4def-c123-456789abcdef", "01234567-89AB-4def-8123-456789abcdef", "0123456789ab-4def-8123-456789abcdef0"} {
		if ValidStoreID(bad) {
			t.Errorf("ValidStoreID(%q) = true", bad)
		}
	}
	if _, err := NewStoreID(bytes.NewReader([]byte{1, 2})); err == nil {
		t.Fatal("short entropy accepted")
	}
}
