package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/projections/recall"
)

type forgetOptions struct {
	Mode, Reason string
}

func (o *forgetOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Mode, "mode", events.ForgetDelete, "delete (the text is erased for good) or redact (a [REDACTED] tombstone stays)")
	fs.StringVar(&o.Reason, "reason", "", "why (required; stored only as a digest)")
}

func init() {
	register("forget", "ID", "delete or redact a memory; its text leaves the ledger file while the hash chain still verifies", runForget)
}

func runForget(ctx context.Context, g *Globals, o *forgetOptions, args []string) error {
	if len(args) != 1 {
		return usagef("forget needs exactly one memory ID")
	}
	id := args[0]
	if err := events.ValidMemoryID(id); err != nil {
		return usagef("%v", err)
	}
	if o.Mode != events.ForgetDelete && o.Mode != events.ForgetRedact {
		return usagef("--mode must be delete or redact")
	}
	if strings.TrimSpace(o.Reason) == "" {
		return usagef("forget needs a non-blank --reason")
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Update(ctx, func(tx *bolt.Tx) error { return forgetIn(g, tx, id, o) }); err != nil {
		return err
	}
	if g.JSON {
		line, err := memory.MarshalJSONLine(struct {
			OK       bool   `json:"ok"`
			MemoryID string `json:"memory_id"`
		}{true, id})
		if err != nil {
			return err
		}
		_, err = g.Stdout.Write(line)
		return err
	}
	_, err = fmt.Fprintf(g.Stdout, "Tree Ring Memory forget complete: %s\n", id)
	return err
}

// forgetIn plans forgetting memory id (memory.PlanForget) and applies it
// in tx: a redaction's tombstone stored, memory.forgotten appended, and
// the body deleted, after the append: the recall fold finds the memory's
// postings by tokenizing it.
func forgetIn(g *Globals, tx *bolt.Tx, id string, o *forgetOptions) error {
	stream := events.MemoryStream(id)
	kv := tx.Projection(recall.Name)
	_, state, ok, err := recall.Lookup(kv, tx, id)
	if err != nil {
		return err
	}
	plan, err := memory.PlanForget(id, o.Mode, o.Reason, memory.ForgetTarget{Found: ok, Streamed: tx.StreamVersion(stream) != 0, Redacted: state.Redacted})
	if err != nil {
		return err
	}
	digest := recall.BodyDigest(kv, id)
	if plan.RedactedBody != nil {
		if d, err := tx.PutBody(plan.RedactedBody); err != nil {
			return err
		} else if d != plan.Event.RedactedSHA256 {
			return errors.New("redacted body digest mismatch")
		}
	}
	e, err := g.Factory("cli").New(stream, events.TypeMemoryForgotten, &plan.Event)
	if err != nil {
		return err
	}
	if _, err := tx.Append(stream, int64(tx.StreamVersion(stream)), e); err != nil {
		return err
	}
	return tx.DeleteBody(digest)
}
