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

// revokeRestored records, in one transaction after an events import of
// envs, the revocation of the proofs it brought (activation.RevokeRestored):
// it returns how many harnesses it revoked.
func revokeRestored(ctx context.Context, g *Globals, st *bolt.Store, envs []events.Envelope) (int, error) {
	imported := activation.ImportedProofs(envs)
	if len(imported) == 0 {
		return 0, nil
	}
	now := g.Now()
	f := g.Factory("cli")
	n := 0
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
		pend := activation.RevokeRestored(hs, imported)
		for _, p := range pend {
			e, err := f.New(p.Stream, p.Type, p.Payload)
			if err != nil {
				return err
			}
			if _, err := tx.Append(p.Stream, int64(tx.StreamVersion(p.Stream)), e); err != nil {
				return fmt.Errorf("append %s: %w", p.Stream, err)
			}
		}
		n = len(pend)
		return nil
	})
	return n, err
}
