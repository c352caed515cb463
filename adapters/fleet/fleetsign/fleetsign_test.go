package fleetsign

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const store = "3d1a160e-83e4-4b24-b222-ee5b36ff9ce4"

var hash = strings.Repeat("ab", 32)

// A signature vouches for exactly one store, position and hash.
func TestSignVerify(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	sig := Sign(priv, store, 5, hash)
	if err := Verify(pub, store, 5, hash, sig); err != nil {
		t.Fatal(err)
	}
	other, _, _ := ed25519.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{8}, 64)))
	for name, err := range map[string]error{
		"another position": Verify(pub, store, 6, hash, sig),
		"another hash":     Verify(pub, store, 5, strings.Repeat("cd", 32), sig),
		"another store":    Verify(pub, "4d1a160e-83e4-4b24-b222-ee5b36ff9ce4", 5, hash, sig),
		"another key":      Verify(other, store, 5, hash, sig),
		"not base64":       Verify(pub, store, 5, hash, "!!"),
		"truncated":        Verify(pub, store, 5, hash, sig[:20]),
	} {
		if err == nil {
			t.Errorf("%s: verified", name)
		}
	}
	if err := Verify(pub, store, 5, hash, ""); err != ErrUnsigned {
		t.Errorf("no signature: %v", err)
	}
	if got := string(Statement(store, 5, hash)); got != "tree-ring fleet event v1\n"+store+"\n5\n"+hash {
		t.Errorf("statement %q", got)
	}
}

// The key file: absent until created, 0600 and create-only (a second
// CreateKey returns the first key), refused when others may read it or
// when it is not an ed25519 PEM key; errors never hold its bytes.
func TestKeyFile(t *testing.T) {
	root := t.TempDir()
	if _, ok, err := LoadKey(root); ok || err != nil {
		t.Fatalf("before: %v %v", ok, err)
	}
	priv, err := CreateKey(root, bytes.NewReader(bytes.Repeat([]byte{1}, 64)))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, KeyFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", fi, err)
	}
	again, err := CreateKey(root, bytes.NewReader(bytes.Repeat([]byte{2}, 64)))
	if err != nil || !again.Equal(priv) {
		t.Fatalf("a second CreateKey replaced the key: %v", err)
	}
	got, ok, err := LoadKey(root)
	if !ok || err != nil || !got.Equal(priv) {
		t.Fatalf("load: %v %v", ok, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadKey(root); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("0644 key: %v", err)
	}
	if err := os.WriteFile(path, []byte("SECRET-CANARY"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadKey(root); err == nil || strings.Contains(err.Error(), "CANARY") {
		t.Fatalf("garbage key: %v", err)
	}
}

func TestParseExpect(t *testing.T) {
	pub := ed25519.PublicKey(bytes.Repeat([]byte{3}, 32))
	line := Line(store, pub, "ci runner\t7")
	if line != store+" "+EncodeKey(pub)+" ci-runner-7" {
		t.Fatalf("line %q", line)
	}
	exp, err := ParseExpect(strings.NewReader("# fleet\n\n" + line + "\n"))
	if err != nil || len(exp) != 1 || !exp[store].PublicKey.Equal(pub) || exp[store].Label != "ci-runner-7" {
		t.Fatalf("%+v %v", exp, err)
	}
	for name, in := range map[string]string{
		"empty":        "# nothing\n",
		"no key":       store + "\n",
		"bad store":    "not-a-store " + EncodeKey(pub) + "\n",
		"bad key":      store + " AAAA\n",
		"listed twice": line + "\n" + line + "\n",
	} {
		if _, err := ParseExpect(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if got := CleanLabel(strings.Repeat("é", 70)); len([]rune(got)) != 64 {
		t.Errorf("long label: %d runes", len([]rune(got)))
	}
}
