package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tree-ring/tree-ring/events"
)

// Receipts and runs per day: one bar per day (stacked by outcome for the
// runs), with the table of the same counts beside it.

const (
	barsPlotH = 120.0
	barsTop   = 16.0
	barsH     = 160
	barMaxW   = 48.0
	// maxRunRows bounds the table of runs that did not succeed, newest
	// first; the counts above it cover every run.
	maxRunRows = 100
)

type barChart struct {
	TitleID, Title string
	Width, Height  int
	Rects          []barRect
	Labels         []barLabel
}

type barRect struct{ X, Y, W, H, Fill, Title string }

type barLabel struct{ X, Y, Text string }

// stack is one day's bar: its parts bottom up.
type stack struct {
	Day   string
	Parts []part
}

type part struct {
	Key  string
	N    int
	Fill string
}

// bars lays out one bar per stack, scaled to the tallest; the count is
// printed above each bar and the day below it.
func bars(stacks []stack, titleID, title string) barChart {
	c := barChart{TitleID: titleID, Title: title, Width: int(chartWidth), Height: barsH}
	top := 0
	for _, s := range stacks {
		top = max(top, total(s))
	}
	if top == 0 {
		return c
	}
	slot := chartWidth / float64(len(stacks))
	w := min(barMaxW, slot*0.7)
	for i, s := range stacks {
		x := float64(i)*slot + (slot-w)/2
		y := barsTop + barsPlotH
		for _, p := range s.Parts {
			if p.N == 0 {
				continue
			}
			h := barsPlotH * float64(p.N) / float64(top)
			y -= h
			c.Rects = append(c.Rects, barRect{X: px(x), Y: px(y), W: px(w), H: px(h), Fill: p.Fill,
				Title: fmt.Sprintf("%s: %d %s", s.Day, p.N, p.Key)})
		}
		c.Labels = append(c.Labels, barLabel{X: px(x + w/2), Y: px(y - 3), Text: strconv.Itoa(total(s))})
		// Day labels thin out when the days are many.
		if every := int(90/slot) + 1; i%every == 0 {
			c.Labels = append(c.Labels, barLabel{X: px(x + w/2), Y: px(barsTop + barsPlotH + 16), Text: s.Day[5:]})
		}
	}
	return c
}

func total(s stack) int {
	n := 0
	for _, p := range s.Parts {
		n += p.N
	}
	return n
}

type receiptsView struct {
	Chart  barChart
	Rows   []receiptRow
	Total  int
	Newest string // the newest receipt's time and age, or "-"
}

type receiptRow struct {
	Day, Harness, Worker, Classes string
	Count, Unsuccessful, Results  int
}

// viewReceipts groups the receipts in the window by day, harness and
// worker.
func viewReceipts(s Store, prefix string) receiptsView {
	v := receiptsView{Newest: "-"}
	type key struct{ day, harness, worker string }
	groups := map[key]*receiptRow{}
	classes := map[key]map[string]int{}
	perDay := map[string]int{}
	var newest time.Time
	for _, r := range s.Receipts {
		if !inWindow(r.At, s.Since, s.At) {
			continue
		}
		k := key{day(r.At), r.Harness, r.Worker}
		g := groups[k]
		if g == nil {
			g = &receiptRow{Day: k.day, Harness: r.Harness, Worker: shortFP(r.Worker)}
			groups[k], classes[k] = g, map[string]int{}
		}
		g.Count++
		if r.Status != events.ReceiptStatusSuccess {
			g.Unsuccessful++
		}
		g.Results += r.Results
		classes[k][r.QueryClass]++
		perDay[k.day]++
		v.Total++
		if r.At.After(newest) {
			newest = r.At
		}
	}
	if !newest.IsZero() {
		v.Newest = stamp(newest) + " (" + age(s.At.Sub(newest)) + " before " + stamp(s.At) + ")"
	}
	for k, g := range groups {
		g.Classes = counted(classes[k])
		v.Rows = append(v.Rows, *g)
	}
	sort.Slice(v.Rows, func(i, j int) bool {
		a, b := v.Rows[i], v.Rows[j]
		return a.Day+"\x00"+a.Harness+"\x00"+a.Worker < b.Day+"\x00"+b.Harness+"\x00"+b.Worker
	})
	var stacks []stack
	for _, d := range sortedKeys(perDay) {
		stacks = append(stacks, stack{Day: d, Parts: []part{{Key: "receipts", N: perDay[d], Fill: palette["active"].Fill}}})
	}
	v.Chart = bars(stacks, prefix+"receipts-chart", fmt.Sprintf("receipts per day: %d receipts over %d days; the table beside lists them per worker", v.Total, len(stacks)))
	return v
}

// counted prints "class n, class n" sorted by class.
func counted(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// shortFP is a fingerprint's first 12 characters, as audit replay prints
// a worker.
func shortFP(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

type runsView struct {
	Chart     barChart
	Outcomes  []swatch // the run statuses and their colours
	Days      []runDay
	Total     int
	Troubled  []runRow // not succeeded, newest first
	Omitted   int
	Diagnoses string // diagnostic code counts
}

type runDay struct {
	Day    string
	Counts []int // per status, in Outcomes order
	Total  int
}

type runRow struct{ Started, Command, Harness, Status, Stage, Diagnostic string }

// viewRuns counts the runs in the window per day and outcome, and lists
// those that did not succeed with their diagnostics.
func viewRuns(s Store, prefix string) runsView {
	v := runsView{}
	idx := map[string]int{}
	for i, st := range events.RunStatuses() {
		v.Outcomes = append(v.Outcomes, swatch{st, outcomeFills[st], "#ffffff"})
		idx[st] = i
	}
	byDay := map[string][]int{}
	diags := map[string]int{}
	var troubled []Run
	for _, r := range s.Runs {
		if !inWindow(r.Started, s.Since, s.At) {
			continue
		}
		i, ok := idx[r.Status]
		if !ok {
			continue
		}
		d := day(r.Started)
		if byDay[d] == nil {
			byDay[d] = make([]int, len(v.Outcomes))
		}
		byDay[d][i]++
		v.Total++
		if r.Status != events.RunStatusSucceeded {
			troubled = append(troubled, r)
			if r.Diagnostic != "" {
				diags[r.Diagnostic]++
			}
		}
	}
	var stacks []stack
	for _, d := range sortedKeys(byDay) {
		rd := runDay{Day: d, Counts: byDay[d]}
		st := stack{Day: d}
		for i, n := range rd.Counts {
			rd.Total += n
			st.Parts = append(st.Parts, part{Key: v.Outcomes[i].Name, N: n, Fill: v.Outcomes[i].Fill})
		}
		v.Days = append(v.Days, rd)
		stacks = append(stacks, st)
	}
	v.Chart = bars(stacks, prefix+"runs-chart", fmt.Sprintf("runs per day by outcome: %d runs over %d days; the table beside counts them", v.Total, len(stacks)))
	sort.SliceStable(troubled, func(i, j int) bool { return troubled[i].Started.After(troubled[j].Started) })
	for i, r := range troubled {
		if i == maxRunRows {
			v.Omitted = len(troubled) - maxRunRows
			break
		}
		v.Troubled = append(v.Troubled, runRow{Started: stamp(r.Started), Command: r.Command, Harness: dash(r.Harness),
			Status: r.Status, Stage: dash(r.Stage), Diagnostic: dash(r.Diagnostic)})
	}
	v.Diagnoses = counted(diags)
	return v
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
