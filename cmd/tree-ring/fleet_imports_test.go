package main

import (
	"slices"
	"strings"
	"testing"
)

// The NATS client belongs to adapters/fleet (and its test support), the
// NATS server to adapters/fleet/fleettest only, and the tree-ring binary
// never depends on the server (docs/fleet.md).
func TestFleetImports(t *testing.T) {
	const client, server = "github.com/nats-io/nats.go", "github.com/nats-io/nats-server/v2"
	fleet, fleettest := modulePath+"/adapters/fleet", modulePath+"/adapters/fleet/fleettest"
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
		if p.ImportPath == modulePath+"/cmd/tree-ring" {
			if i := slices.IndexFunc(p.Deps, func(d string) bool { return strings.HasPrefix(d, server) }); i >= 0 {
				t.Errorf("the tree-ring binary depends on %s", p.Deps[i])
			}
			if !slices.Contains(p.Deps, client) {
				t.Error("the tree-ring binary does not depend on the NATS client: the rule above checks nothing")
			}
		}
	}
}
