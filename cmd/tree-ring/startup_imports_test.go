package main

import "testing"

// Packages whose init every start of tree-ring, every hook, would pay
// (docs/benchmarks.md, "Start-up, session 7"): a live regexp initialises
// the unicode tables (the sensitivity detector's matchers are written by
// hand, events/memory/matchers.go), BurntSushi/toml looks up the local
// time zone (Codex's configuration is read with go-toml).
func TestStartupImports(t *testing.T) {
	for _, p := range goList(t) {
		if p.ImportPath != modulePath+"/cmd/tree-ring" {
			continue
		}
		for _, d := range p.Deps {
			switch d {
			case "regexp", "regexp/syntax", "github.com/BurntSushi/toml":
				t.Errorf("the tree-ring binary depends on %s", d)
			}
		}
		return
	}
	t.Fatal("go list did not list cmd/tree-ring")
}
