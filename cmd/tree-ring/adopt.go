package main

import (
	"context"
	"fmt"

	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
)

// adopt records, in st (open for writing, with no store.initialized yet),
// the adoption of the activation manifest another Tree Ring writer (the
// Rust CLI) left under --root: activation.Adopt decides every event, in
// one transaction, from the manifest and receipt files, which stay
// byte-for-byte as they are. adopted is false when there is no manifest.
// A manifest that cannot be adopted is refused before anything is
// appended (*activation.AdoptError).
func (pr *project) adopt(ctx context.Context, g *Globals, st *bolt.Store, snap *snapshot) (storeID string, adopted bool, err error) {
	ad, exists, err := activation.Adopt(activation.AdoptInput{
		Root: pr.root, ProjectRootFingerprint: pr.fingerprint, CLIVersion: Version, Now: g.Now(),
	})
	if err != nil || !exists {
		return "", false, err
	}
	if snap.versions[events.StoreStream] != 0 {
		return "", false, fmt.Errorf("the store stream has events but no store.initialized; run `tree-ring audit verify`")
	}
	if err := appendPending(ctx, g, st, snap, ad.Events, nil); err != nil {
		return "", false, fmt.Errorf("record the adoption: %w", err)
	}
	return ad.Manifest.StoreID, true, nil
}

// unadoptedLive is the status rule's live evidence before adoption: there
// is no receipt index yet, so the newest valid receipt is searched among
// the receipt files themselves (activation.ScanReceipts, bounded).
type unadoptedLive struct{ *liveEvidence }

func (l unadoptedLive) NewestReceipt(recomputed string) activation.Found {
	scan, err := activation.ScanReceipts(l.pr.root, l.m, l.a.ID, recomputed, l.now, activation.MaxStatusReceipts)
	if err != nil {
		return activation.Found{}
	}
	return activation.NewestVerified(scan, l.now)
}
