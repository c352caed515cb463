package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
	"github.com/tree-ring/tree-ring/cmd/internal/storekey"
	"github.com/tree-ring/tree-ring/fsm"
	htmlreport "github.com/tree-ring/tree-ring/projections/report"
)

type fleetReportOptions struct {
	From   string
	HTML   string
	At     string
	Expect string
	Force  bool
}

func (o *fleetReportOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.From, "from", "", "directory of replicas written by fleet collect (required)")
	fs.StringVar(&o.HTML, "html", "", "write the report to this file (required; refused if it exists, unless --force)")
	fs.StringVar(&o.At, "at", "", "the instant to replay at, RFC3339 (default now)")
	fs.StringVar(&o.Expect, "expect", "", "fleet file (STORE_ID PUBLIC_KEY LABEL per line): its labels over the stores' own")
	fs.BoolVar(&o.Force, "force", false, "replace an existing --html file")
}

func init() {
	register("fleet report", "", "write one self-contained HTML page across replicas: stores × harnesses at an instant, then each store's section (exit 3, page written, when a replica fails verification)", runFleetReport)
}

// runFleetReport is audit report over every replica of a collector's
// directory (read-only), with the matrix of states at the instant first.
func runFleetReport(ctx context.Context, g *Globals, o *fleetReportOptions, args []string) error {
	if len(args) > 0 {
		return usagef("fleet report takes no arguments")
	}
	if o.From == "" {
		return usagef("--from DIR is required")
	}
	at, _, err := reportWindow(g, o.HTML, o.At, "", o.Force)
	if err != nil {
		return err
	}
	f, firstBad, err := fleetReportStores(ctx, g, o.From, o.Expect, at)
	if err != nil {
		return err
	}
	page, err := htmlreport.FleetPage(f, g.Now())
	if err != nil {
		return err
	}
	if err := writeReport(o.HTML, page, o.Force); err != nil {
		return err
	}
	if firstBad != "" {
		return &bolt.VerifyError{Detail: "report written to " + o.HTML + ", but a replica failed verification: " + firstBad}
	}
	return reportWritten(g, o.HTML, at, len(f.Stores), plural(len(f.Stores), "store"))
}

// fleetReportStores gathers every replica under dir (symlinked ones are
// said on stderr), labelled by the fleet file at expect when given, and
// the first that failed verification ("" when none did).
func fleetReportStores(ctx context.Context, g *Globals, dir, expect string, at time.Time) (f htmlreport.Fleet, firstBad string, err error) {
	var exp map[string]fleetsign.Expected
	if expect != "" {
		if exp, err = replica.ReadExpect(expect); err != nil {
			return f, "", err
		}
	}
	ids, links, err := replica.List(dir)
	if err != nil {
		return f, "", err
	}
	for _, id := range links {
		fmt.Fprintf(g.Stderr, "tree-ring: store %s: %s\n", id, replica.SymlinkDetail)
	}
	if len(ids) == 0 {
		return f, "", fmt.Errorf("%s holds no replica (run `tree-ring fleet collect --into %s` first)", dir, dir)
	}
	f.At = at
	for _, id := range ids {
		s, err := replicaReport(ctx, g, filepath.Join(dir, id), id, at)
		if err != nil {
			return f, "", fmt.Errorf("store %s: %w", id, err)
		}
		if e, listed := exp[id]; listed && e.Label != "-" {
			s.Label = e.Label
		}
		if !s.Verification.OK && firstBad == "" {
			firstBad = "store " + id + ": " + s.Verification.Failure
		}
		f.Stores = append(f.Stores, s)
	}
	return f, firstBad, nil
}

// replicaReport verifies one replica as fleet verify does and gathers its
// section as audit report does. A replica that fails verification and
// cannot be read further still gets its row, saying why.
func replicaReport(ctx context.Context, g *Globals, root, id string, at time.Time) (htmlreport.Store, error) {
	var v htmlreport.Verification
	rep, err := verifyReplica(ctx, g, root, id, nil)
	if err == nil {
		v = verificationOf(rep)
	} else if vf, failed := verifyFailure(err); failed {
		v = vf
	} else {
		return htmlreport.Store{}, err
	}
	cond := "ok"
	stop, stopped, err := replica.ReadStop(root)
	switch {
	case err != nil:
		cond = "unreadable stop record"
	case stopped:
		cond = fmt.Sprintf("stopped at position %d: %s", stop.Position, fsm.Printable(stop.Reason))
	}
	s, err := readReplica(ctx, g, root, at)
	switch {
	case err != nil && v.OK:
		return s, err
	case err != nil:
		s = htmlreport.Store{} // only the failure is known
	}
	s.ID, s.At, s.Verification, s.Replica = id, at, v, cond
	return s, nil
}

func readReplica(ctx context.Context, g *Globals, root string, at time.Time) (htmlreport.Store, error) {
	rg := *g
	rg.Root = root
	st, err := rg.OpenStore(true)
	if err != nil {
		return htmlreport.Store{}, err
	}
	defer st.Close()
	s, err := gatherReport(ctx, st, at, time.Time{})
	if err != nil {
		return s, err
	}
	s.Label, _, err = storekey.Label(ctx, st)
	return s, err
}
