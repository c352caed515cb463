package preflight

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
)

// Store is the ledger a delivery writes, as the use case sees it (cmd
// implements it over bolt and the projections).
type Store interface {
	// Update runs fn in one write transaction, committed (durably) when
	// fn returns nil.
	Update(ctx context.Context, fn func(Tx) error) error
	// MayBeVisible is true when err, returned by Update, leaves the
	// commit's outcome unknown: its data may have reached the ledger.
	MayBeVisible(err error) bool
}

// Tx is one write transaction of a delivery: Decide's reads, the recorded
// program, appends, the receipt index, and the run it records.
type Tx interface {
	Ledger
	// Program is the recorded program (nil: none recorded).
	Program() (*events.ProgramIdentity, error)
	// Append appends evs to stream at its current version.
	Append(stream string, evs []events.Envelope) error
	// Retained reports which receipt ids the index retains, for the
	// strays of one worker's directory; ok is false in an adopted store,
	// whose other writer adds files the ledger cannot tell from a crash's
	// leftovers.
	Retained(harness, workerFP string) (retained func(receiptID string) bool, ok bool, err error)
	// StartRun records the delivery's run.started; SetStage names the
	// step a failure is recorded at; FinishRun records the run succeeded
	// with the receipt rc.
	StartRun() error
	SetStage(stage string)
	FinishRun(rc receipt.Receipt) error
}

// Delivery is one preflight to deliver.
type Delivery struct {
	Job  Job
	Deps Deps
	Root *adapters.ProjectRoot // the project, opened by the caller
	Out  io.Writer             // the host's stdout
	// Render is the output for the plan's context and receipt.
	Render func(Plan) []byte
	// Fault, set only by tests, fails the transaction after the output
	// was written, where a failing commit fails it.
	Fault func() error
}

// Deliver runs a preflight, writes its output and records it: in ONE
// write transaction (the hook's one durable commit) it records
// run.started, checks the recorded program, applies the plan Decide
// returns (the events, the run's finish, the worker directory's strays),
// creates the receipt file (fsync, directory fsync), writes the output to
// d.Out, and only then commits: deliver before acknowledging. A failed or
// short write of the output commits nothing (an *OutputError), so no
// receipt exists for output the host did not get in full; the receipt
// file is removed with the transaction unless its commit may be visible.
// printed reports whether the output was handed to d.Out: a failure after
// it voids the output (the caller's non-zero exit). After the commit, the
// files of pruned receipts and strays are removed, then the worker
// directories they leave empty.
func Deliver(ctx context.Context, st Store, d Delivery) (printed bool, err error) {
	var plan Plan
	var wrote bool
	err = st.Update(ctx, func(tx Tx) error {
		var err error
		plan, wrote, printed, err = deliverIn(tx, d)
		return err
	})
	if err != nil {
		if wrote && !st.MayBeVisible(err) {
			// Nothing was committed: the file must not outlive it.
			_, _ = d.Root.RemoveFile(plan.File)
		}
		return printed, err
	}
	// Best effort (the lock is still held): a file left behind has no
	// index entry, never proves anything, and the next write in its
	// directory removes it.
	for _, p := range plan.Removals {
		_, _ = d.Root.RemoveFile(p)
	}
	for _, dir := range EmptiedDirs(plan.Removals, path.Dir(plan.File)) {
		_, _ = d.Root.RemoveEmptyDir(dir)
	}
	return true, nil
}

// deliverIn is Deliver's transaction. wrote reports whether the receipt
// file may exist, printed whether the output was handed to d.Out.
func deliverIn(tx Tx, d Delivery) (plan Plan, wrote, printed bool, err error) {
	if err := tx.StartRun(); err != nil {
		return plan, false, false, err
	}
	prog, err := tx.Program()
	if err == nil {
		err = CheckProgram(d.Root, prog)
	}
	if err != nil {
		return plan, false, false, err
	}
	if plan, err = Decide(tx, d.Job, d.Deps); err != nil {
		return plan, false, false, err
	}
	if wrote, err = applyPlan(tx, d.Root, &plan); err != nil {
		return plan, wrote, false, err
	}
	tx.SetStage("deliver")
	if err := writeOutput(d.Out, d.Render(plan)); err != nil {
		return plan, wrote, true, err
	}
	if d.Fault != nil {
		return plan, wrote, true, d.Fault()
	}
	return plan, wrote, true, nil
}

// applyPlan appends a plan's events, finishes the run in the same commit,
// adds the worker directory's strays to the plan's removals, and creates
// the receipt file (O_EXCL, O_NOFOLLOW, fsync, directory fsync) before the
// output and the commit. wrote reports whether the file may exist.
func applyPlan(tx Tx, root *adapters.ProjectRoot, plan *Plan) (wrote bool, err error) {
	for _, a := range plan.Appends {
		if err := tx.Append(a.Stream, a.Events); err != nil {
			return false, fmt.Errorf("append %s: %w", a.Stream, err)
		}
	}
	rc := plan.Receipt
	if err := tx.FinishRun(rc); err != nil {
		return false, err
	}
	// Strays in this worker's directory, against the index as of this
	// transaction (prunes applied).
	dir := path.Dir(plan.File) // receipt.WorkerDir
	if names, _, err := root.ListDir(dir, MaxWorkerFiles); err == nil {
		retained, ok, err := tx.Retained(rc.HarnessID, rc.WorkerKeyFingerprint)
		if err != nil {
			return false, err
		}
		if ok {
			plan.Removals = append(plan.Removals, Strays(dir, names, retained, rc.ReceiptID)...)
		}
	}
	if err := root.CreateFile(plan.File, plan.Body, FilePerm, DirPerm); err != nil {
		var de *adapters.DurabilityError
		return errors.As(err, &de), fmt.Errorf("write the receipt: %w", err)
	}
	return true, nil
}

// MaxWorkerFiles bounds a receipt directory listing (a directory filled
// beyond it by someone else is left alone).
const MaxWorkerFiles = 4096

// writeOutput writes b to w in full: a short write is an error, which
// names no path (an *os.File's write error carries its name).
func writeOutput(w io.Writer, b []byte) error {
	n, err := w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &OutputError{Err: err}
}

// OutputError is a failed or short write of a preflight's output: nothing
// was committed.
type OutputError struct{ Err error }

func (e *OutputError) Error() string {
	return "write the output: " + e.Err.Error() + "; no receipt recorded"
}
func (e *OutputError) Unwrap() error      { return e.Err }
func (e *OutputError) Diagnostic() string { return "output_failed" }
