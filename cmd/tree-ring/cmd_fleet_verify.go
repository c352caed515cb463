package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
	"github.com/tree-ring/tree-ring/projections"
)

type fleetVerifyOptions struct {
	From string
}

func (o *fleetVerifyOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.From, "from", "", "directory of replicas written by fleet collect (required)")
}

func init() {
	register("fleet verify", "", "verify every replica's chain, projections and bbolt consistency (exit 3 naming the first failure)", runFleetVerify)
}

type fleetVerified struct {
	StoreID string `json:"store_id"`
	bolt.VerifyReport
}

// runFleetVerify checks the replicas in store id order and stops at the
// first failure: a replica the collector stopped (an altered, reordered or
// missing event in the stream), a replica whose store.initialized names
// another store than its directory, or what `audit verify` finds.
func runFleetVerify(ctx context.Context, g *Globals, o *fleetVerifyOptions, args []string) error {
	if len(args) > 0 {
		return usagef("fleet verify takes no arguments")
	}
	if o.From == "" {
		return usagef("--from DIR is required")
	}
	ids, err := replica.List(o.From)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return fmt.Errorf("%s holds no replica (run `tree-ring fleet collect --into %s` first)", o.From, o.From)
	}
	out := make([]fleetVerified, 0, len(ids))
	var events uint64
	for _, id := range ids {
		rep, err := verifyReplica(ctx, g, filepath.Join(o.From, id), id)
		if err != nil {
			return fmt.Errorf("store %s: %w", id, err)
		}
		out = append(out, fleetVerified{id, rep})
		events += rep.Events
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK     bool            `json:"ok"`
			Stores []fleetVerified `json:"stores"`
		}{true, out})
	}
	for _, v := range out {
		fmt.Fprintf(g.Stdout, "verified store %s: %d events, chain head %.16s, %d projections match\n", v.StoreID, v.Events, v.ChainHead, len(v.Projections))
	}
	fmt.Fprintf(g.Stdout, "fleet verified: %d replicas, %d events\n", len(out), events)
	return nil
}

func verifyReplica(ctx context.Context, g *Globals, root, id string) (bolt.VerifyReport, error) {
	stop, stopped, err := replica.ReadStop(root)
	if err != nil {
		return bolt.VerifyReport{}, &bolt.VerifyError{Detail: "unreadable stop record: " + err.Error()}
	}
	if stopped {
		return bolt.VerifyReport{}, &bolt.VerifyError{Position: stop.Position, Detail: "replica stopped by fleet collect: " + stop.Reason}
	}
	st, err := bolt.OpenRoot(root, bolt.Options{ReadOnly: true, LockTimeout: g.LockTimeout, Projections: projections.All()})
	if err != nil {
		return bolt.VerifyReport{}, asVerifyFailure(err)
	}
	defer st.Close()
	rep, err := st.Verify(ctx)
	if err != nil {
		return bolt.VerifyReport{}, asVerifyFailure(err)
	}
	err = st.View(func(r *bolt.Reader) error {
		ms, ok, err := cli.StoreIdentity(r)
		if err != nil {
			return &bolt.VerifyError{Detail: err.Error()}
		}
		if ok && ms.StoreID != id {
			return &bolt.VerifyError{Detail: fmt.Sprintf("the replica's store.initialized says store %s", ms.StoreID)}
		}
		return nil
	})
	return rep, err
}
