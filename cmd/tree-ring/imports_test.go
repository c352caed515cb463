package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events/eventstest"
)

// The import rules of docs/architecture.md, checked against `go list`, so
// that an edge running up or sideways cannot come back unnoticed. Rules are
// forbidden edges between package families (a family is a module package
// and its subpackages) plus the owners of three external modules; anything
// not forbidden is allowed, so a new adapter may bring its own library (an
// adapters/fleet importing nats.go, a TOML reader for adapters/codex).

const modulePath = "github.com/tree-ring/tree-ring"

// importRule forbids every package of family From to import (directly) a
// package of family To.
type importRule struct{ From, To, Why string }

var forbiddenImports = []importRule{
	{"events", "fsm", "events is the vocabulary at the bottom: it imports only events/..."},
	{"events", "projections", "events is the vocabulary at the bottom: it imports only events/..."},
	{"events", "adapters", "events is the vocabulary at the bottom: it imports only events/..."},
	{"events", "bolt", "events is the vocabulary at the bottom: it imports only events/..."},
	{"fsm", "projections", "the transition table knows no read model"},
	{"fsm", "adapters", "the transition table knows no harness"},
	{"fsm", "bolt", "the transition table knows no storage"},
	{"bolt", "projections", "storage knows no read model: it applies folds through events/fold"},
	{"bolt", "adapters", "storage knows no harness"},
	{"bolt", "fsm", "storage knows no state machine"},
	{"projections", "adapters", "projections store their own and events' structs, never an adapter's wire type"},
	{"projections", "bolt", "a projection is a pure fold over a KV, never the store"},
	{"projections/report", "projections", "the report renders plain values: cmd gathers them from the read models"},
	{"adapters", "projections", "adapters and read models are siblings: cmd passes what a plan needs as values"},
	{"adapters", "bolt", "adapters decide; cmd opens the store and applies"},
}

// externalOwner names the only family allowed to import external module
// Module directly; Domain additionally forbids it anywhere in the
// dependencies of a domain package.
type externalOwner struct {
	Module string
	Owner  string
	Domain bool
}

var externalOwners = []externalOwner{
	{"go.etcd.io/bbolt", "bolt", true},
	{"github.com/spf13/pflag", "cmd", true},
	{"github.com/rs/zerolog", "cmd", true},
	{"github.com/pelletier/go-toml/v2", "adapters/codexconfig", false},
}

// domainFamilies never depend on bbolt, pflag or zerolog, even through
// another package.
var domainFamilies = []string{"events", "fsm", "projections", "adapters"}

// listedPackage is one package as `go list -deps -json` reports it.
type listedPackage struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string
	Module     *struct{ Path string }
}

// inFamily reports whether import path p is family fam of this module (fam
// itself or one of its subpackages).
func inFamily(p, fam string) bool {
	full := modulePath + "/" + fam
	return p == full || strings.HasPrefix(p, full+"/")
}

// inModule reports whether import path p is module m or one of its
// packages.
func inModule(p, m string) bool { return p == m || strings.HasPrefix(p, m+"/") }

// importViolations returns one line per forbidden edge among the module's
// packages in pkgs, sorted.
func importViolations(pkgs []listedPackage) []string {
	var out []string
	for _, p := range pkgs {
		if !inModule(p.ImportPath, modulePath) {
			continue
		}
		short := strings.TrimPrefix(p.ImportPath, modulePath+"/")
		for _, imp := range p.Imports {
			for _, r := range forbiddenImports {
				if inFamily(p.ImportPath, r.From) && inFamily(imp, r.To) {
					out = append(out, fmt.Sprintf("%s imports %s: %s", short, strings.TrimPrefix(imp, modulePath+"/"), r.Why))
				}
			}
			if inModule(imp, modulePath+"/cmd") && !inFamily(p.ImportPath, "cmd") {
				out = append(out, fmt.Sprintf("%s imports %s: nothing imports a command", short, strings.TrimPrefix(imp, modulePath+"/")))
			}
			for _, o := range externalOwners {
				if inModule(imp, o.Module) && !inFamily(p.ImportPath, o.Owner) {
					out = append(out, fmt.Sprintf("%s imports %s: only %s imports %s", short, imp, o.Owner, o.Module))
				}
			}
		}
		for _, fam := range domainFamilies {
			if !inFamily(p.ImportPath, fam) {
				continue
			}
			for _, d := range p.Deps {
				for _, o := range externalOwners {
					if o.Domain && inModule(d, o.Module) && !slices.Contains(p.Imports, d) {
						out = append(out, fmt.Sprintf("%s depends on %s: domain packages never depend on %s, not even through another package", short, d, o.Module))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// goList runs `go list -deps -json` over every package of the module.
func goList(t *testing.T) []listedPackage {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	cmd := exec.Command(goBin, "list", "-deps", "-json=ImportPath,Standard,Imports,Deps,Module", modulePath+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list listed no packages")
	}
	return pkgs
}

func TestImportRules(t *testing.T) {
	pkgs := goList(t)
	seen := 0
	for _, p := range pkgs {
		if inModule(p.ImportPath, modulePath) {
			seen++
		}
	}
	if seen < 8 {
		t.Fatalf("go list saw %d module packages; the rule would check nothing", seen)
	}
	for _, v := range importViolations(pkgs) {
		t.Error(v)
	}
}

// The checker itself: each rule fires on the edge it forbids, names it, and
// stays quiet on allowed ones.
func TestImportViolations(t *testing.T) {
	m := func(s string) string { return modulePath + "/" + s }
	for _, tc := range []struct {
		name string
		pkgs []listedPackage
		want []string
	}{
		{"allowed edges", []listedPackage{
			{ImportPath: m("bolt"), Imports: []string{m("events"), m("events/fold"), "go.etcd.io/bbolt", "go.etcd.io/bbolt/errors"}, Deps: []string{"go.etcd.io/bbolt"}},
			{ImportPath: m("projections"), Imports: []string{m("events"), m("events/fold"), m("fsm")}},
			{ImportPath: m("adapters/activation"), Imports: []string{m("adapters"), m("events"), m("fsm")}},
			{ImportPath: m("adapters/fleet"), Imports: []string{m("events"), "github.com/nats-io/nats.go"}, Deps: []string{"github.com/nats-io/nats.go"}},
			{ImportPath: m("adapters/codexconfig"), Imports: []string{"github.com/pelletier/go-toml/v2"}},
			{ImportPath: m("cmd/tree-ring"), Imports: []string{m("bolt"), m("projections"), m("adapters"), "github.com/spf13/pflag", "github.com/rs/zerolog"}},
			{ImportPath: "go.etcd.io/bbolt", Imports: []string{"os"}},
		}, nil},
		{"bolt imports projections", []listedPackage{
			{ImportPath: m("bolt"), Imports: []string{m("projections")}},
		}, []string{"bolt imports projections: storage knows no read model: it applies folds through events/fold"}},
		{"a subpackage edge counts", []listedPackage{
			{ImportPath: m("projections/recall"), Imports: []string{m("adapters/preflight")}},
		}, []string{"projections/recall imports adapters/preflight: projections store their own and events' structs, never an adapter's wire type"}},
		{"the report imports a read model", []listedPackage{
			{ImportPath: m("projections/report"), Imports: []string{m("events"), m("fsm"), m("projections")}},
		}, []string{"projections/report imports projections: the report renders plain values: cmd gathers them from the read models"}},
		{"activation imports projections", []listedPackage{
			{ImportPath: m("adapters/activation"), Imports: []string{m("projections")}},
		}, []string{"adapters/activation imports projections: adapters and read models are siblings: cmd passes what a plan needs as values"}},
		{"events imports fsm", []listedPackage{
			{ImportPath: m("events"), Imports: []string{m("fsm")}},
		}, []string{"events imports fsm: events is the vocabulary at the bottom: it imports only events/..."}},
		{"bbolt outside bolt", []listedPackage{
			{ImportPath: m("projections"), Imports: []string{"go.etcd.io/bbolt"}, Deps: []string{"go.etcd.io/bbolt"}},
		}, []string{"projections imports go.etcd.io/bbolt: only bolt imports go.etcd.io/bbolt"}},
		{"the TOML reader outside its package", []listedPackage{
			{ImportPath: m("adapters"), Imports: []string{"github.com/pelletier/go-toml/v2"}},
		}, []string{"adapters imports github.com/pelletier/go-toml/v2: only adapters/codexconfig imports github.com/pelletier/go-toml/v2"}},
		{"pflag outside cmd", []listedPackage{
			{ImportPath: m("adapters/codex"), Imports: []string{"github.com/spf13/pflag"}, Deps: []string{"github.com/spf13/pflag"}},
		}, []string{"adapters/codex imports github.com/spf13/pflag: only cmd imports github.com/spf13/pflag"}},
		{"zerolog through a helper", []listedPackage{
			{ImportPath: m("fsm"), Imports: []string{"example.com/logkit"}, Deps: []string{"example.com/logkit", "github.com/rs/zerolog"}},
		}, []string{"fsm depends on github.com/rs/zerolog: domain packages never depend on github.com/rs/zerolog, not even through another package"}},
		{"a library imports a command", []listedPackage{
			{ImportPath: m("adapters"), Imports: []string{m("cmd/tree-ring")}},
		}, []string{"adapters imports cmd/tree-ring: nothing imports a command"}},
		{"packages outside the module are not judged", []listedPackage{
			{ImportPath: "example.com/other/bolt", Imports: []string{m("projections"), "github.com/spf13/pflag"}},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := importViolations(tc.pkgs); !slices.Equal(got, tc.want) {
				t.Fatalf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// importGraph renders the module's direct imports (module packages and the
// external modules they import, standard library left out) as a Mermaid
// graph, one edge per line in a stable order.
func importGraph(pkgs []listedPackage) string {
	moduleOf := map[string]string{}
	for _, p := range pkgs {
		if !p.Standard && p.Module != nil {
			moduleOf[p.ImportPath] = p.Module.Path
		}
	}
	short := func(p string) string {
		if inModule(p, modulePath) {
			return strings.TrimPrefix(p, modulePath+"/")
		}
		return moduleOf[p]
	}
	node := func(s string) string {
		return strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(s) + `["` + s + `"]`
	}
	var edges []string
	for _, p := range pkgs {
		if !inModule(p.ImportPath, modulePath) {
			continue
		}
		for _, imp := range p.Imports {
			if moduleOf[imp] == "" {
				continue // standard library
			}
			if to := short(imp); to != short(p.ImportPath) {
				edges = append(edges, "  "+node(short(p.ImportPath))+" --> "+node(to))
			}
		}
	}
	slices.Sort(edges)
	return "```mermaid\ngraph TD\n" + strings.Join(slices.Compact(edges), "\n") + "\n```\n"
}

const (
	graphBegin = "<!-- import-graph:begin (generated by TestImportGraphDoc; go test ./cmd/tree-ring -run TestImportGraphDoc -update) -->\n"
	graphEnd   = "<!-- import-graph:end -->\n"
)

// docs/architecture.md shows the real edges: the graph between its markers
// is what `go list` reports.
func TestImportGraphDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "architecture.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(graphBegin)), bytes.Index(doc, []byte(graphEnd))
	if i < 0 || j < i {
		t.Fatalf("%s: no import graph between %q and %q", path, graphBegin, graphEnd)
	}
	want := importGraph(goList(t))
	if got := string(doc[i+len(graphBegin) : j]); got != want {
		if !eventstest.Updating() {
			t.Fatalf("%s: the import graph differs from go list (rerun with -update):\n%s", path, want)
		}
		out := slices.Concat(doc[:i+len(graphBegin)], []byte(want), doc[j:])
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
