package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/projections"
)

// checkedRoot returns a fresh root path; if the test leaves a ledger there,
// cleanup verifies it (every projection registered), unless the test
// damaged it on purpose (damagedRoots).
func checkedRoot(t *testing.T) string {
	t.Helper()
	// A scratch root: the sample's store names another project root.
	root := filepath.Join(t.TempDir(), "store")
	t.Cleanup(func() {
		if _, bad := damagedRoots.Load(root); bad {
			return
		}
		if _, err := os.Lstat(filepath.Join(root, bolt.LedgerFile)); err != nil {
			return
		}
		st, err := bolt.OpenRoot(root, bolt.Options{ReadOnly: true, Projections: projections.All()})
		if err != nil {
			t.Errorf("cleanup: open %s: %v", root, err)
			return
		}
		defer st.Close()
		if _, err := st.Verify(context.Background()); err != nil {
			t.Errorf("cleanup: verify %s: %v", root, err)
		}
	})
	return root
}

var damagedRoots sync.Map

// sampleRoot builds the sample ledger (testdata/ledger/sample.ndjson) in a
// fresh root, without the run record an `events import` would add.
func sampleRoot(t *testing.T) string {
	t.Helper()
	root := checkedRoot(t)
	buildSample(t, root)
	return root
}

func TestAuditVerify(t *testing.T) {
	root := sampleRoot(t)
	r := runCLI(t, "", "--root", root, "audit", "verify")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "verified: 4 events in 2 streams, chain head ") || r.stderr != "" {
		t.Fatalf("%+v", r)
	}
	r = runCLI(t, "", "--root", root, "--json", "audit", "verify")
	if r.code != 0 || !strings.HasPrefix(r.stdout, `{"ok":true,"events":4,"streams":2,"bodies":0,"chain_head":"`) {
		t.Fatalf("%+v", r)
	}
	assertRefused(t, runCLI(t, "", "--root", root, "audit", "verify", "x"), exitError, "takes no arguments")
}

// TestAuditVerifyTamperedByte edits one byte of a stored envelope in the
// ledger file itself (bbolt does not checksum data pages): verify exits 3
// naming the position.
func TestAuditVerifyTamperedByte(t *testing.T) {
	root := sampleRoot(t)
	damagedRoots.Store(root, true)
	path := filepath.Join(root, bolt.LedgerFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Only the event at position 2 has this marker where its field name
	// is packed, not JSON (the harnesses projection keeps a JSON copy);
	// copy-on-write leaves older copies of its page in free pages, so flip
	// every copy.
	marker := []byte(`[".claude"]`)
	copies := 0
	for i := 0; ; i++ {
		j := bytes.Index(b[i:], marker)
		if j < 0 {
			break
		}
		i += j
		if !bytes.HasSuffix(b[:i], []byte(`"markers":`)) {
			b[i+len(`[".c`)] = 'k'
			copies++
		}
	}
	if copies == 0 {
		t.Fatal("marker not found")
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "", "--root", root, "audit", "verify")
	assertRefused(t, r, exitVerify, cli.ProjectRelative(path, root), "position 2: content hashes to")
	t.Logf("tamper: audit verify: 1 byte of one event changed in the ledger file (%d copies of its page), exit 3 naming position 2", copies)
	// Reading still works: the damage is for verify to find.
	if r := runCLI(t, "", "--root", root, "events"); r.code != 0 || !strings.Contains(r.stdout, `".ckaude"`) {
		t.Fatalf("events: %+v", r)
	}
}

// TestBadRoots: each broken root layout makes every command fail with one
// line naming the path and the cause, exit 2 (3 for verify of a corrupt
// ledger), and nothing changes on disk.
func TestBadRoots(t *testing.T) {
	sample := sampleRoot(t)
	good, err := os.ReadFile(filepath.Join(sample, bolt.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		setup   func(t *testing.T, root string)
		target  func(root string) string
		cause   string
		corrupt bool
	}{
		{"root is a file", func(t *testing.T, root string) { writeFile(t, root, "x") }, rootPath, "root is not a directory", false},
		{"root is a symlink", func(t *testing.T, root string) {
			if err := os.Symlink(sample, root); err != nil {
				t.Fatal(err)
			}
		}, rootPath, "root is a symlink", false},
		{"ledger is a symlink", func(t *testing.T, root string) {
			mkdirAll(t, root)
			if err := os.Symlink(filepath.Join(sample, bolt.LedgerFile), filepath.Join(root, bolt.LedgerFile)); err != nil {
				t.Fatal(err)
			}
		}, ledgerPath, "ledger is a symlink", false},
		{"ledger is a directory", func(t *testing.T, root string) {
			mkdirAll(t, filepath.Join(root, bolt.LedgerFile))
		}, ledgerPath, "ledger is not a regular file", false},
		{"ledger is empty", func(t *testing.T, root string) {
			mkdirAll(t, root)
			writeFile(t, filepath.Join(root, bolt.LedgerFile), "")
		}, ledgerPath, "ledger is corrupt: empty file", true},
		{"ledger is garbage", func(t *testing.T, root string) {
			mkdirAll(t, root)
			writeFile(t, filepath.Join(root, bolt.LedgerFile), strings.Repeat("x", 16384))
		}, ledgerPath, "ledger is corrupt", true},
		{"ledger is truncated", func(t *testing.T, root string) {
			mkdirAll(t, root)
			writeFile(t, filepath.Join(root, bolt.LedgerFile), string(good[:4096]))
		}, ledgerPath, "ledger is corrupt", true},
	}
	commands := [][]string{{"events"}, {"events", "import", sampleLedger}, {"audit", "verify"}, {"projections", "rebuild"}}
	for _, c := range cases {
		for _, cmd := range commands {
			t.Run(c.name+"/"+strings.Join(cmd, " "), func(t *testing.T) {
				root := filepath.Join(t.TempDir(), ".tree-ring")
				c.setup(t, root)
				before := dirState(t, filepath.Dir(root))
				beforeSample := dirState(t, sample)
				r := runCLI(t, "", append([]string{"--root", root}, cmd...)...)
				code := exitError
				if c.corrupt && cmd[0] == "audit" {
					code = exitVerify
				}
				assertRefused(t, r, code, cli.ProjectRelative(c.target(root)+": ", root), c.cause)
				if dirState(t, filepath.Dir(root)) != before || dirState(t, sample) != beforeSample {
					t.Fatal("a refused command changed files")
				}
			})
		}
	}
}

func TestLockedLedger(t *testing.T) {
	root := sampleRoot(t)
	st, err := bolt.OpenRoot(root, bolt.Options{}) // holds the lock, as another process would
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	before := dirState(t, root)
	for _, cmd := range [][]string{{"events"}, {"events", "import", sampleLedger}, {"audit", "verify"}, {"projections", "rebuild"}} {
		start := time.Now()
		r := runCLI(t, "", append([]string{"--root", root, "--lock-timeout", "100ms"}, cmd...)...)
		assertRefused(t, r, exitError, cli.ProjectRelative(filepath.Join(root, bolt.LedgerFile), root)+": ledger is locked by another process")
		if time.Since(start) > 10*time.Second {
			t.Fatal("the lock timeout was not applied")
		}
	}
	if dirState(t, root) != before {
		t.Fatal("files changed")
	}
}

func TestNoLedger(t *testing.T) {
	root := checkedRoot(t)
	for _, cmd := range [][]string{{"events"}, {"audit", "verify"}} {
		assertRefused(t, runCLI(t, "", append([]string{"--root", root}, cmd...)...), exitError, cli.ProjectRelative(root, root)+": no ledger here")
	}
	if _, err := os.Stat(root); err == nil {
		t.Fatal("a read-only command created the root")
	}
}

func rootPath(root string) string   { return root }
func ledgerPath(root string) string { return filepath.Join(root, bolt.LedgerFile) }

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mkdirAll(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o700); err != nil {
		t.Fatal(err)
	}
}

// dirState lists every entry under dir with its mode and content.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		b.WriteString(p + " " + fi.Mode().String())
		if fi.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			b.Write(c)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}
