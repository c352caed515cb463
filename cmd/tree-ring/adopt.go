package main

import (
	"context"
	"fmt"

	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
)

// adoption plans the adoption of the activation manifest another Tree Ring
// writer (the Rust CLI) left under --root, for a store with no
// store.initialized yet: nil when there is no manifest, an
// *activation.AdoptError when it cannot be adopted. It only reads.
func (pr *project) adoption(g *Globals) (*activation.Adoption, error) {
	_, foreign, _, err := pr.guidanceCheck(context.Background(), nil)
	if err != nil {
		return nil, err
	}
	ad, exists, err := activation.Adopt(activation.AdoptInput{
		Root: pr.root, ProjectRootFingerprint: pr.fingerprint, CLIVersion: Version(), Now: g.Now, ForeignGuidance: foreign,
	})
	if err != nil || !exists {
		return nil, err
	}
	return ad, nil
}

// dryAdoption is what `init --dry-run` reports in a project with no
// ledger and another writer's manifest: the states the adoption records.
func (pr *project) dryAdoption(g *Globals) (*activation.Adoption, error) {
	if exists, err := pr.hasLedger(); err != nil || exists {
		return nil, err
	}
	return pr.adoption(g)
}

// recordAdoption appends the adoption's events in st (open for writing,
// read into snap, with no store.initialized) in one transaction; the
// manifest and receipt files stay byte-for-byte as they are.
func (pr *project) recordAdoption(ctx context.Context, g *Globals, st *bolt.Store, snap *snapshot, ad *activation.Adoption) (string, error) {
	if snap.versions[events.StoreStream] != 0 {
		return "", fmt.Errorf("the store stream has events but no store.initialized; run `tree-ring audit verify`")
	}
	if err := appendPending(ctx, g, st, snap, ad.Events, nil); err != nil {
		return "", fmt.Errorf("record the adoption: %w", err)
	}
	return ad.Manifest.StoreID, nil
}
