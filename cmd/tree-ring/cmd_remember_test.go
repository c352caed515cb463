package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/projections"
)

// testNonce is the deterministic body nonce source of every test's deps:
// one sequence across the test process, so that no two bodies share one.
func testNonce() string { return fmt.Sprintf("%032x", testNonces.Add(1)) }

var testNonces atomic.Uint64

// memCLI runs several invocations against one root with one clock and one
// id sequence across them (runCLI restarts both per call), and an
// environment.
type memCLI struct {
	t    *testing.T
	root string
	d    deps
	env  map[string]string
}

func newMemCLI(t *testing.T) *memCLI {
	t.Helper()
	now := eventstest.Clock(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), time.Second)
	var n uint64
	return &memCLI{t: t, root: filepath.Join(t.TempDir(), ".tree-ring"), env: map[string]string{}, d: deps{Clock: Clock{Now: now, NewID: func() ulid.ULID {
		n++
		var id ulid.ULID
		_ = id.SetTime(ulid.Timestamp(now()))
		copy(id[6:], fmt.Sprintf("%010d", n))
		return id
	}, Nonce: testNonce}}}
}

func (c *memCLI) run(stdin string, args ...string) result {
	c.t.Helper()
	return invocation{deps: c.d, env: c.env, stdin: stdin}.run(append([]string{"--root", c.root}, args...)...)
}

// ok runs and requires exit 0 and an empty stderr.
func (c *memCLI) ok(args ...string) string {
	c.t.Helper()
	r := c.run("", args...)
	if r.code != 0 || r.stderr != "" {
		c.t.Fatalf("%v: exit %d\nstdout %q\nstderr %q", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs and requires exit 2, nothing on stdout and the message.
func (c *memCLI) fails(want string, args ...string) {
	c.t.Helper()
	r := c.run("", args...)
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, want) {
		c.t.Fatalf("%v: exit %d\nstdout %q\nstderr %q\nwant %q", args, r.code, r.stdout, r.stderr, want)
	}
}

// events returns the ledger's envelopes.
func (c *memCLI) events() []events.Envelope {
	c.t.Helper()
	st, err := bolt.OpenRoot(c.root, bolt.Options{ReadOnly: true, Projections: projections.All()})
	if err != nil {
		c.t.Fatal(err)
	}
	defer st.Close()
	var out []events.Envelope
	if err := st.ReadAll(context.Background(), 0, func(e *events.Envelope) error {
		c := *e
		c.Payload = bytes.Clone(e.Payload) // valid only during the callback
		out = append(out, c)
		return nil
	}); err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *memCLI) verify() {
	c.t.Helper()
	c.ok("audit", "verify")
}

func decodeRecord(t *testing.T, s string) memory.Record {
	t.Helper()
	var r memory.Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return r
}

// grepRoot reports every file under root whose bytes contain needle.
func grepRoot(t *testing.T, root, needle string) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(needle)) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func TestRememberOutputs(t *testing.T) {
	c := newMemCLI(t)
	id := strings.TrimSpace(c.ok("remember", "Use pnpm, not npm", "--event-type", "decision", "--project", "demo"))
	if !strings.HasPrefix(id, "mem_20261101_12000") || len(id) != len("mem_20261101_120001_")+12 {
		t.Fatalf("id %q", id)
	}
	out := c.ok("--json", "remember", "Rollback if the canary fails", "--event-type", "warning", "--ring", "scar",
		"--project", "demo", "--source-ref", "docs/runbook.md", "--tag", "deploy", "--tag", "a,b")
	r := decodeRecord(t, out)
	if r.Ring != "scar" || r.Scope != "global" || r.Source.Type != "agent" || r.Source.Ref != "docs/runbook.md" ||
		strings.Join(r.Tags, "|") != "deploy|a,b" || r.Salience != 0.5 || r.Sensitivity != "normal" || r.Review.NeedsReview {
		t.Fatalf("record %+v", r)
	}
	// The published field order and nulls.
	if !strings.HasPrefix(out, `{"id":"`+r.ID+`","created_at":"2026-11-01T12:00:`) ||
		!strings.Contains(out, `"agent_profile":null,"workflow_id":null,"session_id":null,"operation_id":null,"scope":"global","ring":"scar","event_type":"warning","summary":"Rollback if the canary fails","details":"","source":{"type":"agent","ref":"docs/runbook.md","quote":""},"tags":["deploy","a,b"],"salience":0.5,"confidence":0.5,"sensitivity":"normal","retention":"normal","expires_at":null,"supersedes":[],"superseded_by":null,"links":[],"review":{"needs_review":false,"review_reason":null,"reviewed_at":null,"reviewed_by":null}}`) {
		t.Fatalf("json shape: %s", out)
	}
	// The event carries the digest, never the text.
	evs := c.events()
	if len(evs) != 2 || evs[1].Type != events.TypeMemoryCaptured || evs[1].Stream != "memory/"+r.ID {
		t.Fatalf("events %v", evs)
	}
	for _, e := range evs {
		for _, text := range []string{"pnpm", "Rollback", "runbook", "deploy"} {
			if bytes.Contains(e.Payload, []byte(text)) {
				t.Errorf("payload holds %q: %s", text, e.Payload)
			}
		}
	}
	c.fails("remember needs --event-type", "remember", "x")
	c.fails("invalid ring", "remember", "x", "--event-type", "e", "--ring", "bark")
	c.fails("scope agent requires agent_profile", "remember", "x", "--event-type", "e", "--scope", "agent")
	c.fails("salience must be a finite number between 0 and 1", "remember", "x", "--event-type", "e", "--salience", "2")
	c.fails("--supersedes: memory mem_nope not found", "remember", "x", "--event-type", "e", "--supersedes", "mem_nope")
	if n := len(c.events()); n != 2 {
		t.Fatalf("a refused remember appended: %d events", n)
	}
	c.verify()
}

func TestRememberEnvironmentDefaults(t *testing.T) {
	c := newMemCLI(t)
	c.env[envAgentProfile], c.env[envWorkflowID], c.env[envSessionID] = "codex", "wf-7", "s-7"
	r := decodeRecord(t, c.ok("--json", "remember", "x", "--event-type", "e", "--scope", "agent", "--project", "p"))
	if memory.Deref(r.AgentProfile) != "codex" || memory.Deref(r.WorkflowID) != "wf-7" || memory.Deref(r.SessionID) != "s-7" {
		t.Fatalf("%+v", r)
	}
	r = decodeRecord(t, c.ok("--json", "remember", "y", "--event-type", "e", "--agent-profile", "pi"))
	if memory.Deref(r.AgentProfile) != "pi" {
		t.Fatal("a flag beats the environment")
	}
}

func TestOperationIDIdempotency(t *testing.T) {
	c := newMemCLI(t)
	args := []string{"remember", "Pin Node 22", "--event-type", "decision", "--project", "p", "--agent-profile", "a", "--workflow-id", "w", "--session-id", "s1", "--operation-id", "op-1"}
	first := strings.TrimSpace(c.ok(args...))
	n := len(c.events())
	// Exact retry: the existing id, nothing appended.
	if again := strings.TrimSpace(c.ok(args...)); again != first {
		t.Fatalf("retry returned %s, want %s", again, first)
	}
	if len(c.events()) != n {
		t.Fatal("an exact retry appended")
	}
	// Another session in the same namespace is a different write intent.
	changed := append([]string{}, args...)
	changed[11] = "s2"
	c.fails("operation_id op-1 is already bound to a different memory write", changed...)
	changed = append([]string{}, args...)
	changed[1] = "Pin Node 20"
	c.fails("operation_id op-1 is already bound to a different memory write", changed...)
	if len(c.events()) != n {
		t.Fatal("a conflicting write appended")
	}
	// Another namespace (workflow) is free to reuse the key.
	other := append([]string{}, args...)
	other[1], other[9] = "Pin Node 22 in CI", "w2" // other words: not a duplicate of the first
	if id := strings.TrimSpace(c.ok(other...)); id == first {
		t.Fatal("another namespace returned the first memory")
	}
	// A redaction keeps the claim; a delete releases it.
	c.ok("forget", first, "--mode", "redact", "--reason", "r")
	c.fails("already bound to a different memory write", args...)
	c.ok("forget", first, "--mode", "delete", "--reason", "r")
	if id := strings.TrimSpace(c.ok(args...)); id == first {
		t.Fatal("released claim returned the deleted memory")
	}
	c.verify()
}

func TestSecretLikeContentLeavesNoTrace(t *testing.T) {
	c := newMemCLI(t)
	const secret = "ghp_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210"
	c.fails("secret-like memory is blocked by policy", "remember", "deploy token is "+secret, "--event-type", "note", "--project", "p")
	if _, err := os.Stat(c.root); !os.IsNotExist(err) {
		t.Fatalf("a refused write created the root: %v", err)
	}
	// With an existing store, a secret in any field writes nothing.
	c.ok("remember", "harmless", "--event-type", "note", "--project", "p")
	before := len(c.events())
	c.fails("secret-like memory is blocked by policy", "remember", "ok", "--event-type", "note", "--tag", "PASSWORD=hunter2hunter2")
	c.fails("secret-like memory is blocked by policy", "remember", "ok", "--event-type", "note", "--project", secret)
	c.fails("secret-like memory is blocked by policy", "capture", "uses "+secret, "--event-type", "lesson", "--project", "p",
		"--agent-profile", "a", "--workflow-id", "w", "--session-id", "s", "--operation-id", "auto-cp1-1", "--source-ref", "agent-checkpoint:cp1")
	r := c.run("", "import", "-")
	_ = r
	line := fmt.Sprintf(`{"id":"mem_imp","summary":"key %s","event_type":"note","project":"p"}`, secret)
	if r := c.run(line+"\n", "import", "-"); r.code != 2 || !strings.Contains(r.stderr, "-:1: secret-like memory is blocked by policy") || strings.Contains(r.stderr, "ghp_") {
		t.Fatalf("import: %+v", r)
	}
	// The refused import is a recorded failed run (issue 24), nothing more.
	if d, failed := c.ledgerSplit(); d != before || len(failed) != 1 {
		t.Fatalf("a refused write appended: %d domain events, failed runs %v", d, failed)
	}
	for _, needle := range []string{secret, "hunter2hunter2", "ZyXwVuTsRq"} {
		if hits := grepRoot(t, c.root, needle); len(hits) != 0 {
			t.Fatalf("%q found in %v", needle, hits)
		}
	}
}
