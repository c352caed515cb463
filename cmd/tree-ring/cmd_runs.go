package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

// Bounds of `tree-ring runs N`.
const (
	runsDefault = 10
	runsMax     = 50
)

type runsOptions struct {
	Harness   string
	SessionID string
}

func (o *runsOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Harness, "harness", "", "with --session-id: list the runs of this harness session")
	fs.StringVar(&o.SessionID, "session-id", "", "with --harness: the session's authoritative id (hashed, never stored)")
}

func init() {
	register("runs", "[N]", "the latest N (1..50, default 10) runs of this project (or of one harness session)", runRuns)
}

// runView is one run as `runs` and `audit runs` print it: the stored record
// plus whether a running run's process is gone (it will be marked
// interrupted by the next recorded command in its scope).
type runView struct {
	projections.RunRecord
	Stale bool `json:"stale,omitempty"`
}

func viewOf(g *Globals, r projections.RunRecord) runView {
	v := runView{RunRecord: r}
	if r.Status == events.RunStatusRunning {
		v.Stale = !g.recorder().Alive(r.RunID, r.PID)
	}
	return v
}

func runRuns(ctx context.Context, g *Globals, o *runsOptions, args []string) error {
	n, err := runsLimit(args)
	if err != nil {
		return err
	}
	scope, err := o.scope(g)
	if err != nil {
		return err
	}
	st, err := g.OpenStore(true)
	if err != nil {
		return err
	}
	defer st.Close()
	var recs []projections.RunRecord
	var examined int
	err = st.View(func(r *bolt.Reader) error {
		var err error
		recs, examined, err = projections.LatestRuns(r.Projection(projections.RunsName), scope, n)
		return err
	})
	if err != nil {
		return fmt.Errorf("runs: %w", err)
	}
	views := make([]runView, len(recs))
	for i, r := range recs {
		views[i] = viewOf(g, r)
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			ScopeKey string    `json:"scope_key"`
			Limit    int       `json:"limit"`
			Examined int       `json:"examined"`
			Runs     []runView `json:"runs"`
		}{scope, n, examined, views})
	}
	if len(views) == 0 {
		fmt.Fprintf(g.Stdout, "no runs recorded in scope %s\n", scope)
		return nil
	}
	fmt.Fprintf(g.Stdout, "scope %s: latest %s, newest first\n\n", scope, plural(len(views), "run"))
	return printRuns(g.Stdout, g.Now(), views, false)
}

// runsLimit is the optional argument N.
func runsLimit(args []string) (int, error) {
	switch len(args) {
	case 0:
		return runsDefault, nil
	case 1:
		v, err := strconv.Atoi(args[0])
		if err != nil || v < 1 || v > runsMax {
			return 0, usagef("runs N: N must be a whole number from 1 to %d", runsMax)
		}
		return v, nil
	}
	return 0, usagef("runs takes at most one argument, N")
}

// scope is the scope listed: this project's CLI runs, or one harness
// session's.
func (o *runsOptions) scope(g *Globals) (string, error) {
	switch {
	case o.Harness == "" && o.SessionID == "":
		return g.CLIScope()
	case o.Harness != "" && o.SessionID != "":
		return events.SessionScope(o.Harness, o.SessionID)
	}
	return "", usagef("runs: --harness and --session-id go together")
}

// printRuns writes an aligned table. wide adds the harness and scope
// columns of the cross-scope audit view.
func printRuns(w io.Writer, now time.Time, views []runView, wide bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "OUTCOME\tCOMMAND\tSTAGE\tSTARTED\tELAPSED\tRUN\tQUERY\tRESULTS"
	if wide {
		head = "OUTCOME\tCOMMAND\tHARNESS\tSCOPE\tSTAGE\tSTARTED\tELAPSED\tRUN\tQUERY\tRESULTS"
	}
	fmt.Fprintln(tw, head)
	for _, v := range views {
		cols := []string{outcome(v), v.Command}
		if wide {
			cols = append(cols, dash(v.Harness), v.ScopeKey[:12])
		}
		query, results := "-", "-"
		if t := v.Telemetry; t != nil && t.QueryClass != "" {
			query = t.QueryClass
			results = strconv.Itoa(*t.ResultCount)
		}
		cols = append(cols, v.Stage, startedOf(v.StartedAt), elapsed(v, now), shortRunID(v.RunID), query, results)
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	return tw.Flush()
}

func outcome(v runView) string {
	switch {
	case v.Status == events.RunStatusFailed:
		return v.Status + " (" + v.Diagnostic + ")"
	case v.Stale:
		return v.Status + " (pid gone)"
	}
	return v.Status
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// startedOf shows a start time to the second.
func startedOf(s string) string {
	t, err := events.ParseRunTime(s)
	if err != nil {
		return s
	}
	return t.Format("2006-01-02T15:04:05Z")
}

// elapsed is the duration of an ended run, the time so far of a running
// one, and unknown ("-") for an interrupted one.
func elapsed(v runView, now time.Time) string {
	var d time.Duration
	switch {
	case v.DurationMS != nil:
		d = time.Duration(*v.DurationMS) * time.Millisecond
	case v.Status == events.RunStatusRunning:
		t, err := events.ParseRunTime(v.StartedAt)
		if err != nil {
			return "-"
		}
		d = max(0, now.Sub(t))
	default:
		return "-"
	}
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// shortRunID is the last 8 characters of the ULID: its random (or, within
// one process, incrementing) part.
func shortRunID(id string) string { return id[len(id)-8:] }
