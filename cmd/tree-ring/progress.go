package main

import (
	"cmp"
	"fmt"
	"io"
	"time"
)

// progress shows how far long work (audit verify, projections rebuild,
// import, events import) has come, on stderr and only when stderr is a
// terminal: a pipe, a log file or a script never sees it, and stdout
// carries only the result. It redraws one line at most once a second or
// every tenth of the work, and ends it with a newline.
type progress struct {
	w        io.Writer
	now      func() time.Time
	what     string // "verified", "rebuilt", "imported"
	unit     string // "events" (none: events), "memories"
	last     time.Time
	lastTen  uint64 // tenths shown so far
	drawn    bool
	finished bool
}

// newProgress is the progress of work over events, what says what is
// done to them (nil, which shows nothing, unless stderr is a terminal).
func (g *Globals) newProgress(what string) *progress { return g.newProgressOf(what, "events") }

// newProgressOf is newProgress for work over units other than events.
func (g *Globals) newProgressOf(what, unit string) *progress {
	if !g.StderrTerminal {
		return nil
	}
	return &progress{w: g.Stderr, now: g.Now, what: what, unit: unit}
}

// update records done of total units.
func (p *progress) update(done, total uint64) {
	if p == nil || total == 0 {
		return
	}
	now, ten := p.now(), done*10/total
	if p.drawn && done < total && ten == p.lastTen && now.Sub(p.last) < time.Second {
		return
	}
	p.last, p.lastTen, p.drawn = now, ten, true
	fmt.Fprintf(p.w, "\r%s %d/%d %s (%d%%)", p.what, done, total, cmp.Or(p.unit, "events"), done*100/total)
}

// end finishes the line, if one was drawn.
func (p *progress) end() {
	if p == nil || !p.drawn || p.finished {
		return
	}
	p.finished = true
	fmt.Fprintln(p.w)
}
