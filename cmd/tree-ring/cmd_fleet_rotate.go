package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/cmd/internal/storekey"
)

func init() {
	register("fleet rotate-key", "", "replace this store's fleet signing key by a new one, recorded as store.key_rotated signed by the old key", runFleetRotateKey)
}

// runFleetRotateKey is an explicit, recorded key rotation
// (storekey.Rotate; docs/fleet.md, "Key rotation"). Only public keys are
// printed.
func runFleetRotateKey(ctx context.Context, g *Globals, _ *noOptions, args []string) error {
	if len(args) > 0 {
		return usagef("fleet rotate-key takes no arguments")
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := storekey.Rotate(ctx, g.Root, st, g.Factory("cli"))
	if err != nil {
		return err
	}
	key := fleetsign.EncodeKey(r.Key)
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK       bool   `json:"ok"`
			StoreID  string `json:"store_id"`
			Position uint64 `json:"position"`
			Key      string `json:"public_key"`
		}{true, r.StoreID, r.Position, key})
	}
	_, err = fmt.Fprintf(g.Stdout, "rotated the signing key of store %s at position %d: new key %s; the old key stays in .tree-ring/%s until fleet publish has sent the events it signs\n",
		r.StoreID, r.Position, key, fleetsign.PreviousKeyFile)
	return err
}
