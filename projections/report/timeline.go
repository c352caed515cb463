package report

import (
	"fmt"
	"strconv"
	"time"

	"github.com/tree-ring/tree-ring/fsm"
)

// The timeline of one harness: a band per stretch of time it rested in one
// state, coloured by the state, and a mark at each change naming the event
// position and the time.

const (
	chartWidth = 960.0
	// minBand is the narrowest band: widths follow time, but a state held
	// for a second among months stays visible and labelled.
	minBand  = 72.0
	bandTop  = 8.0
	bandH    = 34.0
	chartH   = 80
	labelMin = 44.0 // a mark's labels are drawn when its band is this wide
)

type harnessView struct {
	Anchor, ID, Name, State, Next string
	Swatch                        swatch
	Events, Later                 int
	Chart                         timelineChart
	Changes                       []changeRow
}

type timelineChart struct {
	TitleID, Title string
	Width, Height  int
	Bands          []band
	Marks          []mark
}

type band struct {
	X, W, TextX, TextY string
	Swatch             swatch
	Label, Title       string
}

type mark struct {
	X, TextX      string
	Pos, Time     string
	ShowLabel     bool
	Title         string
	TopY, BottomY string
}

type changeRow struct {
	Position, Time, Event, Transition, Reason string
	From, To                                  swatch
}

// segment is one stretch of a state.
type segment struct {
	state    string
	from, to time.Time
	step     *Step // the change that began it; nil for the first
}

// segmentsOf cuts [start, end] at every state change of h (a step whose
// To differs from its From). The first segment holds the state reached
// before start.
func segmentsOf(h Harness, start, end time.Time) []segment {
	cur := string(fsm.Initial)
	i := 0
	for ; i < len(h.Steps) && h.Steps[i].At.Before(start); i++ {
		cur = h.Steps[i].To
	}
	segs := []segment{{state: cur, from: start}}
	for ; i < len(h.Steps); i++ {
		s := &h.Steps[i]
		if s.At.After(end) {
			break
		}
		if s.To == s.From {
			continue
		}
		segs[len(segs)-1].to = s.At
		segs = append(segs, segment{state: s.To, from: s.At, step: s})
	}
	segs[len(segs)-1].to = end
	return segs
}

// widths share chartWidth between the segments in proportion to their
// durations, above a floor of minBand (less when there are many).
func widths(segs []segment) []float64 {
	n := float64(len(segs))
	floor := min(minBand, chartWidth/n)
	var total time.Duration
	for _, s := range segs {
		total += max(0, s.to.Sub(s.from))
	}
	rest := chartWidth - floor*n
	out := make([]float64, len(segs))
	for i, s := range segs {
		share := 1 / n
		if total > 0 {
			share = float64(max(0, s.to.Sub(s.from))) / float64(total)
		}
		out[i] = floor + rest*share
	}
	return out
}

// clock prints a mark's time: the time of day, with the date when the
// window spans more than a day.
func clock(t time.Time, long bool) string {
	if long {
		return t.UTC().Format("01-02 15:04")
	}
	return t.UTC().Format(time.TimeOnly)
}

func viewHarness(h Harness, prefix string, start, end time.Time) harnessView {
	anchor := prefix + "h-" + h.ID
	v := harnessView{Anchor: anchor, ID: h.ID, Name: h.Name, State: h.State, Next: h.Next, Swatch: swatchOf(h.State),
		Events: h.Events, Later: h.Later}
	segs := segmentsOf(h, start, end)
	ws := widths(segs)
	long := end.Sub(start) > 24*time.Hour
	c := timelineChart{TitleID: anchor + "-chart", Width: int(chartWidth), Height: chartH,
		Title: fmt.Sprintf("%s: states from %s to %s, %d changes; the table beside lists them", h.ID, stamp(start), stamp(end), len(segs)-1)}
	x := 0.0
	for i, s := range segs {
		sw := swatchOf(s.state)
		b := band{X: px(x), W: px(ws[i]), TextX: px(x + 4), TextY: px(bandTop + bandH/2 + 4), Swatch: sw,
			Title: fmt.Sprintf("%s from %s to %s", s.state, stamp(s.from), stamp(s.to))}
		// About 6.2 px a character at the band's 11 px font.
		if float64(len(s.state))*6.2+8 <= ws[i] {
			b.Label = s.state
		}
		c.Bands = append(c.Bands, b)
		if s.step != nil {
			c.Marks = append(c.Marks, markOf(s.step, x, ws[i], long))
			v.Changes = append(v.Changes, changeOf(s.step))
		}
		x += ws[i]
	}
	v.Chart = c
	return v
}

func markOf(s *Step, x, w float64, long bool) mark {
	pos := "derived"
	if !s.Derived {
		pos = "#" + strconv.FormatUint(s.Position, 10)
	}
	return mark{X: px(x), TextX: px(x + 3), Pos: pos, Time: clock(s.At, long), ShowLabel: w >= labelMin,
		TopY: px(bandTop - 4), BottomY: px(bandTop + bandH + 4),
		Title: fmt.Sprintf("%s at %s: %s to %s", pos, stamp(s.At), s.From, s.To)}
}

func changeOf(s *Step) changeRow {
	r := changeRow{Position: "derived", Time: stamp(s.At), Event: "(expiry)", Transition: s.Transition, Reason: s.Reason,
		From: swatchOf(s.From), To: swatchOf(s.To)}
	if !s.Derived {
		r.Position, r.Event = strconv.FormatUint(s.Position, 10), s.Type
	}
	return r
}
