package adapters

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestListDirAndRemoveFile(t *testing.T) {
	r, dir := openTestRoot(t)
	for _, f := range []string{"a/b/x.json", "a/b/y.json"} {
		if err := r.CreateFile(f, []byte("x"), 0o600, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, "a/b/sub"), 0o700)
	names, absent, err := r.ListDir("a/b", 10)
	if err != nil || absent || !slices.Equal(names, []string{"sub", "x.json", "y.json"}) {
		t.Fatalf("list: %v %v %v", names, absent, err)
	}
	if _, absent, err := r.ListDir("a/missing", 10); err != nil || !absent {
		t.Fatalf("missing dir: %v %v", absent, err)
	}
	var tl *TooLargeError
	if _, _, err := r.ListDir("a/b", 2); !errors.As(err, &tl) {
		t.Fatalf("bound: %v", err)
	}
	if ok, err := r.RemoveFile("a/b/x.json"); !ok || err != nil {
		t.Fatalf("remove: %v %v", ok, err)
	}
	if ok, err := r.RemoveFile("a/b/x.json"); ok || err != nil {
		t.Fatalf("remove absent: %v %v", ok, err)
	}
	var nr *NotRegularError
	if _, err := r.RemoveFile("a/b/sub"); !errors.As(err, &nr) {
		t.Fatalf("remove a directory: %v", err)
	}
	// A symlinked directory is never followed, and a symlink is not a
	// regular file: neither is removed.
	os.Symlink(filepath.Join(dir, "a/b"), filepath.Join(dir, "link"))
	var sl *SymlinkError
	if _, err := r.RemoveFile("link/y.json"); !errors.As(err, &sl) {
		t.Fatalf("through a symlink: %v", err)
	}
	if _, _, err := r.ListDir("link", 10); !errors.As(err, &sl) {
		t.Fatalf("list through a symlink: %v", err)
	}
	if _, err := r.RemoveFile("link"); !errors.As(err, &nr) {
		t.Fatalf("remove a symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a/b/y.json")); err != nil {
		t.Fatal("y.json was removed through a symlink")
	}
}

func TestRemoveEmptyDir(t *testing.T) {
	r, dir := openTestRoot(t)
	if err := r.CreateFile("a/full/x.json", []byte("x"), 0o600, 0o700); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "a/empty"), 0o700)
	os.Symlink(filepath.Join(dir, "a/empty"), filepath.Join(dir, "a/link"))
	os.WriteFile(filepath.Join(dir, "a/file"), []byte("x"), 0o600)
	for _, tc := range []struct {
		rel     string
		removed bool
		fails   bool
	}{
		{"a/full", false, false},    // not empty: kept
		{"a/missing", false, false}, // absent: nothing to do
		{"a/link", false, true},     // a symlink is not a directory: refused
		{"a/file", false, true},     // nor is a file
		{"a/link/x", false, true},   // never through a symlink
		{"a/empty", true, false},
		{"a/empty", false, false},
	} {
		ok, err := r.RemoveEmptyDir(tc.rel)
		if ok != tc.removed || (err != nil) != tc.fails {
			t.Errorf("%s: removed %v, err %v", tc.rel, ok, err)
		}
	}
	for _, keep := range []string{"a/full/x.json", "a/link", "a/file"} {
		if _, err := os.Lstat(filepath.Join(dir, keep)); err != nil {
			t.Errorf("%s: %v", keep, err)
		}
	}
}
