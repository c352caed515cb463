package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet"
)

type fleetCollectOptions struct {
	fleetConnOptions
	Into    string
	Follow  bool
	Durable string
	AckWait time.Duration
}

func (o *fleetCollectOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Into, "into", "", "directory of replicas, one ledger root per store (required)")
	fs.BoolVar(&o.Follow, "follow", false, "keep collecting until interrupted")
	fs.StringVar(&o.Durable, "durable", fleet.DefaultDurable, "durable consumer name (one per replica directory)")
	fs.DurationVar(&o.AckWait, "ack-wait", 30*time.Second, "redelivery delay of a message left unacknowledged")
	o.fleetConnOptions.AddFlags(fs)
}

func init() {
	register("fleet collect", "", "write every store's events from NATS JetStream into its own replica ledger under --into", runFleetCollect)
}

func runFleetCollect(ctx context.Context, g *Globals, o *fleetCollectOptions, args []string) error {
	if len(args) > 0 {
		return usagef("fleet collect takes no arguments")
	}
	if err := o.check(); err != nil {
		return err
	}
	if o.Into == "" {
		return usagef("--into DIR is required")
	}
	if o.AckWait <= 0 {
		return usagef("--ack-wait must be positive")
	}
	if err := os.MkdirAll(o.Into, 0o700); err != nil {
		return fmt.Errorf("replica directory: %w", err)
	}
	nc, err := fleet.Connect(o.conn("tree-ring fleet collect"))
	if err != nil {
		return err
	}
	defer nc.Close()
	sink := &replicaDir{g: g, dir: o.Into}
	res, err := fleet.Collect(ctx, nc, sink, fleet.CollectOptions{
		Stream: o.Stream, Durable: o.Durable, Replicas: o.Replicas, AckWait: o.AckWait, Follow: o.Follow, Timeout: o.Timeout,
		OnStop: func(store string, pos uint64, reason string) {
			fmt.Fprintf(g.Stderr, "tree-ring: store %s: replica stopped at position %d: %s\n", store, pos, oneLine(reason))
		},
	})
	if err != nil {
		return fmt.Errorf("fleet collect: %w", err)
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK bool `json:"ok"`
			fleet.CollectResult
		}{true, res})
	}
	tw := tabwriter.NewWriter(g.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STORE\tAPPENDED\tDUPLICATES\tHEAD\tREPLICA")
	for _, s := range res.Stores {
		state := "ok"
		if s.StoppedAt != 0 {
			state = fmt.Sprintf("stopped at %d: %s", s.StoppedAt, oneLine(s.Reason))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", s.StoreID, s.Appended, s.Duplicates, s.Head, state)
	}
	if res.Ignored > 0 {
		fmt.Fprintf(tw, "(%d messages on other subjects ignored)\n", res.Ignored)
	}
	return tw.Flush()
}
