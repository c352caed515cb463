package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events/receipt"
)

// installFakePi lays out an npm install of Pi under prefix (the package's
// package.json, dist/cli.js, bin/pi a symlink to it) and returns the bin
// directory. The entry script would leave a file if anything ran it.
func installFakePi(t *testing.T, prefix, name, version string) string {
	t.Helper()
	pkg := filepath.Join(prefix, "lib", "node_modules", filepath.FromSlash(name))
	files := map[string]string{
		filepath.Join(pkg, "package.json"):   `{"name":"` + name + `","version":"` + version + `","bin":{"pi":"dist/cli.js"}}`,
		filepath.Join(pkg, "dist", "cli.js"): "#!/bin/sh\ntouch " + filepath.Join(prefix, "pi-ran") + "\n",
	}
	for path, data := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(prefix, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(pkg, "dist", "cli.js"), filepath.Join(bin, "pi")); err != nil {
		t.Fatal(err)
	}
	return bin
}

// Status reads the installed Pi's version and trust, read-only, and
// records nothing: the state follows the Pi on PATH and its trust.json.
func TestStatusPiTrust(t *testing.T) {
	p := newHP(t, ".pi")
	p.init()
	base := filepath.Dir(p.dir)
	old := installFakePi(t, filepath.Join(base, "npm-old"), "@mariozechner/pi-coding-agent", "0.73.1")
	gated := installFakePi(t, filepath.Join(base, "npm-new"), "@earendil-works/pi-coding-agent", "1.6.0")
	trust := filepath.Join(p.home, ".pi", "agent", "trust.json")
	before := p.eventTypes()
	for _, c := range []struct {
		name, path, trust string
		state, next       string
	}{
		{"no pi on PATH", "", "", "needs-trust", "Tree Ring could not read the installed Pi's version"},
		{"Pi 0.73.1 has no trust gate", old, "", "configured-awaiting-proof", "Open a new Pi session"},
		{"Pi 1.6.0, untrusted", gated + string(filepath.ListSeparator) + old, "", "needs-trust", "The installed Pi skips this project's extensions"},
		{"Pi 1.6.0, distrusted", gated, `{"` + p.dir + `":false}`, "needs-trust", "The installed Pi skips"},
		{"Pi 1.6.0, trusted", gated, `{"` + p.dir + `":true}`, "configured-awaiting-proof", "Open a new Pi session"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p.env["PATH"] = c.path
			os.Remove(trust)
			if c.trust != "" {
				if err := os.MkdirAll(filepath.Dir(trust), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(trust, []byte(c.trust), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			e := p.status()["pi"]
			if e["state"] != c.state || !strings.HasPrefix(e["next_step"].(string), c.next) {
				t.Errorf("pi: %v %q", e["state"], e["next_step"])
			}
		})
	}
	if got := p.eventTypes(); !slices.Equal(got, before) {
		t.Errorf("status appended %v", got[len(before):])
	}
	for _, dir := range []string{old, gated} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "pi-ran")); err == nil {
			t.Error("status ran pi")
		}
	}
	if strings.Contains(string(treeBytes(t, filepath.Join(p.dir, ".tree-ring"))), base) {
		t.Error("an absolute path reached the store")
	}
}

// A Pi preflight that fails after tree-ring ran (the extension then
// starts Pi without memory) is recorded as preflight.failed, and status
// shows the harness failed with its diagnostic code until a preflight
// succeeds.
func TestPreflightPiFailureInStatus(t *testing.T) {
	p := newHP(t, ".pi")
	p.init()
	dir := filepath.Join(p.dir, receipt.WorkerDir("pi", "pi"))
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := `{"agent_profile":"pi","workflow_id":"/home/u/.pi/sessions/s.jsonl","session_id":"/home/u/.pi/sessions/s.jsonl","task_hint":"hello"}`
	args := []string{"integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start"}
	before := p.eventTypes()
	r := p.run(in, args...)
	if r.code == 0 || r.stdout != "" {
		t.Fatalf("exit %d stdout %q", r.code, r.stdout)
	}
	if got := p.eventTypes(); !slices.Equal(got[len(before):], []string{"run.started", "run.finished", "preflight.failed"}) {
		t.Fatalf("events appended: %v", got[len(before):])
	}
	e := p.status()["pi"]
	diag, _ := e["diagnostic"].(string)
	if e["state"] != "failed" || diag == "" || !strings.Contains(e["next_step"].(string), "diagnostic "+diag) {
		t.Fatalf("status after the failed preflight: %v", e)
	}
	if out := p.ok("", "integrations", "status"); !strings.Contains(out, diag) {
		t.Errorf("the human status does not show the diagnostic:\n%s", out)
	}
	os.Remove(dir)
	if r := p.run(in, args...); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if e := p.status()["pi"]; e["state"] != "active" || e["diagnostic"] != nil {
		t.Errorf("a successful preflight clears the failure: %v", e)
	}
}
