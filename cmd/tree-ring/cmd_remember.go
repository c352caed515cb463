package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
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
	EventType, Ring, Scope                                    string
	Project, AgentProfile, WorkflowID, SessionID, OperationID string
	SourceRef, ExpiresAt                                      string
	Tags, Supersedes                                          []string
	Salience, Confidence                                      float64
}

func (o *rememberOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.EventType, "event-type", "", "kind of memory, e.g. decision, lesson, warning (required)")
	fs.StringVar(&o.Ring, "ring", memory.DefaultRing, "cambium, outer, inner, heartwood, scar or seed")
	fs.StringVar(&o.Scope, "scope", memory.DefaultScope, "global, project, agent, session, workflow, tool, eval, manual, dox or revolve")
	fs.StringVar(&o.Project, "project", "", "project name (memories without one never reach a startup brief)")
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
}

func init() {
	register("remember", "SUMMARY", "store a memory (its text stays deletable; secret-like text is refused)", runRemember)
}

func runRemember(ctx context.Context, g *Globals, o *rememberOptions, args []string) error {
	if len(args) != 1 {
		return usagef("remember needs exactly one SUMMARY (quote it)")
	}
	if o.EventType == "" {
		return usagef("remember needs --event-type")
	}
	rec, err := newRecord(g, args[0], o.EventType)
	if err != nil {
		return err
	}
	rec.Ring, rec.Scope = o.Ring, o.Scope
	rec.Project = memory.Str(o.Project)
	rec.AgentProfile = memory.Str(orEnv(g, o.AgentProfile, envAgentProfile))
	rec.WorkflowID = memory.Str(orEnv(g, o.WorkflowID, envWorkflowID))
	rec.SessionID = memory.Str(orEnv(g, o.SessionID, envSessionID))
	rec.OperationID = memory.Str(o.OperationID)
	if o.SourceRef != "" {
		rec.Source = memory.Source{Type: "agent", Ref: o.SourceRef}
	}
	rec.Tags = append([]string{}, o.Tags...)
	rec.Salience, rec.Confidence = o.Salience, o.Confidence
	rec.ExpiresAt = memory.Str(o.ExpiresAt)
	rec.Supersedes = slices.Compact(append([]string{}, o.Supersedes...))
	return writeMemory(ctx, g, rec, events.OriginRemember)
}

// newRecord starts a record with a fresh id and the published defaults.
func newRecord(g *Globals, summary, eventType string) (memory.Record, error) {
	now := g.Now()
	id := g.NewID()
	var random [6]byte
	copy(random[:], id[10:])
	return memory.NewRecord(memory.NewID(now, random), summary, eventType, now), nil
}

func orEnv(g *Globals, v, env string) string {
	if v == "" && g.Getenv != nil {
		return g.Getenv(env)
	}
	return v
}

// memoryNonce salts each body so that the digest left in the ledger after
// a delete cannot confirm a guess of the text. Tests replace it.
var memoryNonce = func() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// writeMemory validates rec (refusing secret-like content before anything
// is opened or written), then in one transaction applies idempotency,
// stores the body and appends memory.captured (and memory.superseded for
// each replaced memory), and prints the stored memory.
func writeMemory(ctx context.Context, g *Globals, rec memory.Record, origin string) error {
	if err := prepareRecord(&rec); err != nil {
		return err
	}
	// capture is a recorded run (docs/runs.md); its whole work is the one
	// transaction below, so the record rides in it.
	var scope string
	if origin == events.OriginCapture {
		var err error
		if scope, err = g.CLIScope(); err != nil {
			return err
		}
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	var out memory.Record
	err = st.Update(ctx, func(tx *bolt.Tx) error {
		kv := tx.Projection(recall.Name)
		if existing, ok, err := claimedBy(kv, tx, &rec); err != nil || ok {
			out = existing
			return err
		}
		var run *Run
		if origin == events.OriginCapture {
			if run, err = g.StartRunIn(tx, st, RunSpec{Command: events.RunCmdCapture, Scope: scope, Stage: "capture"}); err != nil {
				return err
			}
		}
		if tx.StreamVersion(events.MemoryStream(rec.ID)) != 0 {
			return fmt.Errorf("memory id %s already exists", rec.ID)
		}
		for _, target := range rec.Supersedes {
			_, st, ok, err := recall.Lookup(kv, tx, target)
			switch {
			case err != nil:
				return err
			case !ok || st.Redacted:
				return fmt.Errorf("--supersedes: memory %s not found", target)
			}
		}
		evs, err := captureEvents(g, tx, &rec, origin)
		if err != nil {
			return err
		}
		if _, err := tx.Append(events.MemoryStream(rec.ID), 0, evs...); err != nil {
			return err
		}
		for _, target := range rec.Supersedes {
			if err := appendSuperseded(g, tx, target, rec.ID); err != nil {
				return err
			}
		}
		out = rec
		if run != nil {
			run.SetItems(1)
			return run.FinishIn(tx, nil)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return printMemory(g, &out)
}

// prepareRecord applies the sensitivity guard first (so that no error
// message or write can carry a secret), then the model's validation.
func prepareRecord(rec *memory.Record) error {
	if err := rec.InspectSensitivity(); err != nil {
		return err
	}
	return rec.Validate()
}

// claimedBy applies operation_id idempotency: ok is true when the claim is
// held by a memory with the same write intent (an exact retry: nothing is
// appended); a different intent is an error.
func claimedBy(kv recall.KV, bodies recall.Bodies, rec *memory.Record) (memory.Record, bool, error) {
	if rec.OperationID == nil {
		return memory.Record{}, false, nil
	}
	claim := memory.OperationClaim(memory.Deref(rec.Project), memory.Deref(rec.WorkflowID), memory.Deref(rec.AgentProfile), *rec.OperationID)
	id, ok := recall.Claimed(kv, claim)
	if !ok {
		return memory.Record{}, false, nil
	}
	existing, _, found, err := recall.Lookup(kv, bodies, id)
	if err != nil {
		return memory.Record{}, false, err
	}
	if found && memory.SameWriteIntent(&existing, rec) {
		return existing, true, nil
	}
	return memory.Record{}, false, &operationConflictError{OperationID: *rec.OperationID}
}

// operationConflictError is the published idempotency refusal.
type operationConflictError struct{ OperationID string }

func (e *operationConflictError) Error() string {
	return fmt.Sprintf("operation_id %s is already bound to a different memory write", e.OperationID)
}

// captureEvents stores rec's body and returns its memory.captured event
// (followed by memory.superseded when the record itself says it was
// superseded, as an imported row may).
func captureEvents(g *Globals, tx *bolt.Tx, rec *memory.Record, origin string) ([]events.Envelope, error) {
	nonce := ""
	if !rec.IsRedactedRow() {
		nonce = memoryNonce()
	}
	p, body := rec.Split(origin, nonce)
	p.Redacted = rec.IsRedactedRow()
	digest, err := tx.PutBody(body)
	if err != nil {
		return nil, err
	}
	if digest != p.BodySHA256 {
		return nil, errors.New("body digest mismatch")
	}
	f := g.Factory("cli")
	stream := events.MemoryStream(rec.ID)
	e, err := f.New(stream, events.TypeMemoryCaptured, &p)
	if err != nil {
		return nil, fmt.Errorf("memory %s: %w", rec.ID, err)
	}
	evs := []events.Envelope{e}
	if rec.SupersededBy != nil && !p.Redacted {
		s, err := f.New(stream, events.TypeMemorySuperseded, &events.MemorySuperseded{MemoryID: rec.ID, SupersededBy: *rec.SupersededBy})
		if err != nil {
			return nil, fmt.Errorf("memory %s: %w", rec.ID, err)
		}
		evs = append(evs, s)
	}
	return evs, nil
}

func appendSuperseded(g *Globals, tx *bolt.Tx, target, by string) error {
	stream := events.MemoryStream(target)
	e, err := g.Factory("cli").New(stream, events.TypeMemorySuperseded, &events.MemorySuperseded{MemoryID: target, SupersededBy: by})
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
