package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tree-ring/tree-ring/bolt"
)

func init() {
	register("audit verify", "", "verify the hash chain, every projection and bbolt's consistency (exit 3 on failure)", runAuditVerify)
}

func runAuditVerify(ctx context.Context, g *Globals, _ *noOptions, args []string) error {
	if len(args) > 0 {
		return usagef("audit verify takes no arguments")
	}
	st, err := g.OpenStore(true)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := st.Verify(ctx)
	if err != nil {
		return fmt.Errorf("verify %s: %w", st.Path(), err)
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK bool `json:"ok"`
			bolt.VerifyReport
		}{true, rep})
	}
	fmt.Fprintf(g.Stdout, "verified: %d events in %d streams, chain head %.16s, %d projections match\n",
		rep.Events, rep.Streams, rep.ChainHead, len(rep.Projections))
	return nil
}
