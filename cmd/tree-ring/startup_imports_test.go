package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Packages whose init every start of tree-ring, every hook, would pay
// (docs/benchmarks.md, "Start-up"): BurntSushi/toml looks up the
// local time zone (Codex's configuration is read with go-toml).
func TestStartupImports(t *testing.T) {
	for _, p := range goList(t) {
		if p.ImportPath != modulePath+"/cmd/tree-ring" {
			continue
		}
		for _, d := range p.Deps {
			if d == "github.com/BurntSushi/toml" {
				t.Errorf("the tree-ring binary depends on %s", d)
			}
		}
		return
	}
	t.Fatal("go list did not list cmd/tree-ring")
}

// TestNoRegexpCompiledAtInit: no package of the tree-ring binary outside
// the standard library compiles a regexp in a package-level variable or an
// init function, which every process, every hook, would pay. A pattern is
// compiled on its first use (events/memory's lazyRegexp: only when a
// text triggers its rule, TestPatternsCompileOnFirstUse).
func TestNoRegexpCompiledAtInit(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,GoFiles,Standard", ".")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	checked := 0
	for {
		var p struct {
			ImportPath, Dir string
			GoFiles         []string
			Standard        bool
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Standard {
			continue
		}
		for _, f := range p.GoFiles {
			for _, at := range regexpAtInit(t, filepath.Join(p.Dir, f), p.ImportPath+"/"+f) {
				t.Errorf("%s compiles a regexp at init", at)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no file checked")
	}
}

// regexpAtInit returns where the file calls package regexp (other than
// QuoteMeta) in a package-level variable's value or in an init function,
// outside function literals.
func regexpAtInit(t *testing.T, path, name string) []string {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	pkg := ""
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == "regexp" {
			pkg = "regexp"
			if im.Name != nil {
				pkg = im.Name.Name
			}
		}
	}
	if pkg == "" {
		return nil
	}
	var found []string
	visit := func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == pkg && n.Sel.Name != "QuoteMeta" {
				found = append(found, fset.Position(n.Pos()).String())
			}
		}
		return true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			if d.Tok == token.VAR {
				for _, s := range d.Specs {
					for _, v := range s.(*ast.ValueSpec).Values {
						ast.Inspect(v, visit)
					}
				}
			}
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name == "init" {
				ast.Inspect(d.Body, visit)
			}
		}
	}
	return found
}

// TestNoHeavyInit: no package of this module does real work at init,
// which every process, every hook, pays: GODEBUG=inittrace=1 reports each
// package's init, and none of ours may allocate more than maxInitAllocs
// times. (A template parsed into a package-level variable took 1,981
// allocations and 1.5 M instructions of every start, 60 % of `tree-ring
// version`; it is parsed on first use now.) The test binary runs with no
// test selected: it links this package's dependencies, so their inits
// (this package's own init there includes its test files' variables).
func TestNoHeavyInit(t *testing.T) {
	const maxInitAllocs = 500
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", exe, err, stderr.Bytes())
	}
	checked := 0
	for line := range strings.Lines(stderr.String()) {
		// init <package> @<t> ms, <d> ms clock, <bytes> bytes, <n> allocs
		f := strings.Fields(line)
		if len(f) != 11 || f[0] != "init" || !inModule(f[1], modulePath) || f[1] == modulePath+"/cmd/tree-ring" {
			continue
		}
		checked++
		if n, err := strconv.Atoi(f[9]); err != nil || n > maxInitAllocs {
			t.Errorf("package %s's init: %s allocations (at most %d): defer its work to first use", f[1], f[9], maxInitAllocs)
		}
	}
	if checked == 0 {
		t.Fatalf("no init of this module in the trace:\n%s", stderr.Bytes())
	}
}
