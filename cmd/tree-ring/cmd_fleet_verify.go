package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/fleetstatus"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
	"github.com/tree-ring/tree-ring/cmd/internal/storekey"
)

type fleetVerifyOptions struct {
	From   string
	Expect string
	Stale  time.Duration
}

func (o *fleetVerifyOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.From, "from", "", "directory of replicas written by fleet collect (required)")
	fs.StringVar(&o.Expect, "expect", "", "fleet file (STORE_ID PUBLIC_KEY LABEL per line): every listed store must be there, signed by its key")
	fs.DurationVar(&o.Stale, "stale", 0, "with --expect: fail a store whose last event is older than this")
}

func init() {
	register("fleet verify", "", "verify every replica's signatures, chain, projections and bbolt consistency (exit 3 naming each failure)", runFleetVerify)
}

type fleetVerified struct {
	StoreID string `json:"store_id"`
	Label   string `json:"label,omitempty"`
	bolt.VerifyReport
}

// fleetFailure is a store that does not verify, or an expected one that
// is missing.
type fleetFailure struct {
	StoreID string `json:"store_id"`
	Label   string `json:"label,omitempty"`
	Error   string `json:"error"`
	err     error
}

// runFleetVerify checks every replica in store id order and reports every
// failure: a replica the collector stopped (an altered, reordered, missing
// or unsigned event in the stream), one holding an event its store's key
// did not sign, one whose store.initialized names another store than its
// directory, what `audit verify` finds, and with --expect a listed store
// without a replica. A replica of a store the fleet file does not list is
// reported as unexpected and not verified; it fails nothing.
func runFleetVerify(ctx context.Context, g *Globals, o *fleetVerifyOptions, args []string) error {
	if len(args) > 0 {
		return usagef("fleet verify takes no arguments")
	}
	if o.From == "" {
		return usagef("--from DIR is required")
	}
	var exp map[string]fleetsign.Expected
	if o.Expect != "" {
		var err error
		if exp, err = replica.ReadExpect(o.Expect); err != nil {
			return err
		}
	} else if o.Stale != 0 {
		return usagef("--stale needs --expect")
	}
	ids, links, err := replica.List(o.From)
	if err != nil {
		return err
	}
	if len(ids)+len(links) == 0 && exp == nil {
		return fmt.Errorf("%s holds no replica (run `tree-ring fleet collect --into %s` first)", o.From, o.From)
	}
	out, failed, unexpected, events := verifyReplicas(ctx, g, o.From, ids, exp, o.Stale)
	for _, id := range links {
		err := &bolt.VerifyError{Detail: replica.SymlinkDetail}
		failed = append(failed, fleetFailure{StoreID: id, Label: exp[id].Label, Error: err.Error(), err: err})
	}
	if err := printFleetVerify(g, o, out, failed, unexpected, events); err != nil {
		return err
	}
	if len(failed) > 0 {
		more := ""
		if len(failed) > 1 {
			more = fmt.Sprintf(" (and %d more failing stores)", len(failed)-1)
		}
		return fmt.Errorf("store %s%s: %w%s", failed[0].StoreID, labelSuffix(failed[0].Label), failed[0].err, more)
	}
	return nil
}

func printFleetVerify(g *Globals, o *fleetVerifyOptions, out []fleetVerified, failed []fleetFailure, unexpected []string, events uint64) error {
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK         bool            `json:"ok"`
			Stores     []fleetVerified `json:"stores"`
			Failures   []fleetFailure  `json:"failures"`
			Unexpected []string        `json:"unexpected"`
		}{len(failed) == 0, out, failed, unexpected})
	}
	for _, v := range out {
		fmt.Fprintf(g.Stdout, "verified store %s%s: %d events, chain head %.16s, %d projections match, signed by its key\n", v.StoreID, labelSuffix(v.Label), v.Events, v.ChainHead, len(v.Projections))
	}
	for _, id := range unexpected {
		fmt.Fprintf(g.Stdout, "unexpected store %s: not in %s, not verified\n", id, o.Expect)
	}
	for _, f := range failed {
		fmt.Fprintf(g.Stdout, "FAILED store %s%s: %s\n", f.StoreID, labelSuffix(f.Label), f.Error)
	}
	if len(failed) == 0 {
		fmt.Fprintf(g.Stdout, "fleet verified: %d replicas, %d events\n", len(out), events)
	}
	return nil
}

// verifyReplicas verifies each replica of ids under dir, and with exp
// (the fleet file) only the listed ones, adding the listed stores that
// have no replica as failures.
func verifyReplicas(ctx context.Context, g *Globals, dir string, ids []string, exp map[string]fleetsign.Expected, stale time.Duration) (out []fleetVerified, failed []fleetFailure, unexpected []string, total uint64) {
	out, failed, unexpected = []fleetVerified{}, []fleetFailure{}, []string{}
	seen := map[string]bool{}
	for _, id := range ids {
		e, listed := exp[id]
		if exp != nil && !listed {
			unexpected = append(unexpected, id)
			continue
		}
		seen[id] = true
		rep, err := verifyReplica(ctx, g, filepath.Join(dir, id), id, e.PublicKey)
		if err == nil && stale > 0 {
			err = checkFresh(g, filepath.Join(dir, id), stale)
		}
		if e.Label == "" || e.Label == "-" {
			e.Label = recordedLabel(ctx, g, filepath.Join(dir, id))
		}
		if err != nil {
			failed = append(failed, fleetFailure{StoreID: id, Label: e.Label, Error: err.Error(), err: err})
			continue
		}
		out = append(out, fleetVerified{id, e.Label, rep})
		total += rep.Events
	}
	missing := []string{}
	for id := range exp {
		if _, err := os.Lstat(filepath.Join(dir, id)); !seen[id] && errors.Is(err, os.ErrNotExist) {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	for _, id := range missing {
		err := &bolt.VerifyError{Detail: "missing: the fleet file lists it, " + dir + " holds no replica of it"}
		failed = append(failed, fleetFailure{StoreID: id, Label: exp[id].Label, Error: err.Error(), err: err})
	}
	return out, failed, unexpected, total
}

// recordedLabel is the replica's own label (fleet label), "" when it has
// none or cannot be read (verify reports why elsewhere).
func recordedLabel(ctx context.Context, g *Globals, root string) string {
	st, err := replica.Open(root, g.LockTimeout)
	if err != nil {
		return ""
	}
	defer st.Close()
	label, _, _ := storekey.Label(ctx, st)
	return label
}

// checkFresh fails a replica whose newest event (the host's clock) is
// older than stale: the host stopped publishing, or collect stopped.
func checkFresh(g *Globals, root string, stale time.Duration) error {
	st, err := replica.Open(root, g.LockTimeout)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.View(func(r *bolt.Reader) error {
		head, _ := r.Head()
		e, ok, err := r.Event(head)
		if err != nil || !ok {
			return err
		}
		if age := g.Now().Sub(e.RecordedAt); age > stale {
			return &bolt.VerifyError{Position: head, Detail: fmt.Sprintf("stale: the newest event was recorded %s, %s ago (--stale %s)", e.RecordedAt.UTC().Format(time.RFC3339), age.Round(time.Second), stale)}
		}
		return nil
	})
}

func labelSuffix(label string) string {
	if label == "" || label == "-" {
		return ""
	}
	return " (" + label + ")"
}

func verifyReplica(ctx context.Context, g *Globals, root, id string, want ed25519.PublicKey) (bolt.VerifyReport, error) {
	stop, stopped, err := replica.ReadStop(root)
	if err != nil {
		return bolt.VerifyReport{}, &bolt.VerifyError{Detail: "unreadable stop record: " + err.Error()}
	}
	if stopped {
		return bolt.VerifyReport{}, &bolt.VerifyError{Position: stop.Position, Detail: "replica stopped by fleet collect: " + stop.Reason}
	}
	st, err := replica.Open(root, g.LockTimeout)
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
	if err != nil {
		return rep, err
	}
	return rep, fleetstatus.VerifySigned(ctx, st, root, id, want)
}
