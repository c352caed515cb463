package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/fleetstatus"
)

type fleetStatusOptions struct {
	fleetstatus.Flags
	// NATS is only listed here: a command line with --nats runs in
	// tree-ring-fleet (fleetStatusLive), which reads the stream.
	NATS string
}

func (o *fleetStatusOptions) AddFlags(fs *pflag.FlagSet) {
	o.Flags.AddFlags(fs)
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
	opts, err := o.Options(g.Now(), g.LockTimeout)
	if err != nil {
		return err
	}
	rows, err := fleetstatus.Rows(ctx, opts)
	if err != nil {
		return err
	}
	return fleetstatus.Write(g.Stdout, g.JSON, opts.At, rows)
}
