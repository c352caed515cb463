package main

import (
	"context"
	"fmt"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

// revokeRestored records, in one transaction after the events import of
// envs (res), the revocation of the proofs it brought
// (activation.RevokeRestored). Its failure is a *PartialError: the
// import itself is committed.
func revokeRestored(ctx context.Context, g *Globals, st *bolt.Store, envs []events.Envelope, res bolt.ImportResult) error {
	imported := activation.ImportedProofs(envs)
	if len(imported) == 0 {
		return nil
	}
	now := g.Now()
	f := g.Factory("cli")
	err := st.Update(ctx, func(tx *bolt.Tx) error {
		hkv, rkv := tx.Projection(projections.HarnessesName), tx.Projection(projections.ReceiptsName)
		var hs []activation.HarnessProof
		for _, a := range adapters.All() {
			s, err := projections.StateAt(hkv, rkv, a.ID, now)
			if err != nil {
				return err
			}
			p, err := projections.ReceiptProofOf(rkv, a.ID)
			if err != nil {
				return err
			}
			hs = append(hs, activation.HarnessProof{ID: a.ID, State: s, Newest: p.NewestID})
		}
		for _, p := range activation.RevokeRestored(hs, imported) {
			e, err := f.New(p.Stream, p.Type, p.Payload)
			if err != nil {
				return err
			}
			if _, err := tx.Append(p.Stream, int64(tx.StreamVersion(p.Stream)), e); err != nil {
				return fmt.Errorf("append %s: %w", p.Stream, err)
			}
		}
		return nil
	})
	if err != nil {
		return &PartialError{Err: err, Done: fmt.Sprintf("the import is committed (%d imported, %d skipped as duplicates), but the revocation of the receipts it brought is not (until it is, they may read as proof here); the same command again records it", res.Imported, res.Skipped)}
	}
	return nil
}
