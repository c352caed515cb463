package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tree-ring/tree-ring/bolt"
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
	// The receipt files against the receipt index (the project is the
	// store root's parent).
	root, err := projectOfRoot(g.Root)
	if err != nil {
		return fmt.Errorf("receipt files: %w", err)
	}
	drift, err := checkReceiptFiles(st, root)
	root.Close()
	if err != nil {
		return fmt.Errorf("receipt files: %w", err)
	}
	if len(drift.Missing) > 0 {
		return &bolt.VerifyError{Detail: "receipt files: " + drift.String()}
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

func driftOrNil(d receiptDrift) *receiptDrift {
	if d.empty() {
		return nil
	}
	return &d
}

// asVerifyFailure makes a corrupt ledger a failed verification (exit 3).
func asVerifyFailure(err error) error {
	var ce *bolt.CorruptError
	var ve *bolt.VerifyError
	if errors.As(err, &ce) && !errors.As(err, &ve) {
		return &bolt.VerifyError{Detail: err.Error()}
	}
	return err
}
