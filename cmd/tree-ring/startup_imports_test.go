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
