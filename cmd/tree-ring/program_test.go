package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
)

// programEvents are the program.installed payloads, oldest first.
func (p *hp) programEvents() []events.ProgramInstalled {
	p.t.Helper()
	var out []events.ProgramInstalled
	for _, l := range strings.Split(strings.TrimSpace(p.ok("", "events", "--type", events.TypeProgramInstalled)), "\n") {
		if l == "" {
			continue
		}
		var e struct{ Payload events.ProgramInstalled }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			p.t.Fatal(err)
		}
		out = append(out, e.Payload)
	}
	return out
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// The installed program is part of the proof (issue 12 item 4): init
// records it; a truncated, replaced, missing or non-executable program, or
// one another account could change (writable by group or others, setuid
// or setgid, or in such a directory: issue 24 item 4), is failed in status and refused by the hook, with the exact repair, and no
// receipt is written.
func TestInstalledProgramDamaged(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, path string)
		diag   string
		repair string
	}{
		{"truncated", func(t *testing.T, path string) { os.Truncate(path, 5) }, adapters.ProgramDiffers, "move it aside"},
		{"replaced, same size", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			b[len(b)-2] = '1'
			os.Remove(path)
			os.WriteFile(path, b, 0o755)
		}, adapters.ProgramDiffers, "run `tree-ring init`"},
		{"missing", func(t *testing.T, path string) { os.Remove(path) }, adapters.ProgramMissing, "run `tree-ring init`"},
		{"not executable", func(t *testing.T, path string) { os.Chmod(path, 0o644) }, adapters.ProgramNotExecutable, "chmod 755"},
		// Issue 24 item 4: modes that let another account change it.
		{"world-writable", func(t *testing.T, path string) { os.Chmod(path, 0o777) }, adapters.ProgramUnsafeMode, "`chmod 755 " + adapters.BinaryPath + "`"},
		{"setuid", func(t *testing.T, path string) { os.Chmod(path, 0o755|os.ModeSetuid) }, adapters.ProgramUnsafeMode, "setuid or setgid"},
		{"directory world-writable", func(t *testing.T, path string) { os.Chmod(filepath.Dir(path), 0o777) }, adapters.ProgramUnsafeMode,
			"`chmod 755 " + adapters.BinaryDir + "`"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newHP(t, ".codex", ".claude")
			bin := filepath.Join(p.dir, adapters.BinaryPath)
			stub := sha256File(t, bin)
			p.init()
			evs := p.programEvents()
			if len(evs) != 1 || evs[0].Reason != events.ProgramReasonAdopted || evs[0].SHA256 != stub || evs[0].Path != adapters.BinaryPath {
				t.Fatalf("program events %+v, want the stub adopted", evs)
			}
			if r := p.hook("codex", p.payload("codex", "session-start.json", nil)); r.code != 0 {
				t.Fatal(r.stderr)
			}
			receipts := p.receipts()
			c.damage(t, bin)
			all := p.status()
			for _, id := range []string{"codex", "claude-code"} {
				st := all[id]
				if st["state"] != "failed" || st["diagnostic"] != c.diag || !strings.Contains(st["next_step"].(string), c.repair) {
					t.Fatalf("%s: %v", id, st)
				}
			}
			r := p.hook("codex", p.payload("codex", "session-start.json", nil))
			if r.code == 0 || r.stdout != "" || !strings.Contains(r.stderr, adapters.BinaryPath) || !strings.Contains(r.stderr, c.repair) {
				t.Fatalf("hook: %d %q %q", r.code, r.stdout, r.stderr)
			}
			if got := p.receipts(); len(got) != len(receipts) {
				t.Fatalf("a receipt was written: %v", got)
			}
			// The refused preflight is recorded failed with the code.
			if n := count(p.eventTypes(), "preflight.failed"); n != 1 {
				t.Fatalf("%d preflight.failed events", n)
			}
			if st := p.status()["codex"]; st["state"] != "failed" || st["diagnostic"] != c.diag {
				t.Fatalf("after the refused hook: %v", st)
			}
		})
	}
}

// Upgrading is a recorded event, never a silent swap: init never replaces
// a program that differs from the record (the file is untouched and the
// message names the repair); after the user moves it aside, init installs
// the running build and records it as upgraded, naming the previous
// digest; status is back to awaiting proof.
func TestInstalledProgramUpgrade(t *testing.T) {
	p := newHP(t, ".codex")
	bin := filepath.Join(p.dir, adapters.BinaryPath)
	p.init()
	old := sha256File(t, bin)
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho another build\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	swapped := sha256File(t, bin)
	r := p.run("", "init")
	if r.code != 2 || !strings.Contains(r.stderr, "differs from the program init recorded") || !strings.Contains(r.stderr, "mv "+adapters.BinaryPath) {
		t.Fatalf("init over a swapped program: %d %s", r.code, r.stderr)
	}
	if sha256File(t, bin) != swapped || len(p.programEvents()) != 1 {
		t.Fatal("init replaced the program or recorded the swap")
	}
	if err := os.Rename(bin, bin+".replaced"); err != nil {
		t.Fatal(err)
	}
	p.program = "#!/bin/sh\necho a newer build\n"
	p.init()
	evs := p.programEvents()
	newer := sha256.Sum256([]byte(p.program))
	if len(evs) != 2 || evs[1].Reason != events.ProgramReasonUpgraded || evs[1].PreviousSHA256 != old || evs[1].SHA256 != hex.EncodeToString(newer[:]) {
		t.Fatalf("program events %+v", evs)
	}
	if evs[1].SHA256 != sha256File(t, bin) {
		t.Fatal("the recorded digest is not the installed file's")
	}
	if fi, err := os.Stat(bin); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed program: %v %v", fi, err)
	}
	if st := p.state("codex"); st != "configured-awaiting-proof" {
		t.Fatalf("after the upgrade: %s", st)
	}
	if r := p.hook("codex", p.payload("codex", "session-start.json", nil)); r.code != 0 {
		t.Fatalf("hook after the upgrade: %s", r.stderr)
	}
	// Init again: nothing to do, nothing recorded.
	p.init()
	if n := len(p.programEvents()); n != 2 {
		t.Fatalf("%d program events after a no-op init", n)
	}
}

// The observed failure: init installed the real binary, a half-written
// copy later stands in its place; every hook command line then dies of a
// signal, and status (run by another tree-ring) says failed with the repair.
func TestInstalledProgramTruncatedE2E(t *testing.T) {
	p := newE2E(t, ".codex")
	bin := filepath.Join(p.dir, adapters.BinaryPath)
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(bin, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	r := p.exec(p.dir, "", p.bin, "--json", "integrations", "status")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	var s struct {
		Integrations []map[string]any `json:"integrations"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range s.Integrations {
		found = found || e["id"] == "codex"
		if e["id"] == "codex" && (e["state"] != "failed" || e["diagnostic"] != adapters.ProgramDiffers ||
			!strings.Contains(e["next_step"].(string), "is shorter than the program init recorded")) {
			t.Fatalf("codex: %v", e)
		}
	}
	if !found {
		t.Fatal("status lists no codex")
	}
}

// A half-written copy of this build with no record (an older build's
// interrupted install) is never adopted: init refuses it with the repair.
func TestInstalledProgramPartialNotAdopted(t *testing.T) {
	p := newHP(t, ".codex")
	p.program = "#!/bin/sh\n" + strings.Repeat("# a build larger than the part on disk\n", 200)
	bin := filepath.Join(p.dir, adapters.BinaryPath)
	if err := os.WriteFile(bin, []byte(p.program[:4096]), 0o755); err != nil {
		t.Fatal(err)
	}
	r := p.run("", "init")
	if r.code == 0 || !strings.Contains(r.stderr, "partial copy") || !strings.Contains(r.stderr, "remove "+adapters.BinaryPath) {
		t.Fatalf("init: %d %s", r.code, r.stderr)
	}
	if fi, _ := os.Stat(bin); fi.Size() != 4096 {
		t.Fatal("init replaced the partial copy")
	}
	if evs := p.programEvents(); len(evs) != 0 {
		t.Fatalf("recorded: %+v", evs)
	}
}

// foreignScript is the finding of issue 24 item 1: a committed program
// that logs every run and then execs the real binary (bin).
func foreignScript(bin string) string {
	return "#!/bin/sh\necho ran >> \"$0.log\"\nexec '" + bin + "' \"$@\"\n"
}

// The program is ours or it is not run (issue 24 item 1): a repository
// that commits .claude/ (with or without Tree Ring's hook entries) and an
// executable .tree-ring/bin/tree-ring gets no adoption of that program
// from init: nothing is recorded, no bridge that would run it is written,
// Claude Code is needs-user-review with the exact command that moves it
// aside, and status never says active, even after the committed hook ran
// it. Every pre-existing file is untouched (proj.run hashes them around
// each command). Moving it aside as told makes init install and record the
// running build and publish the bridge.
func TestForeignProgramNeverAdopted(t *testing.T) {
	for _, committedHooks := range []bool{false, true} {
		t.Run(map[bool]string{false: ".claude only", true: ".claude with Tree Ring's hooks"}[committedHooks], func(t *testing.T) {
			p := newProj(t, ".claude")
			p.write(adapters.BinaryPath, foreignScript(p.bin))
			if err := os.Chmod(p.path(adapters.BinaryPath), 0o755); err != nil {
				t.Fatal(err)
			}
			if committedHooks {
				p.write(".claude/settings.json", string(adapters.ClaudeSettingsSnippet()))
			}
			var out struct {
				Integrations []initEntry `json:"integrations"`
			}
			p.reviewJSON(&out, "init")
			move := "mv " + adapters.BinaryPath + " " + adapters.BinaryPath + ".foreign"
			var claude *initEntry
			for i, e := range out.Integrations {
				if e.ID == "claude-code" {
					claude = &out.Integrations[i]
				}
			}
			if claude == nil || claude.State != "needs-user-review" || !strings.Contains(claude.NextStep, move) || len(claude.ChangedPaths) != 0 {
				t.Fatalf("init: %+v", out.Integrations)
			}
			if !committedHooks && p.exists(".claude/settings.json") {
				t.Fatal("init wrote hooks that run the foreign program")
			}
			for _, e := range p.events() {
				if e.Type == events.TypeProgramInstalled || e.Type == events.TypeBridgePublished && e.Stream == events.HarnessStream("claude-code") {
					t.Fatalf("recorded %s %s", e.Type, e.Payload)
				}
			}
			assertForeign := func(when string) {
				t.Helper()
				var st struct {
					Integrations []map[string]any `json:"integrations"`
				}
				p.json(&st, "integrations", "status")
				for _, e := range st.Integrations {
					if e["id"] == "claude-code" && (e["state"] != "needs-user-review" || e["diagnostic"] != adapters.ProgramForeign || !strings.Contains(e["next_step"].(string), move)) {
						t.Fatalf("%s: status %v", when, e)
					}
				}
			}
			assertForeign("after init")
			if committedHooks {
				// The committed hook runs the foreign program (Tree Ring cannot
				// stop that), which execs the real one: still no proof.
				payload, err := os.ReadFile(filepath.Join("..", "..", "testdata", "harness-payloads", "claude-code", "session-start.json"))
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := json.Unmarshal(payload, &m); err != nil {
					t.Fatal(err)
				}
				m["cwd"] = p.dir
				payload, _ = json.Marshal(m)
				cmd := exec.Command("sh", "-c", adapters.HookCommand("claude-code"))
				cmd.Dir, cmd.Env, cmd.Stdin = p.dir, []string{"HOME=" + p.home, "PATH=/usr/bin:/bin"}, bytes.NewReader(payload)
				cmd.CombinedOutput()
				if !p.exists(adapters.BinaryPath + ".log") {
					t.Fatal("the committed hook did not run the foreign program")
				}
				assertForeign("after the committed hook ran it")
			}
			// The step, as written, then init.
			if err := exec.Command("sh", "-c", "cd '"+p.dir+"' && "+move).Run(); err != nil {
				t.Fatal(err)
			}
			r := p.run("init")
			if r.code != 0 && r.code != exitReview {
				t.Fatalf("init after the move: %d %s", r.code, r.stderr)
			}
			exe := sha256File(t, p.bin)
			var installed bool
			for _, e := range p.events() {
				installed = installed || e.Type == events.TypeProgramInstalled && strings.Contains(string(e.Payload), exe)
			}
			if !installed || sha256File(t, p.path(adapters.BinaryPath)) != exe {
				t.Fatal("init did not install and record the running build")
			}
			// activation.json records the review the foreign program caused;
			// publishing now changes that record: reconcile's recorded step.
			if r, changed := p.apply(); r.code != 0 || !slices.Equal(changed, []string{adapters.ManifestPath}) {
				t.Fatalf("reconcile --apply after the move: %d %s, changed %v", r.code, r.stderr, changed)
			}
			var st struct {
				Integrations []map[string]any `json:"integrations"`
			}
			p.json(&st, "integrations", "status")
			for _, e := range st.Integrations {
				if e["id"] == "claude-code" && e["state"] != "configured-awaiting-proof" {
					t.Fatalf("after the move: %v", e)
				}
			}
		})
	}
}
