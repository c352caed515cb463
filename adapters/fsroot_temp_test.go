package adapters

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CreateFile publishes through a temporary name and leaves nothing else:
// the final file holds all of its bytes, an existing name is refused
// before any temporary file is written, and a failed directory sync after
// the link is a *DurabilityError with the complete file in place.
func TestCreateFileLinksACompleteFileAndLeavesNoTemporary(t *testing.T) {
	r, dir := openTestRoot(t)
	data := []byte(strings.Repeat("x", 1<<20))
	if err := r.CreateFile("d/f.bin", data, 0o755, 0o700); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "d/f.bin")); err != nil || len(got) != len(data) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	err := r.CreateFile("d/f.bin", []byte("other"), 0o644, 0o700)
	var ex *ExistsError
	if !errors.As(err, &ex) || ex.Path != "d/f.bin" {
		t.Fatalf("%v", err)
	}
	r.FailSync = func(d string) error {
		if d == "d" {
			return errors.New("injected")
		}
		return nil
	}
	err = r.CreateFile("d/g.txt", []byte("g"), 0o644, 0o700)
	var de *DurabilityError
	if !errors.As(err, &de) || de.Path != "d/g.txt" || !strings.Contains(err.Error(), "indeterminate") {
		t.Fatalf("%v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "d/g.txt")); string(got) != "g" {
		t.Fatalf("the file behind a failed directory sync holds %q", got)
	}
	names, _ := os.ReadDir(filepath.Join(dir, "d"))
	if len(names) != 2 {
		t.Fatalf("d holds %v", names)
	}
}

func TestTempNames(t *testing.T) {
	n, err := TempName("settings.json")
	if err != nil || !IsTempName(n) || !strings.HasPrefix(n, ".settings.json.tree-ring-tmp-") {
		t.Fatalf("%q %v", n, err)
	}
	for _, name := range []string{"settings.json", ".settings.json", ".x.tree-ring-tmp-0123", ".x.tree-ring-tmp-0123456789abcdeg", "x.tree-ring-tmp-0123456789abcdef"} {
		if IsTempName(name) {
			t.Errorf("%q is taken for a temporary name", name)
		}
	}
}
