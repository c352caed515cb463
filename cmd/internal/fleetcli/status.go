package fleetcli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/fleetstatus"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
)

type statusOptions struct {
	connOptions
	From   string
	At     string
	Expect string
	Stale  time.Duration
}

func (o *statusOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.From, "from", "", "directory of replicas written by fleet collect (required)")
	fs.StringVar(&o.At, "at", "", "the instant, RFC3339 (default now)")
	fs.StringVar(&o.Expect, "expect", "", "fleet file (STORE_ID PUBLIC_KEY LABEL per line): label the stores, show missing and unexpected ones")
	fs.DurationVar(&o.Stale, "stale", 0, "with --expect: a store whose last event is older than this before --at is stale")
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
	if o.From == "" {
		return cli.Usagef("--from DIR is required")
	}
	at := g.Now().UTC()
	if o.At != "" {
		t, err := time.Parse(time.RFC3339Nano, o.At)
		if err != nil {
			return cli.Usagef("--at %q: want an RFC3339 instant such as 2026-09-01T12:00:00Z", o.At)
		}
		at = t.UTC()
	}
	var exp map[string]fleetsign.Expected
	var err error
	if o.Expect != "" {
		if exp, err = replica.ReadExpect(o.Expect); err != nil {
			return err
		}
	} else if o.Stale != 0 {
		return cli.Usagef("--stale needs --expect")
	}
	rows, err := fleetstatus.Rows(ctx, fleetstatus.Options{Dir: o.From, At: at, Expect: exp, Stale: o.Stale, LockTimeout: g.LockTimeout})
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
	return fleetstatus.Write(g.Stdout, g.JSON, at, fleetstatus.Live(rows, heads, g.Now()))
}
