package main

import (
	"slices"
	"strings"
	"testing"
)

// The NATS client belongs to adapters/fleet (and its test support), the
// NATS server to adapters/fleet/fleettest only; the tree-ring binary
// depends on neither, nor on encoding/gob, whose package init (pulled in
// by the client's encoders) every hook would pay for: the fleet commands
// that need the network are tree-ring-fleet's (docs/fleet.md, "Two
// programs"), which depends on the client and not on the server.
func TestFleetImports(t *testing.T) {
	const nats, client, server = "github.com/nats-io/", "github.com/nats-io/nats.go", "github.com/nats-io/nats-server/v2"
	fleet, fleettest := modulePath+"/adapters/fleet", modulePath+"/adapters/fleet/fleettest"
	seen := map[string]bool{}
	for _, p := range goList(t) {
		if !inModule(p.ImportPath, modulePath) {
			continue
		}
		for _, imp := range p.Imports {
			if inModule(imp, client) && p.ImportPath != fleet && p.ImportPath != fleettest {
				t.Errorf("%s imports %s: only adapters/fleet does", p.ImportPath, imp)
			}
			if inModule(imp, server) && p.ImportPath != fleettest {
				t.Errorf("%s imports %s: only adapters/fleet/fleettest does", p.ImportPath, imp)
			}
		}
		switch p.ImportPath {
		case modulePath + "/cmd/tree-ring":
			seen[p.ImportPath] = true
			for _, d := range p.Deps {
				if strings.HasPrefix(d, nats) || d == "encoding/gob" {
					t.Errorf("the tree-ring binary depends on %s", d)
				}
			}
		case modulePath + "/cmd/tree-ring-fleet":
			seen[p.ImportPath] = true
			if i := slices.IndexFunc(p.Deps, func(d string) bool { return inModule(d, server) }); i >= 0 {
				t.Errorf("the tree-ring-fleet binary depends on %s", p.Deps[i])
			}
			if !slices.Contains(p.Deps, client) {
				t.Error("the tree-ring-fleet binary does not depend on the NATS client: the rules above check nothing")
			}
		}
	}
	if len(seen) != 2 {
		t.Fatalf("go list did not list both binaries: %v", seen)
	}
}
