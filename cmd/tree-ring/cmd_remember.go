package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/projections"
	"github.com/tree-ring/tree-ring/projections/recall"
)

// Environment defaults of the identity flags of remember and recall, as
// published.
const (
	envAgentProfile = "TREE_RING_AGENT_PROFILE"
	envWorkflowID   = "TREE_RING_WORKFLOW_ID"
	envSessionID    = "TREE_RING_SESSION_ID"
)

type rememberOptions struct {
	EventType, Ring, Scope                           string
	AgentProfile, WorkflowID, SessionID, OperationID string
	SourceRef, ExpiresAt                             string
	Project                                          projectFlag
	Tags, Supersedes                                 []string
	Salience, Confidence                             float64
	AllowDuplicate                                   bool
}

func (o *rememberOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.EventType, "event-type", "", "kind of memory, e.g. decision, lesson, warning (required)")
	fs.StringVar(&o.Ring, "ring", memory.DefaultRing, "cambium, outer, inner, heartwood, scar or seed")
	fs.StringVar(&o.Scope, "scope", memory.DefaultScope, "global, project, agent, session, workflow, tool, eval, manual, dox or revolve")
	fs.Var(&o.Project, "project", projectUsage+"; --project \"\" stores none, and then the memory never reaches a session brief")
	fs.StringVar(&o.AgentProfile, "agent-profile", "", "agent profile (default $"+envAgentProfile+")")
	fs.StringVar(&o.WorkflowID, "workflow-id", "", "workflow id (default $"+envWorkflowID+")")
	fs.StringVar(&o.SessionID, "session-id", "", "session id (default $"+envSessionID+")")
	fs.StringVar(&o.OperationID, "operation-id", "", "idempotency key within (project, workflow, agent profile)")
	fs.StringVar(&o.SourceRef, "source-ref", "", "where this came from (sets source type agent)")
	fs.StringArrayVar(&o.Tags, "tag", nil, "tag (repeatable)")
	fs.Float64Var(&o.Salience, "salience", memory.DefaultSalience, "importance in [0,1]")
	fs.Float64Var(&o.Confidence, "confidence", memory.DefaultConfidence, "confidence in [0,1]")
	fs.StringVar(&o.ExpiresAt, "expires-at", "", "RFC 3339 instant after which the memory is not recalled")
	fs.StringArrayVar(&o.Supersedes, "supersedes", nil, "id of a memory this one replaces (repeatable)")
	fs.BoolVar(&o.AllowDuplicate, "allow-duplicate", false, allowDuplicateUsage)
}

// oneSummary is the usage error of remember or capture given other than one
// SUMMARY. A flag-like word among the arguments can only have come after
// "--", where everything is text: say so (naming no argument).
func oneSummary(cmd string, args []string) error {
	for _, a := range args {
		if len(a) > 2 && strings.HasPrefix(a, "--") {
			return usagef("%s needs exactly one SUMMARY (quote it); everything after \"--\" is text, so put the flags before it, e.g. tree-ring %s --event-type lesson -- \"-x ...\"", cmd, cmd)
		}
	}
	return usagef("%s needs exactly one SUMMARY (quote it)", cmd)
}

const allowDuplicateUsage = "store it even if an active memory in the same scope has the same summary (by default that memory's id is printed and nothing is written)"

func init() {
	register("remember", "SUMMARY", "store a memory (its text stays deletable; secret-like text is refused)", runRemember)
}

func runRemember(ctx context.Context, g *Globals, o *rememberOptions, args []string) error {
	if len(args) != 1 {
		return oneSummary("remember", args)
	}
	if o.EventType == "" {
		return usagef("remember needs --event-type")
	}
	project := o.Project.orAlias(g)
	if project == "" && o.Project.set {
		fmt.Fprintln(g.Stderr, "tree-ring: this memory names no project, so no project's session brief will show it (omit --project to store it for this project)")
	}
	now, random := newMemoryID(g)
	rec, err := memory.Remember(memory.RememberRequest{
		Summary: args[0], EventType: o.EventType, Ring: o.Ring, Scope: o.Scope,
		Project: project, AgentProfile: orEnv(g, o.AgentProfile, envAgentProfile),
		WorkflowID: orEnv(g, o.WorkflowID, envWorkflowID), SessionID: orEnv(g, o.SessionID, envSessionID),
		OperationID: o.OperationID, SourceRef: o.SourceRef, ExpiresAt: o.ExpiresAt,
		Tags: o.Tags, Supersedes: o.Supersedes, Salience: o.Salience, Confidence: o.Confidence,
	}, now, random)
	if err != nil {
		return err
	}
	return writeMemory(ctx, g, rec, events.OriginRemember, o.AllowDuplicate)
}

const projectUsage = "project the memory belongs to (default in a project: its alias, the name the session brief recalls)"

// projectFlag is --project of remember and capture: whether it was given
// tells "no project" (--project "") from the default.
type projectFlag struct {
	v   string
	set bool
}

func (p *projectFlag) String() string { return p.v }
func (p *projectFlag) Type() string   { return "string" }
func (p *projectFlag) Set(v string) error {
	p.v, p.set = v, true
	return nil
}

// orAlias is the flag's value, or, when it was not given and --root is the
// project's own store, the project's alias: the name the lifecycle
// preflight recalls (preflight.ProjectName), so that the memory reaches
// the next session's brief.
func (p *projectFlag) orAlias(g *Globals) string {
	if p.set {
		return p.v
	}
	if canonical, ok := g.projectStore(); ok {
		_, alias := preflight.ProjectName(canonical)
		return alias
	}
	return ""
}

// newMemoryID reads the clock and draws a new memory id's random part
// from the id source.
func newMemoryID(g *Globals) (time.Time, [6]byte) {
	now := g.Now()
	id := g.NewID()
	var random [6]byte
	copy(random[:], id[10:])
	return now, random
}

func orEnv(g *Globals, v, env string) string {
	if v == "" && g.Getenv != nil {
		return g.Getenv(env)
	}
	return v
}

// randomNonce salts each body (see memory.NewWrite): Clock.Nonce's
// default.
func randomNonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// memIndex is what the memory write rules read, inside one transaction:
// the recall and duplicate indexes and the memory streams.
type memIndex struct {
	kv, dups recall.KV
	bodies   recall.Bodies
	version  func(stream string) uint64
}

// memLedger is a write transaction (*bolt.Tx) or a read snapshot
// (*bolt.Reader).
type memLedger interface {
	Projection(name string) recall.KV
	Body(digest string) []byte
	StreamVersion(stream string) uint64
}

func txIndex(v memLedger) memIndex {
	return memIndex{kv: v.Projection(recall.Name), dups: v.Projection(projections.DuplicatesName), bodies: v, version: v.StreamVersion}
}

func (x memIndex) Exists(id string) bool { return x.version(events.MemoryStream(id)) != 0 }

func (x memIndex) Claimed(claim [32]byte) (string, bool) { return recall.Claimed(x.kv, claim) }

func (x memIndex) Lookup(id string) (memory.Record, bool, bool, error) {
	rec, st, ok, err := recall.Lookup(x.kv, x.bodies, id)
	return rec, st.Redacted, ok, err
}

func (x memIndex) SameSummary(key [32]byte) ([]string, error) {
	return projections.SameSummary(x.dups, key)
}

// writeMemory stores a prepared record (remember, capture): in one
// transaction it plans the write (memory.PlanRemember), stores the body,
// appends memory.captured (and memory.superseded for each replaced
// memory), and prints the stored memory. An exact retry or a duplicate
// appends no memory event and prints the existing memory; a capture's run
// is still recorded for a duplicate (items 0), so the audit shows the
// checkpoint's candidate and that it added nothing.
func writeMemory(ctx context.Context, g *Globals, rec memory.Record, origin string, allowDuplicate bool) error {
	out, dup, err := storeMemory(ctx, g, &rec, origin, allowDuplicate)
	if err != nil {
		if indeterminate(err) {
			return &retryHint{err: err, idempotent: rec.OperationID != nil || !allowDuplicate}
		}
		return err
	}
	if dup && !g.JSON {
		fmt.Fprintf(g.Stderr, "tree-ring: %s already holds this summary in the same scope; nothing written (--allow-duplicate stores another)\n", out.ID)
	}
	if err := printMemory(g, &out); err != nil {
		// Stored: a retry prints it again (the same --operation-id, or
		// the same summary in the same scope, stores nothing twice).
		return &OutputError{Err: err}
	}
	return nil
}

// storeMemory runs writeMemory's transaction: out is the stored memory, or
// the existing one (dup: a duplicate of it).
func storeMemory(ctx context.Context, g *Globals, rec *memory.Record, origin string, allowDuplicate bool) (out memory.Record, dup bool, err error) {
	// capture is a recorded run (docs/runs.md); its whole work is the one
	// transaction below, so the record rides in it.
	var scope string
	if origin == events.OriginCapture {
		if scope, err = g.CLIScope(); err != nil {
			return out, false, err
		}
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return out, false, err
	}
	defer st.Close()
	err = st.Update(ctx, func(tx *bolt.Tx) error {
		out, dup, err = rememberIn(g, tx, st, rec, origin, scope, allowDuplicate)
		return err
	})
	return out, dup, err
}

// rememberIn plans the write of rec in tx (memory.PlanRemember) and
// applies it; a capture (scope: its run scope) records its run with it.
func rememberIn(g *Globals, tx *bolt.Tx, st *bolt.Store, rec *memory.Record, origin, scope string, allowDuplicate bool) (memory.Record, bool, error) {
	plan, err := memory.PlanRemember(txIndex(tx), rec, memory.WriteOptions{
		Origin: origin, Nonce: g.nonce(), Now: g.Now(), AllowDuplicate: allowDuplicate,
	})
	if err != nil {
		return memory.Record{}, false, err
	}
	if plan.Existing != nil && !plan.Duplicate {
		return *plan.Existing, false, nil
	}
	var run *Run
	if origin == events.OriginCapture {
		if run, err = g.StartRunIn(tx, st, RunSpec{Command: events.RunCmdCapture, Scope: scope, Stage: "capture"}); err != nil {
			return memory.Record{}, false, err
		}
	}
	out, dup, items := *rec, false, int64(1)
	if plan.Duplicate {
		out, dup, items = *plan.Existing, true, 0
	} else if err := appendMemoryPlan(g, tx, rec.ID, &plan); err != nil {
		return memory.Record{}, false, err
	}
	if run != nil {
		run.SetItems(items)
		return out, dup, run.FinishIn(tx, nil)
	}
	return out, dup, nil
}

// appendMemoryPlan appends a planned new memory and the supersessions it makes.
func appendMemoryPlan(g *Globals, tx *bolt.Tx, id string, plan *memory.Plan) error {
	if err := appendWrite(g, tx, id, &plan.Write); err != nil {
		return err
	}
	for i := range plan.Supersede {
		if err := appendSuperseded(g, tx, &plan.Supersede[i]); err != nil {
			return err
		}
	}
	return nil
}

// appendWrite stores a memory's body and appends its events to its new
// stream.
func appendWrite(g *Globals, tx *bolt.Tx, id string, w *memory.Write) error {
	digest, err := tx.PutBody(w.Body)
	if err != nil {
		return err
	}
	if digest != w.Captured.BodySHA256 {
		return errors.New("body digest mismatch")
	}
	f := g.Factory("cli")
	stream := events.MemoryStream(id)
	e, err := f.New(stream, events.TypeMemoryCaptured, &w.Captured)
	if err != nil {
		return fmt.Errorf("memory %s: %w", id, err)
	}
	evs := []events.Envelope{e}
	if w.SupersededBy != nil {
		s, err := f.New(stream, events.TypeMemorySuperseded, w.SupersededBy)
		if err != nil {
			return fmt.Errorf("memory %s: %w", id, err)
		}
		evs = append(evs, s)
	}
	_, err = tx.Append(stream, 0, evs...)
	return err
}

func appendSuperseded(g *Globals, tx *bolt.Tx, p *events.MemorySuperseded) error {
	stream := events.MemoryStream(p.MemoryID)
	e, err := g.Factory("cli").New(stream, events.TypeMemorySuperseded, p)
	if err != nil {
		return err
	}
	_, err = tx.Append(stream, int64(tx.StreamVersion(stream)), e)
	return err
}

// printMemory prints the id, or with --json the published record.
func printMemory(g *Globals, rec *memory.Record) error {
	if !g.JSON {
		_, err := fmt.Fprintln(g.Stdout, rec.ID)
		return err
	}
	line, err := memory.MarshalJSONLine(rec)
	if err != nil {
		return err
	}
	_, err = g.Stdout.Write(line)
	return err
}

// retryHint says how to go on after a memory write whose outcome is
// unknown: the same command again stores nothing twice (the same
// --operation-id, the published idempotency key, or the same summary in
// the same scope), except with --allow-duplicate and no operation id.
type retryHint struct {
	err        error
	idempotent bool
}

func (e *retryHint) Error() string {
	if e.idempotent {
		return e.err.Error() + "; the same command again stores it at most once"
	}
	return e.err.Error() + "; check with `tree-ring recall` before repeating it (a repeat with --allow-duplicate and no --operation-id stores a second copy)"
}

func (e *retryHint) Unwrap() error { return e.err }
