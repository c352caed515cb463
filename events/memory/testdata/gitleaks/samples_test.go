package gitleaks

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"hash/fnv"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lucasjones/reggen"
	"github.com/zricethezav/gitleaks/v8/cmd/generate/config/rules"
	"github.com/zricethezav/gitleaks/v8/cmd/generate/config/utils"
)

// sample is one true-positive test case of a gitleaks rule, as its
// generator (cmd/generate/config/rules) writes it, or the bare secret of
// a generated case (bare: no identifier or assignment around it).
type sample struct {
	rule, text string
	bare       bool
}

// rulesDir is where the module cache holds gitleaks' rule generators: the
// source file of one of them.
func rulesDir(t *testing.T) string {
	f := runtime.FuncForPC(reflect.ValueOf(rules.GitHubPat).Pointer())
	file, _ := f.FileLine(f.Entry())
	if file == "" {
		t.Fatal("no source file for gitleaks' rules")
	}
	return filepath.Dir(file)
}

// trueSamples evaluates, in every rule generator, the expressions that
// build its true positives (tps): string literals, concatenation,
// secrets.NewSecret (reggen, seeded by the rule and position so that a run
// is repeatable), utils' pattern helpers and sample contexts, fmt.Sprintf,
// strings.Repeat and append. An expression outside that subset is skipped
// and counted in skipped.
func trueSamples(t *testing.T) (out []sample, skipped int) {
	dir := rulesDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("gitleaks rule sources in %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			e := &evaluator{env: map[string][]string{}}
			e.run(fn)
			skipped += e.skipped
			if e.rule == "" {
				continue
			}
			for _, s := range e.env["tps"] {
				out = append(out, sample{rule: e.rule, text: s})
			}
			for _, s := range e.bare {
				out = append(out, sample{rule: e.rule, text: s, bare: true})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].rule < out[j].rule })
	return out, skipped
}

type evaluator struct {
	rule    string
	env     map[string][]string
	bare    []string // the secret argument of each sample context
	n       int      // secrets generated so far (the seed's position)
	skipped int
}

func (e *evaluator) run(fn *ast.FuncDecl) {
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok && k.Name == "RuleID" && e.rule == "" {
				if v, ok := e.eval(n.Value); ok && len(v) == 1 {
					e.rule = v[0]
				}
			}
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok || i >= len(n.Rhs) {
					continue
				}
				if v, ok := e.eval(n.Rhs[i]); ok {
					e.env[id.Name] = v
				} else if id.Name == "tps" {
					e.skipped++
				}
			}
		}
		return true
	})
}

var patterns = map[string]func(string) string{
	"Numeric": utils.Numeric, "Hex": utils.Hex, "AlphaNumeric": utils.AlphaNumeric,
	"AlphaNumericExtendedShort": utils.AlphaNumericExtendedShort, "AlphaNumericExtended": utils.AlphaNumericExtended,
	"AlphaNumericExtendedLong": utils.AlphaNumericExtendedLong,
}

func (e *evaluator) eval(x ast.Expr) ([]string, bool) {
	switch x := x.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return nil, false
		}
		s, err := strconv.Unquote(x.Value)
		return []string{s}, err == nil
	case *ast.ParenExpr:
		return e.eval(x.X)
	case *ast.Ident:
		v, ok := e.env[x.Name]
		return v, ok
	case *ast.BinaryExpr:
		a, ok1 := e.scalar(x.X)
		b, ok2 := e.scalar(x.Y)
		return []string{a + b}, ok1 && ok2 && x.Op == token.ADD
	case *ast.CompositeLit:
		if _, ok := x.Type.(*ast.ArrayType); !ok {
			return nil, false
		}
		var out []string
		for _, el := range x.Elts {
			v, ok := e.eval(el)
			if !ok {
				return nil, false
			}
			out = append(out, v...)
		}
		return out, true
	case *ast.CallExpr:
		return e.call(x)
	}
	return nil, false
}

func (e *evaluator) scalar(x ast.Expr) (string, bool) {
	v, ok := e.eval(x)
	if !ok || len(v) != 1 {
		return "", false
	}
	return v[0], true
}

func (e *evaluator) args(x *ast.CallExpr) ([]string, bool) {
	var out []string
	for _, a := range x.Args {
		v, ok := e.scalar(a)
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
	return out, true
}

func (e *evaluator) call(x *ast.CallExpr) ([]string, bool) {
	if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "append" && len(x.Args) > 0 {
		var out []string
		for _, a := range x.Args {
			v, ok := e.eval(a)
			if !ok {
				return nil, false
			}
			out = append(out, v...)
		}
		return out, true
	}
	sel, ok := x.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil, false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return nil, false
	}
	if pkg.Name == "strings" && sel.Sel.Name == "Repeat" && len(x.Args) == 2 {
		s, ok := e.scalar(x.Args[0])
		lit, isLit := x.Args[1].(*ast.BasicLit)
		if !ok || !isLit {
			return nil, false
		}
		n, err := strconv.Atoi(lit.Value)
		return []string{strings.Repeat(s, n)}, err == nil
	}
	a, ok := e.args(x)
	if !ok {
		return nil, false
	}
	return e.apply(pkg.Name+"."+sel.Sel.Name, a)
}

func (e *evaluator) apply(fn string, a []string) ([]string, bool) {
	switch {
	case fn == "secrets.NewSecret" && len(a) == 1:
		g, err := reggen.NewGenerator(a[0])
		if err != nil {
			return nil, false
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%d", e.rule, e.n)
		e.n++
		g.SetSeed(int64(h.Sum64()))
		return []string{g.Generate(1)}, true
	case fn == "utils.GenerateSampleSecrets" && len(a) == 2:
		e.bare = append(e.bare, a[1])
		return utils.GenerateSampleSecrets(a[0], a[1]), true
	case fn == "utils.GenerateSampleSecret" && len(a) == 2:
		e.bare = append(e.bare, a[1])
		return []string{utils.GenerateSampleSecret(a[0], a[1])}, true
	case fn == "utils.Hex8_4_4_4_12" && len(a) == 0:
		return []string{utils.Hex8_4_4_4_12()}, true
	case fn == "fmt.Sprintf" && len(a) >= 1:
		args := make([]any, len(a)-1)
		for i, s := range a[1:] {
			args[i] = s
		}
		return []string{fmt.Sprintf(a[0], args...)}, true
	case strings.HasPrefix(fn, "utils.") && len(a) == 1:
		if p, ok := patterns[strings.TrimPrefix(fn, "utils.")]; ok {
			return []string{p(a[0])}, true
		}
	}
	return nil, false
}
