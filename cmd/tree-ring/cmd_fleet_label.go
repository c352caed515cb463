package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tree-ring/tree-ring/cmd/internal/storekey"
	"github.com/tree-ring/tree-ring/events"
)

func init() {
	register("fleet label", "LABEL", "record this store's label (store.labeled): published with its history, shown by fleet status and fleet identity", runFleetLabel)
}

// runFleetLabel records the store's label in its ledger, once per change
// (storekey.SetLabel); only what the user typed, cleaned, is recorded.
func runFleetLabel(ctx context.Context, g *Globals, _ *noOptions, args []string) error {
	if len(args) != 1 {
		return usagef("fleet label takes one argument, the label")
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	label, changed, err := storekey.SetLabel(ctx, st, g.Factory("cli"), args[0])
	if err != nil {
		return err
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK      bool   `json:"ok"`
			Label   string `json:"label"`
			Changed bool   `json:"changed"`
		}{true, label, changed})
	}
	if !changed {
		_, err = fmt.Fprintf(g.Stdout, "the store's label is already %s; nothing recorded\n", label)
		return err
	}
	_, err = fmt.Fprintf(g.Stdout, "recorded the store's label %s (%s); fleet publish sends it with the history\n", label, events.TypeStoreLabeled)
	return err
}
