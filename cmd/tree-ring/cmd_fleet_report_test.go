package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/cmd/internal/replica"
)

// fleetReportDir collects two projects' stores into a collector's
// directory over an embedded NATS server, as fleet collect does; the
// first store is labelled build-host-1 (fleet label), the second has no
// label.
func fleetReportDir(t *testing.T) (dir string, ids []string, p, q *hp) {
	t.Helper()
	srv := startNATS(t)
	a, b := fleetProject(t, 1), fleetProject(t, 2)
	a.ok("", "fleet", "label", "build-host-1")
	for _, q := range []*hp{a, b} {
		q.ok("", "fleet", "publish", "--nats", srv.URL())
	}
	dir = t.TempDir()
	a.ok("", "fleet", "collect", "--nats", srv.URL(), "--into", dir)
	ids = []string{storeIDOf(t, filepath.Join(a.dir, ".tree-ring")), storeIDOf(t, filepath.Join(b.dir, ".tree-ring"))}
	return dir, ids, a, b
}

// The fleet page: a matrix row per store linking to its section, the
// state of each harness at the instant, each replica verified; a replica
// the collector stopped is reported as failed and the command exits 3
// after writing the page.
func TestFleetReport(t *testing.T) {
	dir, ids, p, q := fleetReportDir(t)
	file := filepath.Join(t.TempDir(), "fleet.html")
	out := p.ok("", "fleet", "report", "--from", dir, "--html", file)
	if !strings.HasPrefix(out, "wrote "+file+": 2 stores at ") {
		t.Fatalf("stdout %q", out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		for _, want := range []string{`<a href="#store-` + id + `">`, `<section class="store" id="store-` + id + `">`, `<article id="store-` + id + `-h-claude-code">`} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("the page lacks %s", want)
			}
		}
	}
	matrix := section(t, string(b), `<section id="matrix">`, "</section>")
	if n := strings.Count(matrix, `<td class="w ok">verified: `); n != 2 {
		t.Errorf("%d stores verified in the matrix, want 2", n)
	}
	if bytes.Contains(b, []byte(dir)) {
		t.Error("the page names the collector's directory")
	}
	// The recorded label stands beside the store id, in the matrix and in
	// the store's section; the store without one has a dash in the matrix.
	labelled := func(b []byte, id, label string) bool {
		return bytes.Contains(b, []byte(`<a href="#store-`+id+`">`+id+`</a></th><td>`+label+`</td>`)) &&
			(label == "-" || bytes.Contains(b, []byte(`<h2>Store <code>`+id+`</code> `+label+`</h2>`)))
	}
	if !labelled(b, ids[0], "build-host-1") || !labelled(b, ids[1], "-") {
		t.Errorf("the recorded labels are not beside the store ids:\n%s", matrix)
	}
	// A fleet file's label wins over the store's own; "-" keeps it.
	line := strings.Fields(p.ok("", "fleet", "identity"))
	fleetFile := filepath.Join(t.TempDir(), "fleet.txt")
	if err := os.WriteFile(fleetFile, []byte(line[0]+" "+line[1]+" -\n"+q.ok("", "fleet", "identity", "--label", "ci-7")), 0o600); err != nil {
		t.Fatal(err)
	}
	p.ok("", "fleet", "report", "--from", dir, "--html", file, "--force", "--expect", fleetFile)
	if b, err = os.ReadFile(file); err != nil {
		t.Fatal(err)
	}
	if !labelled(b, ids[0], "build-host-1") || !labelled(b, ids[1], "ci-7") {
		t.Errorf("the fleet file's labels are not beside the store ids:\n%s", section(t, string(b), `<section id="matrix">`, "</section>"))
	}

	// The collector stops the second replica.
	if err := replica.WriteStop(replica.Root(dir, ids[1]), replica.Stop{StoreID: ids[1], Position: 3, Reason: "hash mismatch"}); err != nil {
		t.Fatal(err)
	}
	r := p.run("", "fleet", "report", "--from", dir, "--html", file, "--force")
	if r.code != exitVerify || r.stdout != "" || !strings.Contains(r.stderr, "a replica failed verification: store "+ids[1]+": ") {
		t.Fatalf("stopped replica: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	b, err = os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<td>stopped at position 3: hash mismatch</td>", `<td class="bad">failed: position 3: replica stopped by fleet collect: hash mismatch</td>`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// The fleet page renders in a real browser: not blank, no console
// message, every store and harness named in the matrix.
func TestFleetReportRendersInChromium(t *testing.T) {
	bin := chromiumBin(t)
	dir, ids, p, _ := fleetReportDir(t)
	file := filepath.Join(t.TempDir(), "fleet.html")
	p.ok("", "fleet", "report", "--from", dir, "--html", file)
	r := renderPage(t, bin, file)
	if len(r.console) > 0 {
		t.Fatalf("console output:\n%s", strings.Join(r.console, "\n"))
	}
	if n, green := distinctColours(r.shot, activeGreen); n < 16 || !green {
		t.Fatalf("the screenshot looks blank: %d colours, active drawn %v", n, green)
	}
	matrix := section(t, r.dom, `<section id="matrix">`, "</section>")
	for _, want := range append(ids, ">claude-code<", ">active<") {
		if !strings.Contains(matrix, want) {
			t.Errorf("the rendered matrix lacks %s", want)
		}
	}
}
