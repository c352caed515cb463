package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/cmd/internal/storekey"
)

type fleetIdentityOptions struct {
	Label string
}

func (o *fleetIdentityOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Label, "label", "", "the store's label in the line (default its recorded label, fleet label, else this host's name)")
}

func init() {
	register("fleet identity", "", "print this store's fleet file line: store id, public signing key, label (creates the key on first use)", runFleetIdentity)
}

// runFleetIdentity prints the line an auditor adds to the fleet file
// (--expect). The store's signing key is made here when it has none
// (storekey.Ensure: the private half 0600 under .tree-ring/, the public
// half recorded as store.key_recorded); only the public half is printed,
// the store's first key even after a rotation.
func runFleetIdentity(ctx context.Context, g *Globals, o *fleetIdentityOptions, args []string) error {
	if len(args) > 0 {
		return usagef("fleet identity takes no arguments")
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	label := o.Label
	if label == "" {
		recorded, ok, err := storekey.Label(ctx, st)
		if err != nil {
			return err
		}
		if label = recorded; !ok {
			label, _ = os.Hostname()
		}
	}
	id, _, err := storekey.Ensure(ctx, g.Root, st, g.Factory("cli"))
	if err != nil {
		return err
	}
	// The store's first key: a fleet file pins it, and each rotation
	// since is signed by the key before it (docs/fleet.md, "Key rotation").
	chain, err := storekey.Chain(ctx, st, id)
	if err != nil {
		return err
	}
	pub := chain.First()
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK bool `json:"ok"`
			fleetsign.Expected
		}{true, fleetsign.Expected{StoreID: id, Key: fleetsign.EncodeKey(pub), Label: fleetsign.CleanLabel(label)}})
	}
	_, err = fmt.Fprintln(g.Stdout, fleetsign.Line(id, pub, label))
	return err
}
