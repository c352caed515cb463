package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
	bbolt "go.etcd.io/bbolt"
)

// Issue 12, observed 7 and 9: what an interrupted init of an older build
// left, and a deleted ledger.
func TestStoreLifecycleAfterInterruptions(t *testing.T) {
	t.Run("an empty bbolt file is completed by the next init", func(t *testing.T) {
		p := newProj(t, ".claude")
		if err := os.MkdirAll(p.path(".tree-ring"), 0o700); err != nil {
			t.Fatal(err)
		}
		db, err := bbolt.Open(p.path(".tree-ring/ledger.db"), 0o600, &bbolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		r := p.run("integrations", "status")
		if r.code != 2 || !strings.Contains(r.stderr, "an empty ledger (an interrupted init left it); run `tree-ring init` to complete it") {
			t.Fatalf("status: %+v", r)
		}
		p.ok("init")
		p.ok("audit", "verify")
		if n := strings.Count(p.ok("events"), `"type":"store.initialized"`); n != 1 {
			t.Fatalf("%d store.initialized", n)
		}
	})
	for _, rel := range []string{adapters.BinaryPath, ".tree-ring/AGENTS.md", ".tree-ring/SKILL.md", ".tree-ring/CLI.md"} {
		t.Run("an empty "+rel+" is refused with the repair", func(t *testing.T) {
			p := newProj(t, ".claude")
			p.write(rel, "")
			r := p.run("init")
			if r.code != 2 || !strings.Contains(r.stderr, rel+": a partial copy from an interrupted install (0 of ") ||
				!strings.Contains(r.stderr, "repair: remove "+rel+" and run `tree-ring init` again") {
				t.Fatalf("init: %+v", r)
			}
			if err := os.Remove(p.path(rel)); err != nil {
				t.Fatal(err)
			}
			p.ok("init")
			if fi, err := os.Stat(p.path(rel)); err != nil || fi.Size() == 0 {
				t.Fatalf("after the repair %s: %v", rel, err)
			}
		})
	}
	t.Run("another complete binary is kept, not adopted", func(t *testing.T) {
		// Not the running build and not recorded: never replaced, and no
		// bridge that would run it is published (issue 24 item 1).
		p := newProj(t, ".claude")
		p.write(adapters.BinaryPath, "#!/bin/sh\nexit 0\n")
		p.review("init")
		if p.read(adapters.BinaryPath) != "#!/bin/sh\nexit 0\n" {
			t.Fatal("replaced")
		}
		if p.exists(".claude/settings.json") {
			t.Fatal("a bridge that runs it was published")
		}
	})
	t.Run("a deleted ledger is refused by every write but init, which adopts the manifest", func(t *testing.T) {
		p := newProj(t, ".claude")
		p.ok("init")
		storeID := p.manifest().StoreID
		if err := os.Remove(p.path(".tree-ring/ledger.db")); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"remember", "--event-type", "lesson", "x"},
			{"integrations", "activate", "--harness", "claude-code"},
		} {
			r := p.run(args...)
			if r.code != 2 || !strings.Contains(r.stderr, "tree-ring: .tree-ring/ledger.db: the ledger is missing although activation.json names its store; nothing was created; repair: run `tree-ring init` to adopt activation.json") {
				t.Errorf("%v: %+v", args, r)
			}
			if p.exists(".tree-ring/ledger.db") {
				t.Fatalf("%v recreated the ledger", args)
			}
		}
		// Status reads the manifest as it is (docs/adoption.md) and creates
		// nothing; the repair the message names keeps the store id.
		if out := p.ok("integrations", "status"); !strings.Contains(out, "Claude Code: configured-awaiting-proof") || p.exists(".tree-ring/ledger.db") {
			t.Fatalf("status without the ledger: %s", out)
		}
		var in initOut
		p.json(&in, "--json", "init")
		if in.StoreID != storeID {
			t.Fatalf("init minted %s instead of adopting %s", in.StoreID, storeID)
		}
		p.ok("audit", "verify")
	})
}

// Receipt events without files and files without events are reported by
// status and audit verify (issue 12, item 10).
func TestReceiptFileDrift(t *testing.T) {
	p := newE2E(t, ".claude")
	contextOf(t, p.fire("claude-code", p.payload("claude-code", "session-start.json", nil)))
	files, err := filepath.Glob(filepath.Join(p.dir, ".tree-ring/activation/receipts/claude-code/*/*.json"))
	if err != nil || len(files) != 1 {
		t.Fatalf("receipt files %v %v", files, err)
	}
	rel, _ := filepath.Rel(p.dir, files[0])

	stray := filepath.Join(filepath.Dir(files[0]), ".receipt-x.json.tree-ring-tmp-0123456789abcdef")
	if err := os.WriteFile(stray, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	strayRel, _ := filepath.Rel(p.dir, stray)
	var s struct {
		ReceiptFiles *receiptDrift `json:"receipt_files"`
	}
	if err := json.Unmarshal([]byte(p.cli("--json", "integrations", "status")), &s); err != nil {
		t.Fatal(err)
	}
	if s.ReceiptFiles == nil || len(s.ReceiptFiles.Missing) != 0 || !slices.Equal(s.ReceiptFiles.Strays, []string{strayRel}) {
		t.Fatalf("status with a stray: %+v", s.ReceiptFiles)
	}
	if out := p.cli("audit", "verify"); !strings.Contains(out, "receipt files: 1 file(s) without a retained receipt ("+strayRel+")") {
		t.Fatalf("audit verify with a stray: %s", out)
	}

	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(p.cli("--json", "integrations", "status")), &s); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.ReceiptFiles.Missing, []string{rel}) {
		t.Fatalf("status without the receipt's file: %+v", s.ReceiptFiles)
	}
	r := p.exec(p.dir, "", p.bin, "audit", "verify")
	if r.code != exitVerify || !strings.Contains(r.stderr, "receipt files: 1 retained receipt(s) without their file ("+rel+")") {
		t.Fatalf("audit verify without the receipt's file: %+v", r)
	}
}
