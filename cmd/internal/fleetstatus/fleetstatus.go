// Package fleetstatus is `fleet status` over a collector's directory
// (docs/fleet.md): one row per store and harness, replayed at an instant
// from the replicas, with the stream's head either as the last collect
// recorded it (tree-ring) or read live from the stream (tree-ring-fleet
// status --nats, which passes the heads in). It reads only and knows no
// network, so both programs link it.
package fleetstatus

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
	"github.com/tree-ring/tree-ring/cmd/internal/storekey"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// Options say what to show: the replicas under Dir at the instant At,
// labelled and checked against a fleet file when Expect is set.
type Options struct {
	Dir         string
	At          time.Time
	Expect      map[string]fleetsign.Expected
	Stale       time.Duration
	LockTimeout time.Duration
}

// Row is one store and harness; the --json shape (docs/fleet.md).
type Row struct {
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
	// file does not list) or "stale" (no event within --stale); with
	// --nats also "not collected" (the stream holds the store, no replica
	// does).
	Replica   string `json:"replica"`
	StoppedAt uint64 `json:"stopped_at,omitempty"`
	// ReplicaHead is the replica's last position now; StreamHead the last
	// position the stream holds for the store, as of StreamHeadAt: read
	// live with --nats, else what a collect last found when it had nothing
	// left to deliver (CollectedAt); Lag their difference (nil when the
	// stream's head is not known).
	ReplicaHead  uint64     `json:"replica_head"`
	StreamHead   *uint64    `json:"stream_head"`
	StreamHeadAt *time.Time `json:"stream_head_at"`
	Lag          *uint64    `json:"lag"`
	CollectedAt  *time.Time `json:"collected_at"`
}

// Rows replays each replica at o.At exactly as `audit replay --at` does on
// a project's own ledger.
func Rows(ctx context.Context, o Options) ([]Row, error) {
	ids, links, err := replica.List(o.Dir)
	if err != nil {
		return nil, err
	}
	rows := []Row{}
	for _, id := range links {
		rows = append(rows, Row{StoreID: id, Replica: symlinked})
	}
	for _, id := range ids {
		rs, err := storeRows(ctx, o, filepath.Join(o.Dir, id), id)
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", id, err)
		}
		rows = append(rows, rs...)
	}
	if o.Expect != nil {
		rows = expectRows(rows, o.Expect, o.At, o.Stale)
	}
	return rows, nil
}

// Live is rows with the stream's heads read from the stream at at
// (heads: a store absent has head 0), and a row "not collected" for each
// store the stream holds that no row names. Symlinked replicas keep no
// head.
func Live(rows []Row, heads map[string]uint64, at time.Time) []Row {
	at = at.UTC()
	named := map[string]bool{}
	for i := range rows {
		r := &rows[i]
		named[r.StoreID] = true
		if r.Replica != symlinked {
			r.live(heads[r.StoreID], at)
		}
	}
	var extra []string
	for id := range heads {
		if !named[id] {
			extra = append(extra, id)
		}
	}
	slices.Sort(extra)
	for _, id := range extra {
		r := Row{StoreID: id, HarnessID: "-", State: "-", Replica: "not collected"}
		r.live(heads[id], at)
		rows = append(rows, r)
	}
	return rows
}

func (r *Row) live(head uint64, at time.Time) {
	lag := uint64(0)
	if head > r.ReplicaHead {
		lag = head - r.ReplicaHead
	}
	r.StreamHead, r.Lag, r.StreamHeadAt = &head, &lag, &at
}

// symlinked is the REPLICA of a replica directory that is a symbolic link.
const symlinked = "symlink (not followed)"

// Write prints rows as fleet status does: a table, or with asJSON one
// object.
func Write(w io.Writer, asJSON bool, at time.Time, rows []Row) error {
	if asJSON {
		return json.NewEncoder(w).Encode(struct {
			OK   bool      `json:"ok"`
			At   time.Time `json:"at"`
			Rows []Row     `json:"rows"`
		}{true, at, rows})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "STORE\tLABEL\tPROJECT ROOT\tHARNESS\tSTATE AT %s\tNEWEST RECEIPT\tLAST EVENT\tHEAD\tSTREAM HEAD\tLAG\tLAST COLLECT\tREPLICA\n", at.Format(time.RFC3339))
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

// StoreIDs are the stores rows name, each once, in order.
func StoreIDs(rows []Row) []string {
	var ids []string
	for _, r := range rows {
		if len(ids) == 0 || ids[len(ids)-1] != r.StoreID {
			ids = append(ids, r.StoreID)
		}
	}
	return ids
}

func storeRows(ctx context.Context, o Options, root, id string) ([]Row, error) {
	base := Row{StoreID: id, Replica: "ok"}
	stop, stopped, err := replica.ReadStop(root)
	if err != nil {
		return nil, err
	}
	if stopped {
		base.Replica, base.StoppedAt = "stopped", stop.Position
	}
	st, err := replica.Open(root, o.LockTimeout)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := errors.Join(replicaHealth(ctx, st, root, id, &base), collectedHeads(st, root, &base)); err != nil {
		return nil, err
	}
	rep := fsm.NewReplayer(o.At)
	err = st.ReadAll(ctx, 0, func(e *events.Envelope) error {
		if !e.RecordedAt.After(o.At) {
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
		return nil, fmt.Errorf("replay %s: %w", st.Path(), err)
	}
	return harnessRows(base, rep.Finish(), o.At), nil
}

// harnessRows is base once per harness history, with its newest receipt
// as of at; base alone when the store has none.
func harnessRows(base Row, hs []*fsm.History, at time.Time) []Row {
	if len(hs) == 0 {
		base.HarnessID, base.State = "-", "-"
		return []Row{base}
	}
	rows := make([]Row, 0, len(hs))
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
	return rows
}

// expectRows labels the rows of listed stores (the fleet file's label
// over the store's own, unless the file gives none), marks unlisted replicas
// unexpected and listed stores without a last event within stale of at
// stale, and adds a row for each listed store without a replica.
func expectRows(rows []Row, exp map[string]fleetsign.Expected, at time.Time, stale time.Duration) []Row {
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
		rows = append(rows, Row{StoreID: id, Label: exp[id].Label, HarnessID: "-", State: "-", Replica: "missing"})
	}
	return rows
}

// replicaHealth fills the row's fingerprint and, for a replica not
// stopped, whether its store's key signed everything it holds: the
// signature check is cheap (one record, one verification); the whole
// chain is fleet verify's.
func replicaHealth(ctx context.Context, st *bolt.Store, root, id string, base *Row) error {
	err := st.View(func(r *bolt.Reader) error {
		ms, _, err := cli.StoreIdentity(r)
		base.ProjectRootFingerprint = ms.ProjectRootFingerprint
		return err
	})
	if err != nil || base.Replica != "ok" {
		return err
	}
	var ve *bolt.VerifyError
	if err := VerifySigned(ctx, st, root, id, nil); errors.As(err, &ve) {
		base.Replica, base.StoppedAt = "unsigned", ve.Position
	} else if err != nil {
		return err
	}
	return nil
}

// collectedHeads fills the row's heads: the replica's now, the stream's
// as its last collect recorded it.
func collectedHeads(st *bolt.Store, root string, base *Row) error {
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
	base.StreamHead, base.Lag, base.CollectedAt, base.StreamHeadAt = &sh, &lag, &at, &at
	return nil
}

// VerifySigned checks that the store's keys signed everything the replica
// holds (fleet status's REPLICA, fleet verify's last check): its key chain
// (store.key_recorded, each store.key_rotated signed by the key before it
// and by the new key) checks, want (the fleet file's key), when given, is
// its first key, and the signature collect recorded for the head event
// verifies, over the replica's own head position and hash, against the key
// in force there. The hash chain carries it to every earlier event; each
// rotation carries it to the key before. Failures are *bolt.VerifyError.
func VerifySigned(ctx context.Context, st *bolt.Store, root, id string, want ed25519.PublicKey) error {
	chain, err := storekey.Chain(ctx, st, id)
	var ce *fleetsign.ChainError
	switch {
	case errors.As(err, &ce):
		return &bolt.VerifyError{Position: ce.Position, Detail: "store key: " + ce.Err.Error()}
	case err != nil:
		return &bolt.VerifyError{Detail: "store key: " + err.Error()}
	case !chain.Known():
		return &bolt.VerifyError{Detail: "the replica records no store key (store.key_recorded): its history is unsigned"}
	case want != nil && !chain.First().Equal(want):
		return &bolt.VerifyError{Detail: "the replica's store key is not the fleet file's"}
	}
	head, hash, err := st.Head()
	if err != nil {
		return cli.AsVerifyFailure(err)
	}
	sig, ok, err := replica.ReadSigned(root)
	switch {
	case err != nil:
		return &bolt.VerifyError{Detail: "unreadable signature record: " + err.Error()}
	case !ok:
		return &bolt.VerifyError{Position: 1, Detail: "no event of the replica is signed (no " + replica.SignedFile + ")"}
	case sig.Position != head:
		return &bolt.VerifyError{Position: sig.Position + 1, Detail: fmt.Sprintf("not signed by the store's key (signed up to position %d, the replica holds %d)", sig.Position, head)}
	case sig.Hash != hash:
		return &bolt.VerifyError{Position: head, Detail: "the signed event is not the one the replica holds"}
	}
	if err := fleetsign.Verify(chain.At(head), id, head, hash, sig.Signature); err != nil {
		return &bolt.VerifyError{Position: head, Detail: err.Error()}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func uintOrDash(n *uint64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatUint(*n, 10)
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
