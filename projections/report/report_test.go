package report

import (
	"bytes"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events/eventstest"
)

var _ = eventstest.UpdateFlag()

var t0 = eventstest.Epoch

func at(d time.Duration) time.Time { return t0.Add(d) }

// sample is a store whose claude-code went unsupported → configured →
// active → needs-user-review over three days, with a derived expiry on
// codex, receipts on two days and runs of every outcome.
func sample() Store {
	return Store{
		ID: "0b7c6a52-8f3e-4d1a-9c2b-6e5f4d3c2b1a", RootFingerprint: strings.Repeat("ab", 32),
		At: at(72 * time.Hour), LastEventAt: at(50 * time.Hour),
		Verification: Verification{OK: true, ChainHead: strings.Repeat("cd", 32), Events: 40, Streams: 7,
			Projections: []string{"harnesses", "manifest", "receipts", "runs"}},
		Harnesses: []Harness{
			{ID: "claude-code", Name: "Claude Code", State: "needs-user-review", Next: "Review it.", Events: 6, Steps: []Step{
				{Position: 5, At: at(time.Minute), Type: "harness.detected", Transition: "detect", From: "unsupported", To: "unsupported", Reason: "native-preflight adapter 4"},
				{Position: 6, At: at(2 * time.Minute), Type: "bridge.published", Transition: "publish", From: "unsupported", To: "configured-awaiting-proof", Reason: "bridge 0123456789ab, 2 paths changed"},
				{Position: 9, At: at(time.Hour), Type: "preflight.succeeded", Transition: "prove", From: "configured-awaiting-proof", To: "active", Reason: "receipt r-1"},
				{Position: 10, At: at(time.Hour), Type: "receipt.recorded", From: "active", To: "active", Reason: "receipt r-1"},
				{Position: 14, At: at(25 * time.Hour), Type: "preflight.succeeded", Transition: "prove", From: "active", To: "active", Reason: "receipt r-2"},
				{Position: 20, At: at(50 * time.Hour), Type: "harness.deactivation_requested", Transition: "deactivate", From: "active", To: "needs-user-review", Reason: "2 paths kept for review"},
			}},
			{ID: "codex", Name: "Codex", State: "configured-awaiting-proof", Next: "Open a new Codex session.", Events: 3, Later: 1, Steps: []Step{
				{Position: 7, At: at(3 * time.Minute), Type: "bridge.published", Transition: "publish", From: "unsupported", To: "configured-awaiting-proof"},
				{Position: 12, At: at(2 * time.Hour), Type: "preflight.succeeded", Transition: "prove", From: "configured-awaiting-proof", To: "active"},
				{At: at(70 * time.Hour), Transition: "expire", From: "active", To: "configured-awaiting-proof", Derived: true, Reason: "receipt expired"},
			}},
		},
		Receipts: []Receipt{
			{Harness: "claude-code", Worker: "0357e5c60835aaaa", At: at(time.Hour), QueryClass: "startup_fallback", Results: 0, Status: "success"},
			{Harness: "claude-code", Worker: "0357e5c60835aaaa", At: at(25 * time.Hour), QueryClass: "task_hint", Results: 3, Status: "success"},
			{Harness: "claude-code", Worker: "00d1b3837000bbbb", At: at(25 * time.Hour), QueryClass: "task_hint", Results: 2, Status: "success"},
			{Harness: "codex", Worker: "fb66b9aeb663cccc", At: at(2 * time.Hour), QueryClass: "startup_fallback", Results: 1, Status: "success"},
			{Harness: "codex", Worker: "fb66b9aeb663cccc", At: at(2*time.Hour + time.Minute), QueryClass: "startup_fallback", Status: "failed"},
			{Harness: "codex", Worker: "fb66b9aeb663cccc", At: at(80 * time.Hour), QueryClass: "startup_fallback", Results: 1, Status: "success"},
		},
		Runs: []Run{
			{Command: "init", Status: "succeeded", Stage: "done", Started: at(0)},
			{Command: "integrations hook", Harness: "claude-code", Status: "succeeded", Stage: "done", Started: at(time.Hour)},
			{Command: "integrations hook", Harness: "codex", Status: "failed", Stage: "preflight", Diagnostic: "bridge_mismatch", Started: at(26 * time.Hour)},
			{Command: "import", Status: "interrupted", Stage: "append", Started: at(27 * time.Hour)},
			{Command: "remember", Status: "aborted", Stage: "validate", Diagnostic: "duplicate", Started: at(49 * time.Hour)},
			{Command: "events import", Status: "running", Stage: "append", Started: at(71 * time.Hour)},
		},
	}
}

func TestStorePageGolden(t *testing.T) {
	b, err := StorePage(sample(), at(72*time.Hour+time.Second))
	if err != nil {
		t.Fatal(err)
	}
	selfContained(t, b)
	eventstest.Golden(t, filepath.Join("testdata", "store.html"), b)
	for _, want := range []string{
		`<article id="h-claude-code">`, `<article id="h-codex">`,
		// The derived expiry is a change of its own.
		`<td class="n">derived</td>`,
		// 6 receipts, one of them after At: 5 in the window, one of
		// them not successful.
		`<td class="n">2</td><td class="n">1</td><td>startup_fallback 2</td>`,
		"5 receipts in the window; newest: 2026-11-02T13:00:00Z (1d 23h before 2026-11-04T12:00:00Z)",
		"Diagnostics: bridge_mismatch 1, duplicate 1.",
		"verified: 40 events in 7 streams, 4 projections match",
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestFleetPageGolden(t *testing.T) {
	good := sample()
	bad := sample()
	bad.ID = "1c8d7b63-9f4e-4e2b-8d3c-7f6e5e4d3c2b"
	bad.Harnesses = bad.Harnesses[:1]
	bad.Verification = Verification{Failure: "replica stopped by fleet collect: position 3: bad hash"}
	bad.Replica = "stopped at position 3: bad hash"
	good.Replica = "ok"
	good.Label = "ci<runner>-7" // escaped like every string
	b, err := FleetPage(Fleet{At: good.At, Stores: []Store{bad, good}}, at(72*time.Hour+time.Second))
	if err != nil {
		t.Fatal(err)
	}
	selfContained(t, b)
	eventstest.Golden(t, filepath.Join("testdata", "fleet.html"), b)
	// Each matrix row links to its store's section, which exists.
	for _, id := range []string{good.ID, bad.ID} {
		for _, want := range []string{`href="#store-` + id + `"`, `id="store-` + id + `"`, `id="store-` + id + `-h-claude-code"`} {
			if !bytes.Contains(b, []byte(want)) {
				t.Errorf("page lacks %s", want)
			}
		}
	}
	// The store without codex has a dash in codex's column; rows are in
	// store id order.
	if i, j := bytes.Index(b, []byte(`href="#store-`+good.ID)), bytes.Index(b, []byte(`href="#store-`+bad.ID)); i < 0 || j < i {
		t.Error("matrix rows are not in store id order")
	}
	if !bytes.Contains(b, []byte(`<td class="muted">-</td>`)) {
		t.Error("the missing harness has no dash cell")
	}
	// The label stands beside the store id in the matrix, the section's
	// heading and its identity table; a store without one has a dash in
	// the matrix and nothing elsewhere.
	for _, want := range []string{
		`<a href="#store-` + good.ID + `">` + good.ID + `</a></th><td>ci&lt;runner&gt;-7</td>`,
		`<h2>Store <code>` + good.ID + `</code> ci&lt;runner&gt;-7</h2>`,
		`<tr><th scope="row">label</th><td>ci&lt;runner&gt;-7</td></tr>`,
		`<a href="#store-` + bad.ID + `">` + bad.ID + `</a></th><td>-</td>`,
		`<h2>Store <code>` + bad.ID + `</code></h2>`,
	} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("page lacks %s", want)
		}
	}
	if bytes.Contains(b, []byte("ci<runner>")) || bytes.Count(b, []byte(`<th scope="row">label</th>`)) != 1 {
		t.Error("the label is unescaped, or shown for the store without one")
	}
}

// selfContained fails on anything that would make the page depend on
// more than its bytes: a script, an external URL, a web font, an import.
func selfContained(t *testing.T, b []byte) {
	t.Helper()
	for _, bad := range []string{"<script", "http:", "https:", "//", "url(", "@import", "@font-face", "<link", "<img", "<iframe", "javascript:"} {
		if i := bytes.Index(b, []byte(bad)); i >= 0 {
			t.Errorf("page holds %q: ...%s...", bad, b[max(0, i-40):min(len(b), i+40)])
		}
	}
}

func TestSegmentsAndWidths(t *testing.T) {
	h := sample().Harnesses[0]
	segs := segmentsOf(h, at(0), at(72*time.Hour))
	var states []string
	for _, s := range segs {
		states = append(states, s.state)
	}
	if got := strings.Join(states, " "); got != "unsupported configured-awaiting-proof active needs-user-review" {
		t.Fatalf("segments %s", got)
	}
	// A window starting later begins in the state reached by then.
	if s := segmentsOf(h, at(30*time.Hour), at(72*time.Hour)); len(s) != 2 || s[0].state != "active" || s[1].step.Position != 20 {
		t.Fatalf("late window %+v", s)
	}
	ws := widths(segs)
	sum := 0.0
	for _, w := range ws {
		sum += w
		if w < minBand {
			t.Errorf("band %v narrower than the floor", w)
		}
	}
	if math.Abs(sum-chartWidth) > 1e-6 {
		t.Errorf("widths sum to %v, want %v", sum, chartWidth)
	}
	// Time decides above the floor: 22 hours of needs-user-review outdraw
	// 58 minutes of configured-awaiting-proof.
	if ws[3] <= ws[1] {
		t.Errorf("widths %v do not follow time", ws)
	}
	// Many segments share the width evenly when the floor would overflow.
	many := make([]segment, 40)
	for i := range many {
		many[i] = segment{from: at(0), to: at(0)}
	}
	for _, w := range widths(many) {
		if math.Abs(w-chartWidth/40) > 1e-9 {
			t.Fatalf("40 empty segments: width %v", w)
		}
	}
}

// The page's text is escaped: a hostile harness id or reason cannot add
// markup.
func TestPageEscapes(t *testing.T) {
	s := sample()
	s.Harnesses[0].Steps[2].Reason = `<script>alert(1)</script>`
	s.Harnesses[0].Name = `<b onload=x>`
	s.Verification.Projections = []string{`<i>`, "runs"}
	b, err := StorePage(s, at(0))
	if err != nil {
		t.Fatal(err)
	}
	if s.Verification.Projections[0] != `<i>` {
		t.Fatal("rendering escaped the caller's values in place")
	}
	if bytes.Contains(b, []byte("<script>")) || bytes.Contains(b, []byte("<b onload")) {
		t.Fatal("markup from values reached the page")
	}
	if !regexp.MustCompile(`&lt;script&gt;alert\(1\)&lt;/script&gt;`).Match(b) {
		t.Fatal("the escaped reason is missing")
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 59 * time.Second: "59s", 61 * time.Second: "1m 1s", 3*time.Hour + 5*time.Minute: "3h 5m", 50 * time.Hour: "2d 2h",
	} {
		if got := age(d); got != want {
			t.Errorf("age(%v) = %q, want %q", d, got, want)
		}
	}
}
