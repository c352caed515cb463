//go:build linux || darwin

package adapters

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
)

// installed creates data as the installed program under a fresh root and
// returns the root, the project path and the record init would append.
func installed(t testing.TB, data []byte) (*ProjectRoot, string, events.ProgramIdentity) {
	t.Helper()
	r, dir := openTestRoot(t)
	if err := r.CreateFile(BinaryPath, data, 0o755, 0o700); err != nil {
		t.Fatal(err)
	}
	rec, ok, err := IdentifyProgram(r)
	if err != nil || !ok {
		t.Fatalf("identify: %v %v", ok, err)
	}
	return r, dir, rec
}

func TestInspectProgram(t *testing.T) {
	program := []byte("#!/bin/sh\necho tree-ring\n" + strings.Repeat("x", 4096))
	cases := []struct {
		name   string
		damage func(t *testing.T, path string)
		code   string // "" means the check passes
		quick  bool   // whether the quick check hashes
		repair string // a substring of the message
	}{
		{name: "untouched", damage: func(*testing.T, string) {}},
		{name: "copied back in place with the same bytes (identity moved)", damage: func(t *testing.T, p string) {
			rewrite(t, p, program, 0o755)
		}, quick: true},
		{name: "truncated", damage: func(t *testing.T, p string) {
			if err := os.Truncate(p, 100); err != nil {
				t.Fatal(err)
			}
		}, code: ProgramDiffers, repair: "is shorter than the program init recorded (a partial copy?): 100 bytes"},
		{name: "replaced, same size", damage: func(t *testing.T, p string) {
			b := append([]byte(nil), program...)
			b[len(b)-1] = 'y'
			rewrite(t, p, b, 0o755)
		}, code: ProgramDiffers, quick: true, repair: "mv .tree-ring/bin/tree-ring .tree-ring/bin/tree-ring.replaced"},
		{name: "edited in place with the times set back", damage: func(t *testing.T, p string) {
			fi, _ := os.Stat(p)
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("X"), 0)
			f.Close()
			os.Chtimes(p, fi.ModTime(), fi.ModTime()) // ctime still moves
		}, code: ProgramDiffers, quick: true},
		{name: "missing", damage: func(t *testing.T, p string) { os.Remove(p) }, code: ProgramMissing, repair: "run `tree-ring init`"},
		{name: "not executable", damage: func(t *testing.T, p string) { os.Chmod(p, 0o644) }, code: ProgramNotExecutable, quick: true, repair: "chmod 755"},
		// Issue 24 item 4: a mode that lets another account change the
		// program is refused whatever its digest, before any hashing.
		{name: "world-writable", damage: func(t *testing.T, p string) { chmod(t, p, 0o777) }, code: ProgramUnsafeMode,
			repair: "is writable by group or others (mode 0777), so it cannot vouch for what every hook runs; repair: `chmod 755 .tree-ring/bin/tree-ring`"},
		{name: "group-writable", damage: func(t *testing.T, p string) { chmod(t, p, 0o775) }, code: ProgramUnsafeMode, repair: "`chmod 755 .tree-ring/bin/tree-ring`"},
		{name: "setuid", damage: func(t *testing.T, p string) { chmod(t, p, 0o755|os.ModeSetuid) }, code: ProgramUnsafeMode,
			repair: "the installed program .tree-ring/bin/tree-ring is setuid or setgid (mode 4755)"},
		{name: "setgid", damage: func(t *testing.T, p string) { chmod(t, p, 0o755|os.ModeSetgid) }, code: ProgramUnsafeMode, repair: "setuid or setgid"},
		{name: "directory world-writable", damage: func(t *testing.T, p string) { chmod(t, filepath.Dir(p), 0o777) }, code: ProgramUnsafeMode,
			repair: ".tree-ring/bin, the directory of the installed program .tree-ring/bin/tree-ring, is writable by group or others (mode 0777), so it cannot vouch for what every hook runs; repair: `chmod 755 .tree-ring/bin`"},
		{name: "directory setgid (inherited on Linux: allowed)", damage: func(t *testing.T, p string) { chmod(t, filepath.Dir(p), 0o755|os.ModeSetgid) }},
		{name: "a directory", damage: func(t *testing.T, p string) { os.Remove(p); os.Mkdir(p, 0o755) }, code: ProgramNotRegular},
		{name: "a symlink", damage: func(t *testing.T, p string) {
			os.Rename(p, p+".real")
			os.Symlink(p+".real", p)
		}, code: ProgramNotRegular},
	}
	for _, c := range cases {
		for _, full := range []bool{false, true} {
			name := c.name + map[bool]string{false: " (quick)", true: " (full)"}[full]
			t.Run(name, func(t *testing.T) {
				r, dir, rec := installed(t, program)
				time.Sleep(2 * time.Millisecond) // a rewrite gets another mtime
				c.damage(t, filepath.Join(dir, BinaryPath))
				_, hashed, err := InspectProgram(r, rec, full)
				var pe *ProgramError
				switch {
				case c.code == "" && err != nil:
					t.Fatalf("refused: %v", err)
				case c.code != "" && (!errors.As(err, &pe) || pe.Code != c.code):
					t.Fatalf("err %v, want %s", err, c.code)
				}
				if c.code != "" && !strings.Contains(err.Error(), c.repair) {
					t.Fatalf("message lacks %q: %v", c.repair, err)
				}
				if err != nil && strings.Contains(err.Error(), dir) {
					t.Fatalf("message names an absolute path: %v", err)
				}
				wantHashed := full || c.quick
				if c.code == ProgramMissing || c.code == ProgramNotRegular || c.code == ProgramUnsafeMode {
					wantHashed = false
				}
				if c.code == ProgramDiffers && c.name == "truncated" {
					wantHashed = full // the size alone tells
				}
				if hashed != wantHashed {
					t.Fatalf("hashed %v, want %v", hashed, wantHashed)
				}
			})
		}
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode()&^os.ModeDir != mode {
		t.Skipf("the file system keeps %v, not %v", fi.Mode(), mode)
	}
}

// rewrite replaces path with data through a new inode, as cp onto a
// removed file or an unpacked backup does.
func rewrite(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path+".new", data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// releaseSize is the size of the release binary issue 12 measured.
const releaseSize = 7_747_849

// BenchmarkInspectProgram measures the hook's quick check of a
// release-sized program against the full digest status computes, and a
// bare stat as the floor (docs/benchmarks.md).
func BenchmarkInspectProgram(b *testing.B) {
	data := make([]byte, releaseSize)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	r, dir, rec := installed(b, data)
	b.Run("stat-floor", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.Stat(filepath.Join(dir, BinaryPath)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("quick", func(b *testing.B) {
		for b.Loop() {
			if _, hashed, err := InspectProgram(r, rec, false); err != nil || hashed {
				b.Fatal(err, hashed)
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		b.SetBytes(releaseSize)
		for b.Loop() {
			if _, _, err := InspectProgram(r, rec, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}
