package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

type fleetStatusOptions struct {
	From string
	At   string
}

func (o *fleetStatusOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.From, "from", "", "directory of replicas written by fleet collect (required)")
	fs.StringVar(&o.At, "at", "", "the instant, RFC3339 (default now)")
}

func init() {
	register("fleet status", "", "one row per store and harness: state at an instant, newest receipt, last event", runFleetStatus)
}

// fleetRow is one store and harness; the --json shape (docs/fleet.md).
type fleetRow struct {
	StoreID                string     `json:"store_id"`
	ProjectRootFingerprint string     `json:"project_root_fingerprint"`
	HarnessID              string     `json:"harness_id"`
	State                  fsm.State  `json:"state"`
	NewestReceiptAt        *time.Time `json:"newest_receipt_at"`
	LastEventAt            *time.Time `json:"last_event_at"`
	// Replica is "ok", or "stopped" with StoppedAt (the collector found an
	// altered, reordered or missing event there).
	Replica   string `json:"replica"`
	StoppedAt uint64 `json:"stopped_at,omitempty"`
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
	ids, err := replica.List(o.From)
	if err != nil {
		return err
	}
	rows := []fleetRow{}
	for _, id := range ids {
		rs, err := storeRows(ctx, g, filepath.Join(o.From, id), id, at)
		if err != nil {
			return fmt.Errorf("store %s: %w", id, err)
		}
		rows = append(rows, rs...)
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK   bool       `json:"ok"`
			At   time.Time  `json:"at"`
			Rows []fleetRow `json:"rows"`
		}{true, at, rows})
	}
	tw := tabwriter.NewWriter(g.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "STORE\tPROJECT ROOT\tHARNESS\tSTATE AT %s\tNEWEST RECEIPT\tLAST EVENT\tREPLICA\n", at.Format(humanTime))
	for _, r := range rows {
		rep := r.Replica
		if r.StoppedAt != 0 {
			rep = fmt.Sprintf("stopped at %d", r.StoppedAt)
		}
		fmt.Fprintf(tw, "%s\t%.16s\t%s\t%s\t%s\t%s\t%s\n", r.StoreID, dash(r.ProjectRootFingerprint), r.HarnessID, r.State,
			timeOrDash(r.NewestReceiptAt), timeOrDash(r.LastEventAt), rep)
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
	err = st.View(func(r *bolt.Reader) error {
		ms, _, err := cli.StoreIdentity(r)
		base.ProjectRootFingerprint = ms.ProjectRootFingerprint
		return err
	})
	st.Close()
	if err != nil {
		return nil, err
	}
	rep := fsm.NewReplayer(at)
	err = replayLedger(ctx, &rg, "", func(e *events.Envelope) error {
		if !e.RecordedAt.After(at) {
			t := e.RecordedAt.UTC()
			base.LastEventAt = &t
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

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(humanTime)
}
