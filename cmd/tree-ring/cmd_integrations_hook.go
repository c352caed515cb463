package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/tree-ring/internal/runrec"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
	"github.com/tree-ring/tree-ring/projections"
)

type hookOptions struct {
	Harness        string
	InputJSONStdin bool
}

func (o *hookOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Harness, "harness", "", strings.Join(harnessIDs(answersHooks), " or "))
	fs.BoolVar(&o.InputJSONStdin, "input-json-stdin", false, "read the host's hook event from stdin (required)")
}

func (*hookOptions) lockTimeout() time.Duration { return hookLockTimeout }

func init() {
	register("integrations hook", "", "answer a harness's lifecycle hook event: a session or subagent start delivers the brief, a stop issues the capture checkpoint", runHook)
}

// runHook answers one lifecycle hook event. Start events run the preflight
// (deliver) and print exactly one hookSpecificOutput object; a first stop
// prints the capture checkpoint decision; a stop re-run with
// stop_hook_active prints {}. When --root names no entry at all (a checkout
// that was never initialized), it prints nothing and succeeds. Any other
// failure prints nothing on stdout (unless the commit failed after the
// output was written), one line on stderr, leaves no receipt and exits with
// the adapter's failure exit, which its host reads as non-blocking; only a
// --harness that answers no hook exits 2 (a usage error of the protocol).
func runHook(ctx context.Context, g *Globals, o *hookOptions, args []string) error {
	a, ok := adapters.Lookup(o.Harness)
	if !ok || !answersHooks(a) {
		return usagef("--harness must be %s", strings.Join(harnessIDs(answersHooks), " or "))
	}
	if err := answerHook(ctx, g, o, a, args); err != nil {
		return &hookFailure{exit: a.HookFailureExit(), err: err}
	}
	return nil
}

// answerHook is runHook once --harness named an adapter that answers hooks.
func answerHook(ctx context.Context, g *Globals, o *hookOptions, a *adapters.Adapter, args []string) error {
	if len(args) > 0 {
		return usagef("integrations hook takes no arguments")
	}
	if !o.InputJSONStdin {
		return usagef("integrations hook requires --input-json-stdin")
	}
	loc, absent, err := locateStore(g)
	if err != nil || absent {
		return err
	}
	// A failure before the session scope exists is a recorded run too
	// (hookSetupFailed).
	data, err := readBounded(g.Stdin, adapters.MaxStdinBytes, "lifecycle hook stdin exceeds 1 MiB")
	if err != nil {
		return hookSetupFailed(ctx, g, loc, a, nil, err)
	}
	in, err := preflight.ParseHook(a.Stdin, data)
	if err != nil {
		return hookSetupFailed(ctx, g, loc, a, data, err)
	}
	if err := checkCwd(in.Cwd, loc.project); err != nil {
		return hookSetupFailed(ctx, g, loc, a, data, err)
	}
	if in.Start() {
		return hookStart(ctx, g, loc, a, in, preflight.HookIdentity(a.ID, in), data)
	}
	return hookStop(ctx, g, loc, a, in, preflight.CaptureIdentity(a.ID, in), data)
}

// hookStart runs the preflight of a start event and prints its
// hookSpecificOutput.
func hookStart(ctx context.Context, g *Globals, loc storeLoc, a *adapters.Adapter, in preflight.HookInput, id preflight.Identity, data []byte) error {
	scope, err := events.SessionScope(a.ID, in.SessionID)
	if err != nil {
		return hookSetupFailed(ctx, g, loc, a, data, err)
	}
	return deliver(ctx, g, loc, delivery{adapter: a, identity: id, runCmd: events.RunCmdIntegrationsHook, scope: scope, input: data},
		func(out delivered) []byte { return preflight.HookOutput(in.Event, out.context) })
}

// hookStop answers a stop event (preflight.StopAnswer) once its contract
// passed: a harness that checkpoints once per session decides in the
// ledger (checkpointDue).
func hookStop(ctx context.Context, g *Globals, loc storeLoc, a *adapters.Adapter, in preflight.HookInput, id preflight.Identity, data []byte) error {
	if err := checkStop(loc, a); err != nil {
		return err
	}
	due := func() (bool, error) { return checkpointDue(ctx, g, a, in.SessionID, data) }
	mint := func() (string, error) { return adapters.NewStoreID(nil) } // a random version-4 UUID
	out, err := preflight.StopAnswer(in, a, loc.project, id, due, mint)
	if err != nil {
		return err
	}
	_, err = g.Stdout.Write(out)
	return err
}

// checkStop applies the manifest checks to a stop event: the same contract
// as a start (manifest, record, registry, bridge on disk) and an eligible
// record state. A stop writes nothing, so the ledger is not opened.
func checkStop(loc storeLoc, a *adapters.Adapter) error {
	root, _, checked, err := loadContract(loc, a)
	if err != nil {
		return err
	}
	defer root.Close()
	if !preflight.Eligible(a.ID, fsm.State(checked.Record.State)) {
		return preflight.ErrNotEligible
	}
	return nil
}

// checkpointDue runs preflight.CheckpointDue in one write transaction
// over the session's checkpoint runs, recording this stop's run as a
// succeeded run of the checkpoint scope when it is due.
func checkpointDue(ctx context.Context, g *Globals, a *adapters.Adapter, sessionID string, input []byte) (due bool, err error) {
	scope, err := events.CheckpointScope(a.ID, sessionID)
	if err != nil {
		return false, err
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return false, pathless(err)
	}
	defer st.Close()
	sha, chars := runrec.InputDigest(input)
	err = st.Update(ctx, func(tx *bolt.Tx) error {
		due, err = preflight.CheckpointDue(checkpointTx{g: g, tx: tx, st: st, scope: scope,
			spec: RunSpec{Command: events.RunCmdIntegrationsHook, Scope: scope, Harness: a.ID, Stage: "checkpoint", InputSHA256: sha, InputChars: chars}})
		return err
	})
	if err != nil {
		return false, pathless(err)
	}
	return due, nil
}

// checkpointTx is preflight.CheckpointLedger over a write transaction.
type checkpointTx struct {
	g     *Globals
	tx    *bolt.Tx
	st    *bolt.Store
	scope string
	spec  RunSpec
}

func (c checkpointTx) CheckpointRuns() ([]preflight.CheckpointRun, error) {
	recs, _, err := projections.LatestRuns(c.tx.Projection(projections.RunsName), c.scope, projections.MaxRunsPerScope)
	runs := make([]preflight.CheckpointRun, len(recs))
	for i, r := range recs {
		runs[i] = preflight.CheckpointRun{Command: r.Command, Status: r.Status}
	}
	return runs, err
}

func (c checkpointTx) RecordCheckpoint() error {
	run, err := c.g.StartRunIn(c.tx, c.st, c.spec)
	if err != nil {
		return err
	}
	return run.FinishIn(c.tx, nil)
}
