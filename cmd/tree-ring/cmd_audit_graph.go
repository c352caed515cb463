package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/fsm"
)

type auditGraphOptions struct {
	Format  string
	Harness string
}

func (o *auditGraphOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Format, "format", "mermaid", "diagram format: mermaid or dot")
	fs.StringVar(&o.Harness, "harness", "", "draw the transitions this harness took (counts, first and last time) instead of the table")
}

func init() {
	register("audit graph", "", "draw the harness state machine, or the transitions one harness took", runAuditGraph)
}

func runAuditGraph(ctx context.Context, g *Globals, o *auditGraphOptions, args []string) error {
	if len(args) > 0 {
		return usagef("audit graph takes no arguments")
	}
	if o.Format != "mermaid" && o.Format != "dot" {
		return usagef("--format %q: want mermaid or dot", o.Format)
	}
	if err := checkHarnessFlag(o.Harness); err != nil {
		return err
	}
	var diagram string
	if o.Harness == "" {
		diagram = fsm.Mermaid()
		if o.Format == "dot" {
			diagram = fsm.DOT()
		}
	} else {
		// The harness's real history, derived expiries included, as of now.
		hs, err := replayHistories(ctx, g, o.Harness, "", g.Now().UTC())
		if err != nil {
			return err
		}
		diagram = fsm.HistoryMermaid(hs[0])
		if o.Format == "dot" {
			diagram = fsm.HistoryDOT(hs[0])
		}
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK      bool   `json:"ok"`
			Format  string `json:"format"`
			Harness string `json:"harness,omitempty"`
			Diagram string `json:"diagram"`
		}{true, o.Format, o.Harness, diagram})
	}
	_, err := io.WriteString(g.Stdout, diagram)
	return err
}
