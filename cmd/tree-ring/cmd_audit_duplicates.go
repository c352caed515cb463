package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/projections/recall"
)

func init() {
	register("audit duplicates", "", "list active memories that repeat another's summary in the same scope (read-only)", runAuditDuplicates)
}

// duplicateGroup is one line of the report: ids only, never text.
type duplicateGroup struct {
	Project   *string  `json:"project"`
	Scope     string   `json:"scope"`
	Keep      string   `json:"keep"`
	MemoryIDs []string `json:"memory_ids"`
}

// runAuditDuplicates reads every memory of the recall index (so it also
// reports a ledger written before de-duplication existed, on a read-only
// open) and groups the active ones by memory.DuplicateKey.
func runAuditDuplicates(ctx context.Context, g *Globals, _ *noOptions, args []string) error {
	if len(args) > 0 {
		return usagef("audit duplicates takes no arguments")
	}
	st, err := g.OpenStore(true)
	if err != nil {
		return err
	}
	defer st.Close()
	d := memory.NewDuplicateGroups(g.Now())
	err = st.View(func(r *bolt.Reader) error {
		return recall.Each(r.Projection(recall.Name), r, func(rec memory.Record, s recall.State) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			d.Add(&rec, s.Redacted)
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("audit duplicates: %w", err)
	}
	groups := []duplicateGroup{}
	redundant := 0
	for _, recs := range d.Groups() {
		grp := duplicateGroup{Project: recs[0].Project, Scope: recs[0].Scope, Keep: recs[0].ID}
		for i := range recs {
			grp.MemoryIDs = append(grp.MemoryIDs, recs[i].ID)
		}
		redundant += len(recs) - 1
		groups = append(groups, grp)
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			Groups    []duplicateGroup `json:"groups"`
			Redundant int              `json:"redundant"`
		}{groups, redundant})
	}
	for _, grp := range groups {
		fmt.Fprintf(g.Stdout, "scope %s, project %s: keep %s, repeated by", grp.Scope, orNull(grp.Project), grp.Keep)
		for _, id := range grp.MemoryIDs[1:] {
			fmt.Fprintf(g.Stdout, " %s", id)
		}
		fmt.Fprintln(g.Stdout)
	}
	if redundant > 0 {
		_, err = fmt.Fprintf(g.Stdout, "%d duplicate memories in %d groups (remove one with `tree-ring forget ID --mode delete --reason duplicate`)\n", redundant, len(groups))
		return err
	}
	_, err = fmt.Fprintln(g.Stdout, "no duplicate memories")
	return err
}

func orNull(p *string) string {
	if p == nil {
		return "(none)"
	}
	return *p
}
