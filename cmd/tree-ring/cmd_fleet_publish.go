package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/bolt"
)

type fleetPublishOptions struct {
	fleetConnOptions
}

func (o *fleetPublishOptions) AddFlags(fs *pflag.FlagSet) { o.fleetConnOptions.AddFlags(fs) }

func init() {
	register("fleet publish", "", "publish this store's events the stream does not hold yet to NATS JetStream (appends nothing here)", runFleetPublish)
}

// runFleetPublish records no run: the stream is the record of a publish,
// and a second publish with nothing new must change nothing here.
func runFleetPublish(ctx context.Context, g *Globals, o *fleetPublishOptions, args []string) error {
	if len(args) > 0 {
		return usagef("fleet publish takes no arguments")
	}
	if err := o.check(); err != nil {
		return err
	}
	src := &ledgerSource{g: g}
	var storeID string
	st, err := src.open()
	if err != nil {
		return err
	}
	err = st.View(func(r *bolt.Reader) error {
		ms, ok, err := storeIdentity(r)
		if err == nil && !ok {
			err = fmt.Errorf("%s: the store is not initialized (run `tree-ring init`)", st.Path())
		}
		storeID = ms.StoreID
		return err
	})
	st.Close()
	if err != nil {
		return err
	}
	nc, err := fleet.Connect(o.conn("tree-ring fleet publish"))
	if err != nil {
		return err
	}
	defer nc.Close()
	res, err := fleet.Publish(ctx, nc, src, fleet.PublishOptions{Stream: o.Stream, StoreID: storeID, Replicas: o.Replicas, Timeout: o.Timeout})
	if err != nil {
		return fmt.Errorf("fleet publish: %w", err)
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK bool `json:"ok"`
			fleet.PublishResult
		}{true, res})
	}
	fmt.Fprintf(g.Stdout, "published %d events of store %s to %s (the stream held %d, now %d)\n", res.Published, res.StoreID, res.Subject, res.Held, res.Head)
	return nil
}
