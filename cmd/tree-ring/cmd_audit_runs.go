package main

import (
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

type auditRunsOptions struct {
	Harness string
	Status  string
	Limit   int
}

func (o *auditRunsOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Harness, "harness", "", "only runs of this harness")
	fs.StringVar(&o.Status, "status", "", "only runs with this status: "+strings.Join(events.RunStatuses(), ", "))
	fs.IntVar(&o.Limit, "limit", 100, "print at most this many runs, newest first (0: all)")
}

func init() {
	register("audit runs", "", "the run ledger across every scope (the auditor's view)", runAuditRuns)
}

func runAuditRuns(ctx context.Context, g *Globals, o *auditRunsOptions, args []string) error {
	if len(args) > 0 {
		return usagef("audit runs takes no arguments")
	}
	if err := o.check(); err != nil {
		return err
	}
	st, err := g.OpenStore(true)
	if err != nil {
		return err
	}
	defer st.Close()
	t := &runTally{newest: &runHeap{}, byStatus: map[string]int{}, scopes: map[string]struct{}{}}
	err = st.View(func(r *bolt.Reader) error {
		return projections.EachRun(r.Projection(projections.RunsName), func(rec *projections.RunRecord) error {
			return t.add(ctx, o, rec)
		})
	})
	if err != nil {
		return fmt.Errorf("audit runs: %w", err)
	}
	recs := []projections.RunRecord(*t.newest)
	sort.Slice(recs, func(i, j int) bool { return runNewer(recs[i], recs[j]) })
	views := make([]runView, len(recs))
	for i, r := range recs {
		views[i] = viewOf(g, r)
	}
	if g.JSON {
		type filters struct {
			Harness string `json:"harness,omitempty"`
			Status  string `json:"status,omitempty"`
			Limit   int    `json:"limit"`
		}
		return json.NewEncoder(g.Stdout).Encode(struct {
			Filters  filters        `json:"filters"`
			Examined int            `json:"examined"`
			Matched  int            `json:"matched"`
			Scopes   int            `json:"scopes"`
			ByStatus map[string]int `json:"by_status"`
			Runs     []runView      `json:"runs"`
		}{filters{o.Harness, o.Status, o.Limit}, t.examined, t.total, len(t.scopes), t.byStatus, views})
	}
	return t.print(g, views)
}

func (o *auditRunsOptions) check() error {
	if o.Harness != "" && events.ValidHarnessID(o.Harness) != nil {
		return usagef("--harness: not a harness id")
	}
	if o.Status != "" && !events.ValidRunStatus(o.Status) {
		return usagef("--status %q: want one of %s", o.Status, strings.Join(events.RunStatuses(), ", "))
	}
	if o.Limit < 0 {
		return usagef("--limit must be 0 (all) or more")
	}
	return nil
}

// runTally is what audit runs counts over the run ledger: the newest
// --limit matching runs, and totals by status and scope.
type runTally struct {
	newest   *runHeap
	total    int
	examined int
	byStatus map[string]int
	scopes   map[string]struct{}
}

func (t *runTally) add(ctx context.Context, o *auditRunsOptions, rec *projections.RunRecord) error {
	t.examined++
	if t.examined%4096 == 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if o.Harness != "" && rec.Harness != o.Harness || o.Status != "" && rec.Status != o.Status {
		return nil
	}
	t.total++
	t.byStatus[rec.Status]++
	t.scopes[rec.ScopeKey] = struct{}{}
	heap.Push(t.newest, *rec)
	if o.Limit > 0 && t.newest.Len() > o.Limit {
		heap.Pop(t.newest) // the oldest of those kept
	}
	return nil
}

func (t *runTally) print(g *Globals, views []runView) error {
	if t.total == 0 {
		fmt.Fprintf(g.Stdout, "no runs match (examined %d records)\n", t.examined)
		return nil
	}
	var parts []string
	for _, s := range events.RunStatuses() {
		if t.byStatus[s] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", s, t.byStatus[s]))
		}
	}
	fmt.Fprintf(g.Stdout, "%s in %s (%s); showing %d, newest first\n\n", plural(t.total, "run"), plural(len(t.scopes), "scope"), strings.Join(parts, ", "), len(views))
	return printRuns(g.Stdout, g.Now(), views, true)
}

// runNewer orders runs newest first: by start time, then run id.
func runNewer(a, b projections.RunRecord) bool {
	if a.StartedAt != b.StartedAt {
		return a.StartedAt > b.StartedAt
	}
	return a.RunID > b.RunID
}

// runHeap is a min-heap by recency: its root is the oldest run kept, so
// keeping the newest N costs O(log N) per record and N records of memory.
type runHeap []projections.RunRecord

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return runNewer(h[j], h[i]) }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(projections.RunRecord)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
