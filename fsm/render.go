package fsm

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The diagrams are drawn by our own renderer from Table (not by looplab's
// visualizers), so that parallel transitions share one labelled edge, the
// derived expiry is marked, and a harness's own history can be annotated
// with counts and times. Output is deterministic: states in protocol order,
// edges sorted by (from, to, transition).

// graphEdge is one drawn edge.
type graphEdge struct {
	from, to State
	label    string
	derived  bool
}

func sortEdges(es []Edge) {
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i], es[j]
		if x, y := stateIndex(a.From), stateIndex(b.From); x != y {
			return x < y
		}
		if x, y := stateIndex(a.To), stateIndex(b.To); x != y {
			return x < y
		}
		return a.Transition < b.Transition
	})
}

// tableGraph groups the table's cells by (from, to): one edge, the
// transition names joined.
func tableGraph() ([]State, []graphEdge) {
	var out []graphEdge
	for _, e := range Edges() {
		n := len(out)
		if n > 0 && out[n-1].from == e.From && out[n-1].to == e.To && !out[n-1].derived && e.Transition != Expire {
			out[n-1].label += ", " + e.Transition
			continue
		}
		ge := graphEdge{from: e.From, to: e.To, label: e.Transition, derived: e.Transition == Expire}
		if ge.derived {
			ge.label += " (derived)"
		}
		out = append(out, ge)
	}
	return States, out
}

// historyGraph draws the transitions one harness took: one edge per
// (from, to, transition) with its count and first and last time.
func historyGraph(h *History) ([]State, []graphEdge) {
	type acc struct {
		e           Edge
		n           int
		first, last time.Time
	}
	by := map[Edge]*acc{}
	seen := map[State]bool{Initial: true}
	for _, s := range h.Steps {
		if s.Transition == "" {
			continue
		}
		k := Edge{From: s.From, To: s.To, Transition: s.Transition}
		a := by[k]
		if a == nil {
			a = &acc{e: k, first: s.At}
			by[k] = a
		}
		a.n++
		if s.At.Before(a.first) {
			a.first = s.At
		}
		if s.At.After(a.last) {
			a.last = s.At
		}
		seen[s.From], seen[s.To] = true, true
	}
	keys := make([]Edge, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sortEdges(keys)
	out := make([]graphEdge, 0, len(keys))
	for _, k := range keys {
		a := by[k]
		label := k.Transition
		if k.Transition == Expire {
			label += " (derived)"
		}
		if a.n == 1 {
			label += " x1, at " + basicTime(a.first)
		} else {
			label += fmt.Sprintf(" x%d, first %s, last %s", a.n, basicTime(a.first), basicTime(a.last))
		}
		out = append(out, graphEdge{from: k.From, to: k.To, label: label, derived: k.Transition == Expire})
	}
	var nodes []State
	for _, s := range States {
		if seen[s] {
			nodes = append(nodes, s)
		}
	}
	return nodes, out
}

// basicTime is ISO 8601 basic format (no colons, which Mermaid labels
// cannot hold).
func basicTime(t time.Time) string { return t.UTC().Format("20060102T150405Z") }

// mermaidID turns a state into a Mermaid identifier (no hyphens).
func mermaidID(s State) string { return strings.ReplaceAll(string(s), "-", "_") }

func renderMermaid(nodes []State, edges []graphEdge) string {
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	for _, s := range nodes {
		fmt.Fprintf(&b, "    state \"%s\" as %s\n", s, mermaidID(s))
	}
	fmt.Fprintf(&b, "    [*] --> %s\n", mermaidID(Initial))
	for _, e := range edges {
		fmt.Fprintf(&b, "    %s --> %s: %s\n", mermaidID(e.from), mermaidID(e.to), e.label)
	}
	return b.String()
}

func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func renderDOT(name string, nodes []State, edges []graphEdge) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(name))
	b.WriteString("    rankdir=LR;\n")
	b.WriteString("    node [shape=box, style=rounded];\n")
	b.WriteString("    \"[*]\" [shape=point];\n")
	for _, s := range nodes {
		fmt.Fprintf(&b, "    %s;\n", dotQuote(string(s)))
	}
	fmt.Fprintf(&b, "    \"[*]\" -> %s;\n", dotQuote(string(Initial)))
	for _, e := range edges {
		attrs := "label=" + dotQuote(e.label)
		if e.derived {
			attrs += ", style=dashed"
		}
		fmt.Fprintf(&b, "    %s -> %s [%s];\n", dotQuote(string(e.from)), dotQuote(string(e.to)), attrs)
	}
	b.WriteString("}\n")
	return b.String()
}

// Mermaid is the transition table as a Mermaid state diagram (the one
// embedded in docs/fsm.md).
func Mermaid() string { n, e := tableGraph(); return renderMermaid(n, e) }

// DOT is the transition table as a Graphviz digraph.
func DOT() string { n, e := tableGraph(); return renderDOT("harness", n, e) }

// HistoryMermaid draws the transitions h actually took, with counts and
// first/last times (derived expiries included).
func HistoryMermaid(h *History) string { n, e := historyGraph(h); return renderMermaid(n, e) }

// HistoryDOT is HistoryMermaid as a Graphviz digraph.
func HistoryDOT(h *History) string { n, e := historyGraph(h); return renderDOT(h.Harness, n, e) }
