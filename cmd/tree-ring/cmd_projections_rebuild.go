package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
)

func init() {
	register("projections rebuild", "", "drop every projection and refold it from the ledger", runProjectionsRebuild)
}

func runProjectionsRebuild(ctx context.Context, g *Globals, _ *noOptions, args []string) (err error) {
	if len(args) > 0 {
		return usagef("projections rebuild takes no arguments")
	}
	scope, err := g.CLIScope()
	if err != nil {
		return err
	}
	st, err := g.OpenRebuildingStore()
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := g.StartRun(ctx, st, RunSpec{Command: events.RunCmdProjectionsRebuild, Scope: scope, Stage: "fold"})
	if err != nil {
		return err
	}
	defer run.End(ctx, &err)
	shown := g.newProgress("rebuilt")
	n, err := st.Rebuild(ctx, func(done, total uint64) {
		g.Log.Debug().Uint64("done", done).Uint64("total", total).Msg("rebuild progress")
		shown.update(done, total)
	})
	shown.end()
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	run.SetItems(int64(n))
	// The receipt files are a materialization of the ledger too.
	restored, err := restoreReceiptFiles(g, st)
	if err != nil {
		return err
	}
	if err := run.Finish(ctx, nil); err != nil {
		return err
	}
	if g.JSON {
		out := map[string]any{"ok": true, "events": n}
		if restored > 0 {
			out["receipt_files_restored"] = restored
		}
		return json.NewEncoder(g.Stdout).Encode(out)
	}
	fmt.Fprintf(g.Stdout, "rebuilt projections from %d events\n", n)
	if restored > 0 {
		fmt.Fprintf(g.Stdout, "restored %d receipt file(s) from their events\n", restored)
	}
	return nil
}
