package main

import (
	"context"
	"encoding/json"
	"fmt"
)

func init() {
	register("projections rebuild", "", "drop every projection and refold it from the ledger", runProjectionsRebuild)
}

func runProjectionsRebuild(ctx context.Context, g *Globals, _ *noOptions, args []string) error {
	if len(args) > 0 {
		return usagef("projections rebuild takes no arguments")
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	var progress func(done, total uint64)
	if g.StdoutTerminal && !g.JSON {
		progress = func(done, total uint64) { fmt.Fprintf(g.Stdout, "\rrebuilt %d/%d events", done, total) }
	}
	n, err := st.Rebuild(ctx, progress)
	if progress != nil {
		fmt.Fprintln(g.Stdout)
	}
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(map[string]any{"ok": true, "events": n})
	}
	fmt.Fprintf(g.Stdout, "rebuilt projections from %d events\n", n)
	return nil
}
