package fleetcli

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
	"github.com/tree-ring/tree-ring/cmd/internal/storekey"
	"github.com/tree-ring/tree-ring/projections"
)

type collectOptions struct {
	connOptions
	Expect  string
	Into    string
	Follow  bool
	Durable string
	AckWait time.Duration
}

func (o *collectOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Into, "into", "", "directory of replicas, one ledger root per store (required)")
	fs.BoolVar(&o.Follow, "follow", false, "keep collecting until interrupted")
	fs.StringVar(&o.Durable, "durable", fleet.DefaultDurable, "durable consumer name (one per replica directory)")
	fs.DurationVar(&o.AckWait, "ack-wait", 30*time.Second, "redelivery delay of a message left unacknowledged")
	fs.StringVar(&o.Expect, "expect", "", "fleet file (STORE_ID PUBLIC_KEY LABEL per line): collect only these stores, signed by these keys")
	o.connOptions.AddFlags(fs)
}

func runCollect(ctx context.Context, g *Globals, o *collectOptions, args []string) error {
	if len(args) > 0 {
		return cli.Usagef("fleet collect takes no arguments")
	}
	if err := o.check(g.Getenv); err != nil {
		return err
	}
	if o.Into == "" {
		return cli.Usagef("--into DIR is required")
	}
	if o.AckWait <= 0 {
		return cli.Usagef("--ack-wait must be positive")
	}
	expected, err := expectedKeys(o.Expect)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Into, 0o700); err != nil {
		return fmt.Errorf("replica directory: %w", err)
	}
	nc, err := fleet.Connect(o.conn("tree-ring fleet collect", g.debugLog()))
	if err != nil {
		return err
	}
	defer nc.Close()
	sink := &ReplicaDir{Dir: o.Into, LockTimeout: g.LockTimeout, Now: g.Now}
	res, err := fleet.Collect(ctx, nc, sink, fleet.CollectOptions{
		Stream: o.Stream, Durable: o.Durable, Replicas: o.Replicas, AckWait: o.AckWait, Follow: o.Follow, Timeout: o.Timeout, Expected: expected, Log: g.debugLog(),
		OnPin: func(store, key string) {
			fmt.Fprintf(g.Stderr, "%s: store %s: new store, trusting the key its first message carries (%s; pinned on first sight: give --expect to pin keys yourself)\n", cli.Fleet.Program, store, key)
		},
		OnStop: func(store string, pos uint64, reason string) {
			fmt.Fprintf(g.Stderr, "%s: store %s: replica stopped at position %d: %s\n", cli.Fleet.Program, store, pos, cli.OneLine(reason))
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
			state = fmt.Sprintf("stopped at %d: %s", s.StoppedAt, cli.OneLine(s.Reason))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", s.StoreID, s.Appended, s.Duplicates, s.Head, state)
	}
	for _, id := range res.Unexpected {
		fmt.Fprintf(tw, "%s\t-\t-\t-\tunexpected store: not collected\n", id)
	}
	if res.Ignored > 0 {
		fmt.Fprintf(tw, "(%d messages on other subjects ignored)\n", res.Ignored)
	}
	return tw.Flush()
}

// expectedKeys are the keys a fleet file pins, nil without one.
func expectedKeys(path string) (map[string]ed25519.PublicKey, error) {
	if path == "" {
		return nil, nil
	}
	exp, err := replica.ReadExpect(path)
	if err != nil {
		return nil, err
	}
	keys := make(map[string]ed25519.PublicKey, len(exp))
	for id, e := range exp {
		keys[id] = e.PublicKey
	}
	return keys, nil
}

// ReplicaDir is the collector's directory as fleet.Collect's sink: one
// ledger root per store (replica.Root), plus a stop record when a replica
// stopped. Not safe for concurrent use.
type ReplicaDir struct {
	Dir         string
	LockTimeout time.Duration
	Now         func() time.Time
}

// Keys reads the replica's key chain and head (read-only open; none
// before the replica exists).
func (d *ReplicaDir) Keys(store string) (fleet.ReplicaKeys, error) {
	if fi, err := os.Lstat(replica.Root(d.Dir, store)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return fleet.ReplicaKeys{}, errors.New(replica.SymlinkDetail) // never written through
	}
	st, err := bolt.OpenRoot(replica.Root(d.Dir, store), bolt.Options{ReadOnly: true, LockTimeout: d.LockTimeout, Projections: projections.All()})
	if bolt.NeedsMigration(err) {
		// An older collector's replica: collect is its migration (as in
		// Replicate), so this first read migrates it.
		st, err = bolt.OpenRoot(replica.Root(d.Dir, store), bolt.Options{LockTimeout: d.LockTimeout, Migrate: true, Projections: projections.All()})
	}
	var nf *bolt.NotFoundError
	if errors.As(err, &nf) {
		return fleet.ReplicaKeys{}, nil
	}
	if err != nil {
		return fleet.ReplicaKeys{}, err
	}
	defer st.Close()
	var rk fleet.ReplicaKeys
	if rk.Head, _, err = st.Head(); err != nil {
		return rk, err
	}
	if _, rk.Recorded, _, err = storekey.Recorded(context.Background(), st); err != nil {
		return rk, err
	}
	rk.Chain, err = storekey.Chain(context.Background(), st, store)
	return rk, err
}

// Signed writes the replica's signed head record.
func (d *ReplicaDir) Signed(store string, h fleet.SignedHead) error {
	return replica.WriteSigned(replica.Root(d.Dir, store), replica.Signed{StoreID: store, Position: h.Position, Hash: h.Hash, Signature: h.Signature})
}

// Collected writes the replica's last-collect record, for a store that
// has a replica.
func (d *ReplicaDir) Collected(store string, streamHead uint64) error {
	root := replica.Root(d.Dir, store)
	if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return replica.WriteCollected(root, replica.Collected{StoreID: store, StreamHead: streamHead, At: d.Now().UTC()})
}

func (d *ReplicaDir) Stopped(store string) (bool, error) {
	_, ok, err := replica.ReadStop(replica.Root(d.Dir, store))
	return ok, err
}

// Replicate opens the store's replica for one commit, so auditors' read
// commands can run between batches of a --follow.
func (d *ReplicaDir) Replicate(ctx context.Context, store string, raws [][]byte) (fleet.Applied, error) {
	// A replica has no installed program that an older format would
	// keep working for: an older collector's replica is migrated.
	st, err := bolt.OpenRoot(replica.Root(d.Dir, store), bolt.Options{LockTimeout: d.LockTimeout, Migrate: true, Projections: projections.All()})
	if err != nil {
		return fleet.Applied{}, err
	}
	defer st.Close()
	res, err := st.Replicate(ctx, raws)
	if err != nil {
		return fleet.Applied{}, err
	}
	a := fleet.Applied{Appended: res.Appended, Duplicates: res.Duplicates}
	if r := res.Refused; r != nil {
		a.Refused, a.Gap, a.Position = r, r.Kind == bolt.ReplicaGap, r.Position
	}
	err = st.View(func(r *bolt.Reader) error {
		a.Head, _ = r.Head()
		ms, ok, err := cli.StoreIdentity(r)
		if err == nil && ok && ms.StoreID != store && a.Refused == nil {
			// The events are the subject's, faithfully; the subject is
			// not theirs. Stop here; fleet verify names the mismatch.
			a.Refused = fmt.Errorf("the replica's store.initialized says store %s, its subject says %s", ms.StoreID, store)
		}
		return err
	})
	return a, err
}

// Stop writes the stop record create-only: the first reason stays.
func (d *ReplicaDir) Stop(store string, position uint64, reason string) error {
	return replica.WriteStop(replica.Root(d.Dir, store), replica.Stop{StoreID: store, Position: position, Reason: reason, At: d.Now().UTC()})
}
