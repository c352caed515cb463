package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

type fleetStatusOptions struct {
	From   string
	At     string
	Expect string
	Stale  time.Duration
}

func (o *fleetStatusOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.From, "from", "", "directory of replicas written by fleet collect (required)")
	fs.StringVar(&o.At, "at", "", "the instant, RFC3339 (default now)")
	fs.StringVar(&o.Expect, "expect", "", "fleet file (STORE_ID PUBLIC_KEY LABEL per line): label the stores, show missing and unexpected ones")
	fs.DurationVar(&o.Stale, "stale", 0, "with --expect: a store whose last event is older than this before --at is stale")
}

func init() {
	register("fleet status", "", "one row per store and harness: state at an instant, newest receipt, last event", runFleetStatus)
}

// fleetRow is one store and harness; the --json shape (docs/fleet.md).
type fleetRow struct {
	StoreID                string     `json:"store_id"`
	Label                  string     `json:"label,omitempty"`
	ProjectRootFingerprint string     `json:"project_root_fingerprint"`
	HarnessID              string     `json:"harness_id"`
	State                  fsm.State  `json:"state"`
	NewestReceiptAt        *time.Time `json:"newest_receipt_at"`
	LastEventAt            *time.Time `json:"last_event_at"`
	// Replica is "ok", or "stopped" with StoppedAt (the collector found an
	// altered, reordered, missing or unsigned event there), or "unsigned"
	// with StoppedAt (the replica holds events past what its store's key
	// signed, or lacks the record of it: fleet verify fails); with --expect
	// also "missing" (listed, no replica), "unexpected" (a replica the
	// file does not list) or "stale" (no event within --stale).
	Replica   string `json:"replica"`
	StoppedAt uint64 `json:"stopped_at,omitempty"`
	// ReplicaHead is the replica's last position now; StreamHead what the
	// stream held for the store when a collect last had nothing left to
	// deliver (CollectedAt), and Lag their difference: how far the replica
	// was behind when last known (nil before any such collect).
	ReplicaHead uint64     `json:"replica_head"`
	StreamHead  *uint64    `json:"stream_head"`
	Lag         *uint64    `json:"lag"`
	CollectedAt *time.Time `json:"collected_at"`
}

// runFleetStatus replays each replica at the instant exactly as `audit
// replay --at` does on a project's own ledger. It reads only.
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
	ids, links, err := replica.List(o.From)
	if err != nil {
		return err
	}
	rows := []fleetRow{}
	for _, id := range links {
		rows = append(rows, fleetRow{StoreID: id, Replica: "symlink (not followed)"})
	}
	for _, id := range ids {
		rs, err := storeRows(ctx, g, filepath.Join(o.From, id), id, at)
		if err != nil {
			return fmt.Errorf("store %s: %w", id, err)
		}
		rows = append(rows, rs...)
	}
	if exp != nil {
		rows = expectRows(rows, exp, at, o.Stale)
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK   bool       `json:"ok"`
			At   time.Time  `json:"at"`
			Rows []fleetRow `json:"rows"`
		}{true, at, rows})
	}
	tw := tabwriter.NewWriter(g.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "STORE\tLABEL\tPROJECT ROOT\tHARNESS\tSTATE AT %s\tNEWEST RECEIPT\tLAST EVENT\tHEAD\tSTREAM HEAD\tLAG\tLAST COLLECT\tREPLICA\n", at.Format(humanTime))
	for _, r := range rows {
		rep := r.Replica
		if r.StoppedAt != 0 {
			rep = fmt.Sprintf("%s at %d", r.Replica, r.StoppedAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.16s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.StoreID, dash(r.Label), dash(r.ProjectRootFingerprint), r.HarnessID, r.State,
			timeOrDash(r.NewestReceiptAt), timeOrDash(r.LastEventAt), r.ReplicaHead, uintOrDash(r.StreamHead), uintOrDash(r.Lag), timeOrDash(r.CollectedAt), rep)
	}
	return tw.Flush()
}

func storeRows(ctx context.Context, g *Globals, root, id string, at time.Time) ([]fleetRow, error) {
	base := fleetRow{StoreID: id, Replica: "ok"}
	stop, stopped, err := replica.ReadStop(root)
	if err != nil {
		return nil, err
	}
	if stopped {
		base.Replica, base.StoppedAt = "stopped", stop.Position
	}
	rg := *g
	rg.Root = root
	st, err := rg.OpenStore(true)
	if err != nil {
		return nil, err
	}
	err = errors.Join(replicaHealth(ctx, st, root, id, &base), collectedHeads(st, root, &base))
	st.Close()
	if err != nil {
		return nil, err
	}
	rep := fsm.NewReplayer(at)
	err = replayLedger(ctx, &rg, "", func(e *events.Envelope) error {
		if !e.RecordedAt.After(at) {
			t := e.RecordedAt.UTC()
			base.LastEventAt = &t
			if e.Type == events.TypeStoreLabeled {
				p, err := events.Payload[events.StoreLabeled](e)
				if err != nil {
					return err
				}
				base.Label = p.Label // the store's own, as of --at
			}
		}
		return rep.Apply(e)
	})
	if err != nil {
		return nil, err
	}
	hs := rep.Finish()
	if len(hs) == 0 {
		r := base
		r.HarnessID, r.State = "-", "-"
		return []fleetRow{r}, nil
	}
	rows := make([]fleetRow, 0, len(hs))
	for _, h := range hs {
		r := base
		r.HarnessID, r.State = h.Harness, h.State
		for _, w := range h.Workers() {
			if w.At.After(at) {
				continue
			}
			if r.NewestReceiptAt == nil || w.At.After(*r.NewestReceiptAt) {
				t := w.At.UTC()
				r.NewestReceiptAt = &t
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// expectRows labels the rows of listed stores (the fleet file's label
// over the store's own, unless the file gives none), marks unlisted replicas
// unexpected and listed stores without a last event within stale of at
// stale, and adds a row for each listed store without a replica.
func expectRows(rows []fleetRow, exp map[string]fleetsign.Expected, at time.Time, stale time.Duration) []fleetRow {
	seen := map[string]bool{}
	for i := range rows {
		r := &rows[i]
		e, listed := exp[r.StoreID]
		seen[r.StoreID] = true
		if listed && e.Label != "-" {
			r.Label = e.Label
		}
		switch {
		case !listed:
			r.Replica = "unexpected"
		case r.Replica == "ok" && stale > 0 && (r.LastEventAt == nil || at.Sub(*r.LastEventAt) > stale):
			r.Replica = "stale"
		}
	}
	var missing []string
	for id := range exp {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	for _, id := range missing {
		rows = append(rows, fleetRow{StoreID: id, Label: exp[id].Label, HarnessID: "-", State: "-", Replica: "missing"})
	}
	return rows
}

// replicaHealth fills the row's fingerprint and, for a replica not
// stopped, whether its store's key signed everything it holds: the
// signature check is cheap (one record, one verification); the whole
// chain is fleet verify's.
func replicaHealth(ctx context.Context, st *bolt.Store, root, id string, base *fleetRow) error {
	err := st.View(func(r *bolt.Reader) error {
		ms, _, err := cli.StoreIdentity(r)
		base.ProjectRootFingerprint = ms.ProjectRootFingerprint
		return err
	})
	if err != nil || base.Replica != "ok" {
		return err
	}
	var ve *bolt.VerifyError
	if err := verifySigned(ctx, st, root, id, nil); errors.As(err, &ve) {
		base.Replica, base.StoppedAt = "unsigned", ve.Position
	} else if err != nil {
		return err
	}
	return nil
}

func uintOrDash(n *uint64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatUint(*n, 10)
}

// collectedHeads fills the row's heads: the replica's now, the stream's
// as its last collect recorded it.
func collectedHeads(st *bolt.Store, root string, base *fleetRow) error {
	head, _, err := st.Head()
	if err != nil {
		return err
	}
	base.ReplicaHead = head
	c, ok, err := replica.ReadCollected(root)
	if err != nil || !ok || c.At.IsZero() {
		return err // no collect had finished (the record holds a stop only)
	}
	at, sh := c.At.UTC(), c.StreamHead
	lag := uint64(0)
	if sh > head {
		lag = sh - head
	}
	base.StreamHead, base.Lag, base.CollectedAt = &sh, &lag, &at
	return nil
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(humanTime)
}
