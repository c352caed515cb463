package fleetcli

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/fleetstatus"
)

type statusOptions struct {
	connOptions
	fleetstatus.Flags
}

func (o *statusOptions) AddFlags(fs *pflag.FlagSet) {
	o.Flags.AddFlags(fs)
	o.connOptions.AddFlags(fs)
	_ = fs.MarkHidden("replicas") // status never creates the stream
	fs.Lookup("stream").Usage = "JetStream stream (read only; fleet publish creates it)"
}

// runStatus is tree-ring's fleet status with the stream's heads read
// live: the replicas first, then the stream, whose heads only grow, so
// the lag shown is never less than it was.
func runStatus(ctx context.Context, g *Globals, o *statusOptions, args []string) error {
	if len(args) > 0 {
		return cli.Usagef("fleet status takes no arguments")
	}
	if err := o.check(g.Getenv); err != nil {
		return err
	}
	opts, err := o.Options(g.Now(), g.LockTimeout)
	if err != nil {
		return err
	}
	rows, err := fleetstatus.Rows(ctx, opts)
	if err != nil {
		return err
	}
	nc, err := fleet.Connect(o.conn("tree-ring fleet status", g.debugLog()))
	if err != nil {
		return err
	}
	defer nc.Close()
	heads, err := fleet.StreamHeads(ctx, nc, o.Stream, o.Timeout)
	if err != nil {
		return fmt.Errorf("fleet status: %w", err)
	}
	return fleetstatus.Write(g.Stdout, g.JSON, opts.At, fleetstatus.Live(rows, heads, g.Now()))
}
