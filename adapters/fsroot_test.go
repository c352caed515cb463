package adapters

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func openTestRoot(t testing.TB) (*ProjectRoot, string) {
	t.Helper()
	dir, err := CanonicalProjectRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenProjectRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}

func TestCreateFileCreateOnly(t *testing.T) {
	r, dir := openTestRoot(t)
	if err := r.CreateFile("a/b/c.txt", []byte("one"), 0o755, 0o700); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "a/b/c.txt"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v, err %v", fi.Mode(), err)
	}
	if di, _ := os.Stat(filepath.Join(dir, "a/b")); di.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v", di.Mode())
	}
	err = r.CreateFile("a/b/c.txt", []byte("two"), 0o644, 0o700)
	var ex *ExistsError
	if !errors.As(err, &ex) {
		t.Fatalf("second create: %v, want *ExistsError", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a/b/c.txt")); string(got) != "one" {
		t.Fatalf("existing file replaced: %q", got)
	}
	e, err := r.ReadFile("a/b/c.txt", 10)
	if err != nil || !e.Exists || string(e.Data) != "one" {
		t.Fatalf("ReadFile: %+v %v", e, err)
	}
	if e, err := r.ReadFile("a/missing/x", 10); err != nil || e.Exists {
		t.Fatalf("absent: %+v %v", e, err)
	}
	var tl *TooLargeError
	if _, err := r.ReadFile("a/b/c.txt", 2); !errors.As(err, &tl) {
		t.Fatalf("bound: %v", err)
	}
	var nr *NotRegularError
	if _, err := r.ReadFile("a/b", 10); !errors.As(err, &nr) {
		t.Fatalf("directory read as file: %v", err)
	}
	var nd *NotDirError
	if err := r.CreateFile("a/b/c.txt/d", nil, 0o644, 0o755); !errors.As(err, &nd) {
		t.Fatalf("file as parent: %v", err)
	}
	if ok, err := r.Exists("a/b/c.txt"); !ok || err != nil {
		t.Fatal("Exists")
	}
	if err := r.CreateFile("../escape", nil, 0o644, 0o755); err == nil {
		t.Fatal("relative escape accepted")
	}
}

func TestSymlinksRefused(t *testing.T) {
	r, dir := openTestRoot(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, ".claude")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "target"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "target"), filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	var sl *SymlinkError
	if err := r.CreateFile(".claude/settings.json", []byte("{}"), 0o644, 0o755); !errors.As(err, &sl) || sl.Path != ".claude" {
		t.Fatalf("symlinked directory: %v", err)
	}
	if _, err := r.ReadFile(".claude/settings.json", 10); !errors.As(err, &sl) {
		t.Fatalf("read through symlinked directory: %v", err)
	}
	if err := r.CreateFile("link.json", []byte("{}"), 0o644, 0o755); !errors.As(err, &sl) || sl.Path != "link.json" {
		t.Fatalf("symlinked file: %v", err)
	}
	if _, err := r.ReadFile("link.json", 10); !errors.As(err, &sl) {
		t.Fatalf("read symlinked file: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("something was written through a symlink: %v", entries)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "target")); string(got) != "x" {
		t.Fatal("symlink target modified")
	}
}

func TestDurabilityFailureLeavesFile(t *testing.T) {
	r, dir := openTestRoot(t)
	boom := errors.New("injected fsync failure")
	r.FailSync = func(d string) error {
		if d == "x" {
			return boom
		}
		return nil
	}
	err := r.CreateFile("x/f", []byte("data"), 0o644, 0o755)
	var de *DurabilityError
	if !errors.As(err, &de) || !errors.Is(err, boom) || de.Path != "x/f" {
		t.Fatalf("err = %v, want *DurabilityError wrapping the injected failure", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "x/f")); !bytes.Equal(got, []byte("data")) {
		t.Fatal("published file was rolled back or not written")
	}
}
