package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// The page's view: every value already a string or a number to print, so
// the template only lays out.

type pageView struct {
	Title, Generated, At string
	Legend               []swatch
	Fleet                bool
	Matrix               matrixView
	Stores               []storeView
}

type storeView struct {
	Anchor, Prefix             string
	ID, Label, RootFingerprint string
	Window, Replica            string
	LastEvent                  string
	Verification               Verification
	VerifiedText               string
	Harnesses                  []harnessView
	Receipts                   receiptsView
	Runs                       runsView
}

// swatch is a state's colours: the one home of the palette, for the SVG
// fills and the table cells alike.
type swatch struct{ Name, Fill, Ink string }

var palette = map[fsm.State]swatch{
	fsm.Active:                  {"active", "#2e7d32", "#ffffff"},
	fsm.ActiveIsolated:          {"active-isolated", "#81c784", "#111111"},
	fsm.ConfiguredAwaitingProof: {"configured-awaiting-proof", "#1e63b5", "#ffffff"},
	fsm.NeedsUserReview:         {"needs-user-review", "#f9a825", "#111111"},
	fsm.NeedsTrust:              {"needs-trust", "#7b1fa2", "#ffffff"},
	fsm.NeedsPlugin:             {"needs-plugin", "#795548", "#ffffff"},
	fsm.NeedsProjectMount:       {"needs-project-mount", "#00838f", "#ffffff"},
	fsm.Failed:                  {"failed", "#c62828", "#ffffff"},
	fsm.Unsupported:             {"unsupported", "#9e9e9e", "#111111"},
}

// unknownSwatch colours a state name the palette lacks (a replica written
// by a newer build).
var unknownSwatch = swatch{"", "#eeeeee", "#111111"}

func swatchOf(state string) swatch {
	if s, ok := palette[fsm.State(state)]; ok {
		return s
	}
	u := unknownSwatch
	u.Name = state
	return u
}

// states is the legend, in the protocol's order.
func states() []swatch {
	out := make([]swatch, 0, len(fsm.States))
	for _, s := range fsm.States {
		out = append(out, palette[s])
	}
	return out
}

// outcomeFills colours the run outcomes.
var outcomeFills = map[string]string{
	events.RunStatusRunning:     "#1e63b5",
	events.RunStatusSucceeded:   "#2e7d32",
	events.RunStatusFailed:      "#c62828",
	events.RunStatusAborted:     "#ef6c00",
	events.RunStatusInterrupted: "#757575",
}

const stampLayout = "2006-01-02T15:04:05Z"

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(stampLayout)
}

func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// px prints a coordinate to a tenth of a pixel: stable bytes for goldens.
func px(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// age prints a non-negative duration in its two largest units.
func age(d time.Duration) string {
	d = d.Round(time.Second)
	days, h, m, s := int(d/(24*time.Hour)), int(d/time.Hour)%24, int(d/time.Minute)%60, int(d/time.Second)%60
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, h)
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// windowStart is Since, or the store's first step when Since is zero.
func windowStart(s Store) time.Time {
	if !s.Since.IsZero() {
		return s.Since
	}
	first := s.At
	for _, h := range s.Harnesses {
		if len(h.Steps) > 0 && h.Steps[0].At.Before(first) {
			first = h.Steps[0].At
		}
	}
	return first
}

// inWindow reports whether t is within [since, at] (no lower bound when
// since is zero).
func inWindow(t, since, at time.Time) bool {
	return !t.After(at) && (since.IsZero() || !t.Before(since))
}

func viewStore(s Store, prefix string) storeView {
	start := windowStart(s)
	v := storeView{Anchor: strings.TrimSuffix(prefix, "-"), Prefix: prefix, ID: s.ID, Label: s.Label, RootFingerprint: s.RootFingerprint,
		Window: stamp(start) + " to " + stamp(s.At), Replica: s.Replica, LastEvent: stamp(s.LastEventAt),
		Verification: s.Verification, VerifiedText: verifiedText(s.Verification)}
	for _, h := range s.Harnesses {
		v.Harnesses = append(v.Harnesses, viewHarness(h, prefix, start, s.At))
	}
	v.Receipts = viewReceipts(s, prefix)
	v.Runs = viewRuns(s, prefix)
	return v
}

func verifiedText(v Verification) string {
	if !v.OK {
		return "failed: " + v.Failure
	}
	return fmt.Sprintf("verified: %d events in %d streams, %d projections match", v.Events, v.Streams, len(v.Projections))
}
