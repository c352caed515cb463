package main

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/fsm"
)

func TestAuditGraphTable(t *testing.T) {
	r := runCLI(t, "", "audit", "graph")
	if r.code != 0 || r.stdout != fsm.Mermaid() {
		t.Fatalf("mermaid: %d %s", r.code, r.stderr)
	}
	r = runCLI(t, "", "audit", "graph", "--format", "dot")
	if r.code != 0 || r.stdout != fsm.DOT() {
		t.Fatalf("dot: %d %s", r.code, r.stderr)
	}
	nodes, edges := checkDigraph(t, r.stdout)
	if len(nodes) != 9 || edges != len(fsmGroupedEdges()) {
		t.Errorf("dot has %d states and %d edges", len(nodes), edges)
	}
	r = runCLI(t, "", "--json", "audit", "graph")
	var out struct {
		OK      bool   `json:"ok"`
		Format  string `json:"format"`
		Diagram string `json:"diagram"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !out.OK || out.Format != "mermaid" || out.Diagram != fsm.Mermaid() {
		t.Fatalf("json: %v %+v", err, out)
	}
}

// fsmGroupedEdges counts the distinct (from, to) pairs the table draws.
func fsmGroupedEdges() map[[2]fsm.State]bool {
	out := map[[2]fsm.State]bool{}
	for _, e := range fsm.Edges() {
		out[[2]fsm.State{e.From, e.To}] = true
	}
	return out
}

func TestAuditGraphHarness(t *testing.T) {
	root := importFixture(t, "agent-zero-plugin")
	r := runCLI(t, "", "--root", root, "audit", "graph", "--harness", "agent-zero")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	golden(t, "audit_graph_agent_zero.mmd", []byte(r.stdout))
	r = runCLI(t, "", "--root", root, "audit", "graph", "--harness", "agent-zero", "--format", "dot")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	golden(t, "audit_graph_agent_zero.dot", []byte(r.stdout))
	nodes, edges := checkDigraph(t, r.stdout)
	// detect, require_plugin, find_plugin, prove, lose_plugin; the states it visited.
	if edges != 5 || strings.Join(nodes, ",") != "unsupported,needs-plugin,configured-awaiting-proof,active" {
		t.Errorf("history digraph: %v, %d edges", nodes, edges)
	}

	// Counts, first and last, and the derived expiry: the two-workers ledger
	// drawn now (2026-11-01), after both receipts expired.
	root = importFixture(t, "two-workers")
	r = runCLI(t, "", "--root", root, "audit", "graph", "--harness", "claude-code")
	for _, want := range []string{
		"active --> active: prove x1, at 20260911T100008Z",
		"configured_awaiting_proof --> active: prove x1, at 20260901T100005Z",
		"active --> configured_awaiting_proof: expire (derived) x1, at 20261011T100008Z",
	} {
		if !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("missing %q in\n%s", want, r.stdout)
		}
	}
	// No colon or semicolon in a Mermaid label: Mermaid would cut it.
	for _, l := range strings.Split(r.stdout, "\n") {
		if _, label, ok := strings.Cut(l, ": "); ok && strings.ContainsAny(label, ":;") {
			t.Errorf("label %q", label)
		}
	}
}

func TestAuditGraphCountsRepeats(t *testing.T) {
	root := importFixture(t, "receipt-expired")
	r := runCLI(t, "", "--root", root, "audit", "graph", "--harness", "claude-code")
	if !strings.Contains(r.stdout, "configured_awaiting_proof --> active: prove x2, first 20260901T100005Z, last 20261011T100008Z\n") {
		t.Errorf("repeated transition:\n%s", r.stdout)
	}
}

func TestAuditGraphErrors(t *testing.T) {
	root := importFixture(t, "install-to-active")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "graph", "--format", "svg"}, `--format "svg": want mermaid or dot`},
		{[]string{"audit", "graph", "--harness", "pi"}, `no events for harness "pi"`},
		{[]string{"audit", "graph", "x"}, "audit graph takes no arguments"},
	} {
		r := runCLI(t, "", append([]string{"--root", root}, c.args...)...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: %d %q %q", c.args, r.code, r.stdout, r.stderr)
		}
	}
}

var (
	dotHead = regexp.MustCompile(`^digraph "[^"\\]+" \{$`)
	dotEdge = regexp.MustCompile(`^    "([^"\\]+)" -> "([^"\\]+)"( \[label="[^"\\]*"(, style=dashed)?\])?;$`)
	dotNode = regexp.MustCompile(`^    "([^"\\]+)"( \[shape=point\])?;$`)
	dotAttr = regexp.MustCompile(`^    (rankdir=LR|node \[shape=box, style=rounded\]);$`)
)

// checkDigraph checks that DOT text is a digraph: with Graphviz's dot when it
// is installed, and always with a structural check of the shape we emit
// (every line a node, an edge or an attribute; every edge between declared
// nodes). It returns the declared states in order and the edge count.
func checkDigraph(t *testing.T, dot string) ([]string, int) {
	t.Helper()
	if path, err := exec.LookPath("dot"); err == nil {
		cmd := exec.Command(path, "-Tcanon")
		cmd.Stdin = strings.NewReader(dot)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "digraph") {
			t.Fatalf("dot rejects the digraph: %v\n%s", err, out)
		}
	} else {
		t.Log("graphviz dot not installed; structural check only")
	}
	lines := strings.Split(strings.TrimSuffix(dot, "\n"), "\n")
	if len(lines) < 3 || !dotHead.MatchString(lines[0]) || lines[len(lines)-1] != "}" {
		t.Fatalf("not a digraph:\n%s", dot)
	}
	declared := map[string]bool{}
	var nodes []string
	edges := 0
	for _, l := range lines[1 : len(lines)-1] {
		switch {
		case dotAttr.MatchString(l):
		case dotNode.MatchString(l):
			n := dotNode.FindStringSubmatch(l)[1]
			declared[n] = true
			if n != "[*]" {
				nodes = append(nodes, n)
			}
		case dotEdge.MatchString(l):
			m := dotEdge.FindStringSubmatch(l)
			if !declared[m[1]] || !declared[m[2]] {
				t.Fatalf("edge between undeclared nodes: %s", l)
			}
			if m[1] != "[*]" {
				edges++
			}
		default:
			t.Fatalf("line %q is not a node, an edge or an attribute", l)
		}
	}
	for _, n := range nodes {
		if !fsm.Valid(fsm.State(n)) {
			t.Fatalf("node %q is not a state", n)
		}
	}
	return nodes, edges
}
