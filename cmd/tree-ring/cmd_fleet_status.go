package main

import (
	"context"
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/fleetstatus"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
)

type fleetStatusOptions struct {
	From   string
	At     string
	Expect string
	Stale  time.Duration
	// NATS is only listed here: a command line with --nats runs in
	// tree-ring-fleet (fleetStatusLive), which reads the stream.
	NATS string
}

func (o *fleetStatusOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.From, "from", "", "directory of replicas written by fleet collect (required)")
	fs.StringVar(&o.At, "at", "", "the instant, RFC3339 (default now)")
	fs.StringVar(&o.Expect, "expect", "", "fleet file (STORE_ID PUBLIC_KEY LABEL per line): label the stores, show missing and unexpected ones")
	fs.DurationVar(&o.Stale, "stale", 0, "with --expect: a store whose last event is older than this before --at is stale")
	fs.StringVar(&o.NATS, "nats", "", "read the stream's heads live from the NATS server(s) at `URL`, comma-separated: runs "+cli.Fleet.Program+" status (its connection flags: "+cli.Fleet.Program+" status --help)")
}

func init() {
	c := register("fleet status", "", "one row per store and harness: state at an instant, newest receipt, last event, heads and lag (live with --nats)", runFleetStatus)
	c.companion = &cli.Fleet
	for _, k := range cli.Fleet.Commands {
		if k.Word == "status" {
			c.companionFlag = k.Flag
		}
	}
}

// runFleetStatus shows the replicas under --from; the stream's heads are
// what the last collect recorded. It reads only.
func runFleetStatus(ctx context.Context, g *Globals, o *fleetStatusOptions, args []string) error {
	if len(args) > 0 {
		return usagef("fleet status takes no arguments")
	}
	if o.From == "" {
		return usagef("--from DIR is required")
	}
	at, err := replayInstant(g, o.At)
	if err != nil {
		return err
	}
	var exp map[string]fleetsign.Expected
	if o.Expect != "" {
		if exp, err = replica.ReadExpect(o.Expect); err != nil {
			return err
		}
	} else if o.Stale != 0 {
		return usagef("--stale needs --expect")
	}
	rows, err := fleetstatus.Rows(ctx, fleetstatus.Options{Dir: o.From, At: at, Expect: exp, Stale: o.Stale, LockTimeout: g.LockTimeout})
	if err != nil {
		return err
	}
	return fleetstatus.Write(g.Stdout, g.JSON, at, rows)
}
