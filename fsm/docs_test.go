package fsm

import (
	"os"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events/eventstest"
)

// -update rewrites the diagram embedded in docs/fsm.md (the repository's
// one -update flag, eventstest.UpdateFlag).
var _ = eventstest.UpdateFlag()

const (
	docsPath  = "../docs/fsm.md"
	beginMark = "<!-- BEGIN fsm.Mermaid (generated: go test ./fsm -run TestDocsDiagram -update) -->\n```mermaid\n"
	endMark   = "```\n<!-- END fsm.Mermaid -->"
)

// The diagram in docs/fsm.md is the code's: the test fails when the table
// changes and the document does not.
func TestDocsDiagram(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i := strings.Index(doc, beginMark)
	j := strings.Index(doc, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated diagram block", docsPath)
	}
	got := doc[i+len(beginMark) : j]
	if eventstest.Updating() && got != Mermaid() {
		doc = doc[:i+len(beginMark)] + Mermaid() + doc[j:]
		if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		got = Mermaid()
	}
	if got != Mermaid() {
		t.Errorf("the diagram in %s differs from fsm.Mermaid() (run go test ./fsm -run TestDocsDiagram -update)", docsPath)
	}
	// Every transition and state is explained.
	for _, tr := range Transitions {
		if !strings.Contains(doc, "### `"+tr+"`") {
			t.Errorf("%s does not explain transition %s", docsPath, tr)
		}
	}
	for _, s := range States {
		if !strings.Contains(doc, "| `"+string(s)+"` |") {
			t.Errorf("%s does not list state %s", docsPath, s)
		}
	}
}
