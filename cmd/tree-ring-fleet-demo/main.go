// Command tree-ring-fleet-demo shows the fleet audit end to end with no
// external server: it runs a NATS server with JetStream inside this
// process (loopback only, in a temporary directory), makes three throwaway
// projects with the tree-ring binary, publishes them, collects three
// replicas, shows their status, verifies them, then edits one byte of one
// stored message and shows `fleet verify` exit 3 naming that store. The
// server lives in this separate program so neither tree-ring nor
// tree-ring-fleet (which tree-ring runs for fleet publish and collect, and
// which must be beside it or on PATH) carries it (docs/fleet.md).
//
//	go build -o bin/ ./cmd/tree-ring ./cmd/tree-ring-fleet
//	go run ./cmd/tree-ring-fleet-demo --tree-ring bin/tree-ring
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleettest"
)

func main() {
	bin := flag.String("tree-ring", "", "the tree-ring binary (default: tree-ring beside this program, then on PATH)")
	keep := flag.String("keep", "", "keep the projects, replicas and server files in this new directory")
	flag.Parse()
	if err := run(os.Stdout, *bin, *keep); err != nil {
		fmt.Fprintf(os.Stderr, "tree-ring-fleet-demo: %v\n", err)
		os.Exit(2)
	}
}

type demo struct {
	w         io.Writer
	bin       string
	base, url string // the working directory, the NATS server's URL
	step      int
}

func run(w io.Writer, bin, keep string) error {
	bin, err := findBinary(bin)
	if err != nil {
		return err
	}
	base, cleanup, err := workDir(keep)
	if err != nil {
		return err
	}
	defer cleanup()
	d := &demo{w: w, bin: bin, base: base}
	srv, err := fleettest.Start(filepath.Join(base, "nats"), 0)
	if err != nil {
		return err
	}
	defer srv.Shutdown()
	d.url = srv.URL()
	d.say("Started a NATS server with JetStream inside this demo at %s (loopback only; no tree-ring binary contains it)", d.url)
	d.say("tree-ring runs `fleet publish` and `fleet collect` through its companion tree-ring-fleet (the only binary with the NATS client); `fleet status` and `fleet verify` are its own")

	var stores []string
	for i := 1; i <= 3; i++ {
		id, err := d.project(i)
		if err != nil {
			return err
		}
		stores = append(stores, id)
	}
	out, err := d.tree(base, nil, "--root", filepath.Join(base, "project-1", ".tree-ring"), "fleet", "publish", "--nats", d.url)
	if err != nil {
		return err
	}
	d.say("Published project-1 again: nothing new, nothing sent, nothing appended to its ledger")
	d.show(out)
	if err := d.replicas(); err != nil {
		return err
	}
	return d.tamper(stores[1])
}

// workDir is keep, made new, or a temporary directory that cleanup removes.
func workDir(keep string) (dir string, cleanup func(), err error) {
	if keep != "" {
		if err := os.Mkdir(keep, 0o755); err != nil {
			return "", nil, fmt.Errorf("--keep: %w", err)
		}
		return keep, func() {}, nil
	}
	dir, err = os.MkdirTemp("", "tree-ring-fleet-demo-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// project makes project-i: init, one Claude Code session start, and a
// publish; it returns the store id.
func (d *demo) project(i int) (string, error) {
	proj := filepath.Join(d.base, fmt.Sprintf("project-%d", i))
	root := filepath.Join(proj, ".tree-ring")
	if err := os.MkdirAll(filepath.Join(proj, ".claude"), 0o755); err != nil {
		return "", err
	}
	if _, err := d.tree(proj, nil, "--root", root, "--source-root", proj, "init"); err != nil {
		return "", err
	}
	payload, _ := json.Marshal(map[string]any{
		"session_id": fmt.Sprintf("demo-session-%d", i), "cwd": proj, "hook_event_name": "SessionStart",
		"source": "startup", "model": "claude-sonnet-5",
		"transcript_path": filepath.Join(os.TempDir(), ".claude", "projects", "demo", "session.jsonl"),
	})
	if _, err := d.tree(proj, payload, "--root", root, "integrations", "hook", "--harness", "claude-code", "--input-json-stdin"); err != nil {
		return "", err
	}
	out, err := d.tree(proj, nil, "--root", root, "--json", "fleet", "publish", "--nats", d.url)
	if err != nil {
		return "", err
	}
	var res struct {
		StoreID   string `json:"store_id"`
		Published int    `json:"published"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return "", fmt.Errorf("fleet publish output: %w", err)
	}
	d.say("project-%d: init, one Claude Code session start (a receipt), then `fleet publish`: %d events of store %s", i, res.Published, res.StoreID)
	return res.StoreID, nil
}

// replicas collects the replicas, then shows their status and verifies
// them.
func (d *demo) replicas() error {
	replicas := filepath.Join(d.base, "replicas")
	steps := []struct {
		say  string
		args []string
	}{
		{"`fleet collect --into replicas`: one replica ledger per store, same positions and hash chain",
			[]string{"fleet", "collect", "--nats", d.url, "--into", replicas}},
		{"`fleet status --from replicas`: each project's harness states, replayed as `audit replay` does",
			[]string{"fleet", "status", "--from", replicas}},
		{"`fleet verify --from replicas`: every chain, projection and bbolt check passes",
			[]string{"fleet", "verify", "--from", replicas}},
	}
	for _, s := range steps {
		out, err := d.tree(d.base, nil, s.args...)
		if err != nil {
			return err
		}
		d.say("%s", s.say)
		d.show(out)
	}
	return nil
}

// tamper edits one byte of store's event 3 in the stream, then shows a
// fresh collect stopping that replica and `fleet verify` exiting 3.
func (d *demo) tamper(store string) error {
	if _, err := fleettest.EditMessage(d.url, "TREE_RING", "tree-ring.events."+store, 3, func(b []byte) []byte {
		i := bytes.Index(b, []byte(`"recorded_at":"2026`))
		if i < 0 {
			i = bytes.Index(b, []byte(`"recorded_at":"`))
		}
		j := i + len(`"recorded_at":"`) + 3
		b[j] = '0' + (b[j]-'0'+1)%10
		return b
	}); err != nil {
		return err
	}
	d.say("Edited one byte (a digit of recorded_at) of store %s's event 3 inside the stream", store)
	again := filepath.Join(d.base, "replicas-after-edit")
	out, errOut, code := d.treeCode(d.base, nil, "fleet", "collect", "--nats", d.url, "--into", again, "--durable", "after-edit")
	if code != 0 {
		return fmt.Errorf("fleet collect after the edit: exit %d: %s", code, errOut)
	}
	d.say("A fresh `fleet collect` stops that store's replica at position 3 (the others go on):")
	d.show(errOut + out)
	_, errOut, code = d.treeCode(d.base, nil, "fleet", "verify", "--from", again)
	if code != 3 {
		return fmt.Errorf("fleet verify after the edit exited %d, want 3", code)
	}
	d.say("`fleet verify` now exits %d naming the store and the position:", code)
	d.show(errOut)
	return nil
}

func (d *demo) say(format string, a ...any) {
	d.step++
	fmt.Fprintf(d.w, "%d. %s\n", d.step, fmt.Sprintf(format, a...))
}

func (d *demo) show(out string) {
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		fmt.Fprintf(d.w, "     %s\n", l)
	}
}

func (d *demo) tree(dir string, stdin []byte, args ...string) (string, error) {
	out, errOut, code := d.treeCode(dir, stdin, args...)
	if code != 0 {
		return "", fmt.Errorf("tree-ring %s: exit %d: %s", strings.Join(args, " "), code, strings.TrimSpace(errOut))
	}
	return out, nil
}

func (d *demo) treeCode(dir string, stdin []byte, args ...string) (string, string, int) {
	cmd := exec.Command(d.bin, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	case err != nil:
		return "", err.Error(), -1
	}
	return out.String(), errb.String(), 0
}

// findBinary resolves --tree-ring, or tree-ring beside this program, or on
// PATH.
func findBinary(bin string) (string, error) {
	if bin == "" {
		if self, err := os.Executable(); err == nil {
			if c := filepath.Join(filepath.Dir(self), "tree-ring"); isFile(c) {
				bin = c
			}
		}
	}
	if bin == "" {
		p, err := exec.LookPath("tree-ring")
		if err != nil {
			return "", errors.New("no tree-ring binary: build one (go build -o tree-ring ./cmd/tree-ring) and pass --tree-ring PATH")
		}
		bin = p
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	if !isFile(abs) {
		return "", fmt.Errorf("%s is not a file", abs)
	}
	return abs, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
