package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
	"github.com/tree-ring/tree-ring/projections"
)

func init() {
	register("audit verify", "", "verify the hash chain, every projection and bbolt's consistency (exit 3 on failure)", runAuditVerify)
}

// runAuditVerify exits 3 when the ledger fails verification, including a
// ledger too damaged to open; 2 when it cannot run (no ledger, locked).
func runAuditVerify(ctx context.Context, g *Globals, _ *noOptions, args []string) error {
	if len(args) > 0 {
		return usagef("audit verify takes no arguments")
	}
	st, err := g.OpenStore(true)
	if err != nil {
		return asVerifyFailure(err)
	}
	defer st.Close()
	shown := g.newProgress("verified")
	rep, err := st.VerifyProgress(ctx, shown.update)
	if err == nil {
		shown.update(rep.Events, rep.Events)
	}
	shown.end()
	if err != nil {
		return asVerifyFailure(fmt.Errorf("verify %s: %w", st.Path(), err))
	}
	drift, err := verifyReceiptFiles(ctx, g, st)
	if err != nil {
		return err
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK bool `json:"ok"`
			bolt.VerifyReport
			ReceiptFiles *receiptDrift `json:"receipt_files,omitempty"`
		}{true, rep, driftOrNil(drift)})
	}
	fmt.Fprintf(g.Stdout, "verified: %d events in %d streams, chain head %.16s, %d bodies, %d projections match\n",
		rep.Events, rep.Streams, rep.ChainHead, rep.Bodies, len(rep.Projections))
	if !drift.empty() {
		fmt.Fprintf(g.Stdout, "receipt files: %s\n", drift)
	}
	return nil
}

// verifyReceiptFiles checks the receipt files against the ledger (the
// project is the store root's parent): a retained receipt without its file
// fails, and so does a receipt file of this store that the ledger never
// recorded (lostReceipts: files outlived the ledger's head). A fleet
// replica (a collector's DIR/<store_id> root, cmd/internal/replica) has no
// project files: it is verified as a ledger only.
func verifyReceiptFiles(ctx context.Context, g *Globals, st *bolt.Store) (receiptDrift, error) {
	storeID, adopted, err := ledgerStoreID(st)
	if err != nil {
		return receiptDrift{}, err
	}
	if isReplica(g.Root, storeID) {
		return receiptDrift{}, nil
	}
	root, err := projectOfRoot(g.Root)
	if err != nil {
		return receiptDrift{}, fmt.Errorf("receipt files: %w", err)
	}
	defer root.Close()
	drift, err := checkReceiptFiles(st, root)
	if err != nil {
		return drift, fmt.Errorf("receipt files: %w", err)
	}
	if len(drift.Missing) > 0 {
		return drift, &bolt.VerifyError{Detail: "receipt files: " + drift.String() + "; a restore puts them back: `tree-ring projections rebuild`"}
	}
	if adopted {
		// Another writer (the Rust Tree Ring) adds receipt files of this
		// store that this ledger never records: strays, not a loss.
		return drift, nil
	}
	lost, err := lostReceipts(ctx, st, root, storeID, drift.Strays)
	if err != nil {
		return drift, fmt.Errorf("receipt files: %w", err)
	}
	if len(lost) > 0 {
		return drift, &bolt.VerifyError{Detail: fmt.Sprintf("receipt files: %d receipt file(s) of this store name a receipt the ledger never recorded (%s): the files outlived the ledger's head, which lost its last commit(s) (or a preflight was killed before its commit)",
			len(lost), strings.Join(lost, ", "))}
	}
	return drift, nil
}

// ledgerStoreID is the store id the ledger's store.initialized names
// ("" for a ledger that is no store yet), and whether the store was
// adopted from another writer.
func ledgerStoreID(st *bolt.Store) (id string, adopted bool, err error) {
	err = st.View(func(r *bolt.Reader) error {
		kv := r.Projection(projections.ManifestName)
		m, _, err := projections.ManifestStoreOf(kv)
		id, adopted = m.StoreID, projections.Adopted(kv)
		return err
	})
	return id, adopted, err
}

// isReplica reports whether the store root is a fleet collector's replica
// of storeID (replica.Root: DIR/<store_id>).
func isReplica(storeRoot, storeID string) bool {
	abs, err := filepath.Abs(storeRoot)
	return err == nil && storeID != "" && replica.Root(filepath.Dir(abs), storeID) == abs
}

func driftOrNil(d receiptDrift) *receiptDrift {
	if d.empty() {
		return nil
	}
	return &d
}

// asVerifyFailure makes a corrupt ledger a failed verification (exit 3).
func asVerifyFailure(err error) error { return cli.AsVerifyFailure(err) }
