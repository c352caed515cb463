package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
	"github.com/tree-ring/tree-ring/projections"
	htmlreport "github.com/tree-ring/tree-ring/projections/report"
)

type auditReportOptions struct {
	HTML  string
	At    string
	Since string
	Force bool
}

func (o *auditReportOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.HTML, "html", "", "write the report to this file (required; refused if it exists, unless --force)")
	fs.StringVar(&o.At, "at", "", "the instant to replay at, RFC3339 (default now)")
	fs.StringVar(&o.Since, "since", "", "draw timelines, receipts and runs from this instant, RFC3339 (default: the first harness event)")
	fs.BoolVar(&o.Force, "force", false, "replace an existing --html file")
}

func init() {
	register("audit report", "", "write one self-contained HTML page: each harness's timeline, receipts, runs and the verification (exit 3, page written, when verification fails)", runAuditReport)
}

// runAuditReport reads the store (read-only), verifies it, and writes the
// page docs/report.md describes. A store that fails verification still
// gets its page (saying so), then the command exits 3.
func runAuditReport(ctx context.Context, g *Globals, o *auditReportOptions, args []string) error {
	if len(args) > 0 {
		return usagef("audit report takes no arguments")
	}
	at, since, err := reportWindow(g, o.HTML, o.At, o.Since, o.Force)
	if err != nil {
		return err
	}
	st, err := g.OpenStore(true)
	if err != nil {
		return asVerifyFailure(err)
	}
	defer st.Close()
	v, err := verifyForReport(ctx, g, st)
	if err != nil {
		return err
	}
	s, err := gatherReport(ctx, st, at, since)
	if err != nil && !v.OK {
		return &bolt.VerifyError{Detail: "no report written: " + v.Failure}
	} else if err != nil {
		return err
	}
	s.Verification = v
	page, err := htmlreport.StorePage(s, g.Now())
	if err != nil {
		return err
	}
	if err := writeReport(o.HTML, page, o.Force); err != nil {
		return err
	}
	if !v.OK {
		return &bolt.VerifyError{Detail: "report written to " + o.HTML + ", but the store failed verification: " + v.Failure}
	}
	return reportWritten(g, o.HTML, at, len(s.Harnesses), plural(len(s.Harnesses), "harness timeline"))
}

// reportWritten says what was written: one line, or with --json the
// object {"ok", "html", "at", "count"} (count: harness timelines, or
// stores for the fleet report).
func reportWritten(g *Globals, file string, at time.Time, n int, what string) error {
	if g.JSON {
		return writeJSON(g.Stdout, struct {
			OK    bool      `json:"ok"`
			HTML  string    `json:"html"`
			At    time.Time `json:"at"`
			Count int       `json:"count"`
		}{true, file, at, n})
	}
	_, err := fmt.Fprintf(g.Stdout, "wrote %s: %s at %s\n", file, what, at.Format(humanTime))
	return err
}

// reportWindow checks the flags both reports share: --html given and
// absent (unless force), --at, and --since at or before it.
func reportWindow(g *Globals, file, atFlag, sinceFlag string, force bool) (at, since time.Time, err error) {
	if file == "" {
		return at, since, usagef("--html FILE is required")
	}
	if _, err := os.Lstat(file); err == nil && !force {
		return at, since, fmt.Errorf("--html %s exists; nothing was written (pass --force to replace it)", file)
	}
	if at, err = replayInstant(g, atFlag); err != nil {
		return at, since, err
	}
	if sinceFlag == "" {
		return at, since, nil
	}
	since, err = time.Parse(time.RFC3339Nano, sinceFlag)
	if err != nil {
		return at, since, usagef("--since %q: want an RFC3339 instant such as 2026-09-01T12:00:00Z", sinceFlag)
	}
	if since.After(at) {
		return at, since, usagef("--since %s is after --at %s", since.UTC().Format(humanTime), at.Format(humanTime))
	}
	return at, since.UTC(), nil
}

// verifyForReport is audit verify's check as the page shows it: a failed
// verification is a value, not an error.
func verifyForReport(ctx context.Context, g *Globals, st *bolt.Store) (htmlreport.Verification, error) {
	rep, err := st.Verify(ctx)
	if err != nil {
		if v, failed := verifyFailure(err); failed {
			return v, nil
		}
		return htmlreport.Verification{}, err
	}
	v := verificationOf(rep)
	root, err := projectOfRoot(g.Root)
	if err != nil {
		return v, fmt.Errorf("receipt files: %w", err)
	}
	drift, err := checkReceiptFiles(st, root)
	root.Close()
	if err != nil {
		return v, fmt.Errorf("receipt files: %w", err)
	}
	// Counts only: the page names no file.
	if n := len(drift.Missing); n > 0 {
		v.OK, v.Failure = false, fmt.Sprintf("receipt files: %d retained receipt(s) without their file", n)
	}
	if n := len(drift.Strays); n > 0 {
		v.ReceiptFiles = fmt.Sprintf("%d file(s) without a retained receipt", n)
	}
	return v, nil
}

// verifyFailure turns a failed verification (a *bolt.VerifyError, or a
// ledger too damaged to read) into the page's value; failed is false for
// any other error (a cancellation, a locked ledger).
func verifyFailure(err error) (htmlreport.Verification, bool) {
	var ve *bolt.VerifyError
	if errors.As(asVerifyFailure(err), &ve) {
		return htmlreport.Verification{Failure: ve.Error()}, true
	}
	return htmlreport.Verification{}, false
}

func verificationOf(rep bolt.VerifyReport) htmlreport.Verification {
	return htmlreport.Verification{OK: true, ChainHead: rep.ChainHead, Events: rep.Events, Streams: rep.Streams, Projections: rep.Projections}
}

// gatherReport reads what the page shows from an open store: its
// identity, one scan of the ledger (the fsm replay at the instant, the
// receipts recorded, the newest event at or before it) and the run
// ledger.
func gatherReport(ctx context.Context, st *bolt.Store, at, since time.Time) (htmlreport.Store, error) {
	s := htmlreport.Store{At: at, Since: since}
	var runs []projections.RunRecord
	err := st.View(func(r *bolt.Reader) error {
		ms, _, err := cli.StoreIdentity(r)
		s.ID, s.RootFingerprint = ms.StoreID, ms.ProjectRootFingerprint
		if err != nil {
			return err
		}
		return projections.EachRun(r.Projection(projections.RunsName), func(rec *projections.RunRecord) error {
			runs = append(runs, *rec)
			return nil
		})
	})
	if err != nil {
		return s, fmt.Errorf("audit report: %w", err)
	}
	rep := fsm.NewReplayer(at)
	err = st.ReadAll(ctx, 0, func(e *events.Envelope) error {
		if !e.RecordedAt.After(at) {
			s.LastEventAt = e.RecordedAt.UTC()
		}
		if e.Type == events.TypeReceiptRecorded && !e.RecordedAt.After(at) {
			if err := addReceipt(&s, e); err != nil {
				return err
			}
		}
		return rep.Apply(e)
	})
	if err != nil {
		return s, fmt.Errorf("audit report: %w", err)
	}
	for _, h := range rep.Finish() {
		s.Harnesses = append(s.Harnesses, harnessOfReplay(h))
	}
	for _, r := range runs {
		t, err := events.ParseRunTime(r.StartedAt)
		if err != nil {
			return s, fmt.Errorf("audit report: run %s: %w", r.RunID, err)
		}
		s.Runs = append(s.Runs, htmlreport.Run{Command: r.Command, Harness: r.Harness, Status: r.Status, Stage: r.Stage, Diagnostic: r.Diagnostic, Started: t})
	}
	return s, nil
}

func addReceipt(s *htmlreport.Store, e *events.Envelope) error {
	v, err := events.DecodePayload(e)
	if err != nil {
		return fmt.Errorf("position %d: %w", e.Position, err)
	}
	p := v.(*events.ReceiptRecorded)
	s.Receipts = append(s.Receipts, htmlreport.Receipt{Harness: p.HarnessID, Worker: p.WorkerKeyFingerprint, At: e.RecordedAt.UTC(),
		QueryClass: p.QueryClass, Results: p.ResultCount, Status: p.Status})
	return nil
}

// harnessOfReplay is a replayed history as the page draws it; the next
// step is the status rule's for the state on recorded evidence
// (`integrations status` adds the live checks).
func harnessOfReplay(h *fsm.History) htmlreport.Harness {
	out := htmlreport.Harness{ID: h.Harness, Name: h.Harness, State: string(h.State), Events: h.Events, Later: h.Later}
	if a, ok := adapters.Lookup(h.Harness); ok {
		out.Name, out.Next = a.Name, activation.NextFor(a, h.State, false)
	}
	for i := range h.Steps {
		st := &h.Steps[i]
		out.Steps = append(out.Steps, htmlreport.Step{Position: st.Position, At: st.At, Type: st.Type, Transition: st.Transition,
			From: string(st.From), To: string(st.To), Derived: st.Derived, Reason: st.Reason()})
	}
	return out
}

// writeReport writes the page whole or not at all: into a temporary file
// beside name, then linked into place (refused if name exists) or, with
// force, renamed over it.
func writeReport(name string, page []byte, force bool) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".tree-ring-report-*")
	if err != nil {
		return fmt.Errorf("--html %s: %w", name, unwrapPath(err))
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a link, only the temporary name goes; after a rename, nothing is left to remove
	_, werr := f.Write(page)
	err = errors.Join(werr, f.Chmod(0o644), f.Sync(), f.Close())
	if err != nil {
		return fmt.Errorf("--html %s: nothing was written: %w", name, unwrapPath(err))
	}
	if force {
		err = os.Rename(tmp, name)
	} else if err = os.Link(tmp, name); errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("--html %s exists; nothing was written (pass --force to replace it)", name)
	}
	if err != nil {
		return fmt.Errorf("--html %s: nothing was written: %w", name, unwrapPath(err))
	}
	return nil
}
