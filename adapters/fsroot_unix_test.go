//go:build unix

package adapters

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A fifo where a file is read is refused without waiting for a writer,
// and a symlinked project root is refused before anything is opened
// through it.
func TestFifoAndSymlinkedRootRefused(t *testing.T) {
	r, dir := openTestRoot(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	var nr *NotRegularError
	if _, err := r.ReadFile("fifo", 10); !errors.As(err, &nr) {
		t.Fatalf("fifo read: %v", err)
	}
	if _, _, err := r.OpenRead("fifo"); !errors.As(err, &nr) {
		t.Fatalf("fifo open: %v", err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	var sl *SymlinkError
	if _, err := OpenProjectRoot(link); !errors.As(err, &sl) {
		t.Fatalf("symlinked root: %v", err)
	}
}
