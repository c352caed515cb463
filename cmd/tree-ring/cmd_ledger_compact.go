package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tree-ring/tree-ring/bolt"
)

func init() {
	register("ledger compact", "", "rewrite ledger.db without its free pages and growth reserve (bbolt's compaction), verified before it replaces the file", runLedgerCompact)
}

// runLedgerCompact holds the ledger's lock throughout: hooks wait (up to
// their lock timeout) while it copies.
func runLedgerCompact(ctx context.Context, g *Globals, _ *noOptions, args []string) error {
	if len(args) > 0 {
		return usagef("ledger compact takes no arguments")
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := st.Compact(ctx)
	if err != nil {
		return err
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK          bool              `json:"ok"`
			BytesBefore int64             `json:"bytes_before"`
			BytesAfter  int64             `json:"bytes_after"`
			Verified    bolt.VerifyReport `json:"verified"`
		}{true, rep.Before.FileBytes, rep.After.FileBytes, rep.Verified})
	}
	_, err = fmt.Fprintf(g.Stdout, "compacted: %d -> %d bytes (%d free pages before); verified %d events, chain head %.16s\n",
		rep.Before.FileBytes, rep.After.FileBytes, rep.Before.FreePages, rep.Verified.Events, rep.Verified.ChainHead)
	return err
}
