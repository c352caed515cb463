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
	rep, err := st.Verify(ctx)
	if err != nil {
		return asVerifyFailure(fmt.Errorf("verify %s: %w", st.Path(), err))
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK bool `json:"ok"`
			bolt.VerifyReport
		}{true, rep})
	}
	fmt.Fprintf(g.Stdout, "verified: %d events in %d streams, chain head %.16s, %d bodies, %d projections match\n",
		rep.Events, rep.Streams, rep.ChainHead, rep.Bodies, len(rep.Projections))
	return nil
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
