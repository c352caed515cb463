package adapters

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReplaceFile(t *testing.T) {
	r, dir := openTestRoot(t)
	old := []byte("old\n")
	if err := r.CreateFile("a/m.json", old, 0o644, 0o700); err != nil {
		t.Fatal(err)
	}
	var ce *ChangedError
	if err := r.ReplaceFile("a/m.json", []byte("new\n"), 0o644, SHA256Hex([]byte("other"))); !errors.As(err, &ce) {
		t.Fatalf("stale digest: %v", err)
	}
	if err := r.ReplaceFile("a/absent.json", []byte("new\n"), 0o644, SHA256Hex(old)); !errors.As(err, &ce) {
		t.Fatalf("absent file: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a/m.json")); string(got) != "old\n" {
		t.Fatalf("refused replace changed the file: %q", got)
	}
	var synced []string
	r.FailSync = func(rel string) error { synced = append(synced, rel); return nil }
	if err := r.ReplaceFile("a/m.json", []byte("new\n"), 0o600, SHA256Hex(old)); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "a/m.json"))
	fi, _ := os.Stat(filepath.Join(dir, "a/m.json"))
	if string(got) != "new\n" || fi.Mode().Perm() != 0o600 || len(synced) != 1 || synced[0] != "a" {
		t.Fatalf("replaced: %q %v, directory syncs %v", got, fi.Mode(), synced)
	}
	names, _, _ := r.ListDir("a", 10)
	if len(names) != 1 {
		t.Fatalf("a temporary file was left: %v", names)
	}
	os.Symlink("m.json", filepath.Join(dir, "a/link.json"))
	var se *SymlinkError
	if err := r.ReplaceFile("a/link.json", []byte("x"), 0o644, SHA256Hex([]byte("new\n"))); !errors.As(err, &se) {
		t.Fatalf("symlink: %v", err)
	}
}

func TestRemoveOwned(t *testing.T) {
	r, dir := openTestRoot(t)
	data := []byte("owned\n")
	for _, f := range []string{"a/owned.md", "a/edited.md"} {
		if err := r.CreateFile(f, data, 0o644, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "a/edited.md"), []byte("the user's now\n"), 0o644)
	var ce *ChangedError
	if removed, err := r.RemoveOwned("a/edited.md", SHA256Hex(data)); removed || !errors.As(err, &ce) {
		t.Fatalf("edited file: %v %v", removed, err)
	}
	if removed, err := r.RemoveOwned("a/owned.md", SHA256Hex(data)); !removed || err != nil {
		t.Fatalf("owned file: %v %v", removed, err)
	}
	if removed, err := r.RemoveOwned("a/owned.md", SHA256Hex(data)); removed || err != nil {
		t.Fatalf("absent file: %v %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a/edited.md")); err != nil {
		t.Fatalf("the edited file was removed: %v", err)
	}
}
