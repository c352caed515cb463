package recall

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
)

// fullEntry is a decoded 's' entry as the full scan kept it.
type fullEntry struct {
	class, ring, auth, flags byte
	sal, conf                float64
	created, expires         int64
	doc                      uint32
	id                       []byte
}

// fullBefore is the published order, as the full scan compared entries.
func fullBefore(a, b *fullEntry) bool {
	switch {
	case a.class != b.class:
		return a.class < b.class
	case a.sal != b.sal:
		return a.sal > b.sal
	case a.conf != b.conf:
		return a.conf > b.conf
	case a.created != b.created:
		return a.created > b.created
	}
	return string(a.id) < string(b.id)
}

// fullStartCandidates and fullStartupRecall are the startup ranking as it
// was before the early stop: every group's list read up to the candidate
// limit, a k-way merge, every candidate scored. They are the reference of
// TestStartupEarlyStopIsFullScan.
func (q *searcher) fullStartCandidates(limitC int, nowUS int64) ([]fullEntry, error) {
	lists := make([][]fullEntry, len(q.f.groups))
	for gi, g := range q.f.groups {
		var list []fullEntry
		err := q.kv.ForEach(q.s.prefix(pStart, g), func(k, v []byte) error {
			if len(k) <= startFixed || len(v) != startValueLen {
				return errors.New("recall: malformed startup entry")
			}
			e := fullEntry{
				class: k[9], flags: v[5], ring: v[6], auth: v[4], doc: binary.BigEndian.Uint32(v),
				sal:     math.Float64frombits(^binary.BigEndian.Uint64(k[10:])),
				conf:    math.Float64frombits(^binary.BigEndian.Uint64(k[18:])),
				created: int64(^binary.BigEndian.Uint64(k[26:]) ^ 1<<63),
				expires: int64(binary.BigEndian.Uint64(v[7:])),
				id:      slices.Clone(k[startFixed:]),
			}
			if e.flags&fExpires != 0 && e.expires <= nowUS {
				return nil
			}
			list = append(list, e)
			if len(list) == limitC {
				return errStop
			}
			return nil
		})
		lists[gi] = list
		if err != nil && err != errStop {
			return nil, err
		}
	}
	var out []fullEntry
	pos := make([]int, len(lists))
	for len(out) < limitC {
		best := -1
		for i, l := range lists {
			if pos[i] < len(l) && (best < 0 || fullBefore(&l[pos[i]], &lists[best][pos[best]])) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		out = append(out, lists[best][pos[best]])
		pos[best]++
	}
	return out, nil
}

func (q *searcher) fullStartupRecall(bodies Bodies, s Scope, limit int, now time.Time) ([]ranked, error) {
	nowUS := now.UnixMicro()
	cands, err := q.fullStartCandidates(candidateCap(limit), nowUS)
	if err != nil {
		return nil, err
	}
	var excluded map[uint32]bool
	top := make([]ranked, 0, limit)
	for {
		top = top[:0]
		for i := range cands {
			e := &cands[i]
			if excluded[e.doc] {
				continue
			}
			f := factors{textual: 0.1, sal: e.sal, conf: e.conf, recency: recency(e.created, nowUS), auth: authorityValue(e.auth)}
			switch e.ring {
			case ringScar:
				f.startBonus = 0.20
			case ringHeartwood:
				f.startBonus = 0.15
			}
			sc := f.score()
			if !beats(top, limit, sc, e.id) {
				continue
			}
			top = insertTop(top, ranked{doc: e.doc, id: e.id, score: sc, fact: f}, limit)
		}
		ok, err := q.confirmTop(bodies, top, s.visible, &excluded)
		if err != nil || ok {
			return top, err
		}
	}
}

// startupCase is a random startup dataset: memories of two projects in
// every kind of visibility group, with salience and confidence on a
// coarse grid (ties in every key field, -0 included), every ring and
// source type, creation times in the past and the future, expiries around
// the query's now, some superseded, redacted or sensitive.
type startupCase struct {
	fx   *fixture
	nows []time.Time
}

func newStartupCase(t *testing.T, seed uint64, n int) *startupCase {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	fx := newFixture(t)
	units := []float64{math.Copysign(0, -1), 0, 0.001, 0.25, 0.5, 0.5, 0.7, 0.7, 0.99, 1}
	sources := []string{"user", "contract", "eval", "file", "tool", "summary", "manual", "agent"}
	var live []string
	for i := range n {
		created := now.Add(time.Duration(rng.IntN(24*120)-24*10) * time.Hour) // up to ten days ahead
		r := memory.NewRecord(fmt.Sprintf("mem_%05d_%d", rng.IntN(n), i), fmt.Sprintf("note %d of set %d", i, rng.IntN(5)), "lesson", created)
		r.Project = memory.Str([]string{"proj", "proj", "proj", "alias", "other"}[rng.IntN(5)])
		switch rng.IntN(8) {
		case 0:
			r.Scope, r.AgentProfile = "agent", memory.Str([]string{"claude-code", "codex"}[rng.IntN(2)])
		case 1:
			r.Scope, r.WorkflowID = "workflow", memory.Str([]string{"wf1", "wf2"}[rng.IntN(2)])
		case 2:
			r.Scope, r.SessionID = "session", memory.Str([]string{"s1", "s2"}[rng.IntN(2)])
		case 3:
			r.Scope = "global"
		}
		r.Ring = events.MemoryRings[rng.IntN(len(events.MemoryRings))]
		r.Source.Type = sources[rng.IntN(len(sources))]
		r.Salience, r.Confidence = units[rng.IntN(len(units))], units[rng.IntN(len(units))]
		if rng.IntN(4) == 0 {
			exp := now.Add(time.Duration(rng.IntN(48)-24) * time.Hour)
			r.ExpiresAt = memory.Str(events.FormatMemoryTime(exp))
		}
		if rng.IntN(20) == 0 {
			r.Sensitivity = memory.SensitivitySecret
		}
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
		p, body := r.Split(events.OriginRemember, "nonce")
		if rng.IntN(10) == 0 {
			// -0 passes the event's validation (an imported ledger may
			// hold it); Record.Validate normalizes it away.
			p.Salience = math.Copysign(0, -1)
		}
		fx.bodies[p.BodySHA256] = body
		fx.apply(events.MemoryStream(r.ID), events.TypeMemoryCaptured, &p)
		live = append(live, r.ID)
	}
	for range n / 20 {
		id := live[rng.IntN(len(live))]
		switch rng.IntN(3) {
		case 0:
			if by := live[rng.IntN(len(live))]; by != id {
				fx.supersede(id, by)
			}
		case 1:
			if BodyDigest(fx.kv, id) != "" {
				fx.forget(id, events.ForgetRedact)
			}
		default:
			if BodyDigest(fx.kv, id) != "" {
				fx.forget(id, events.ForgetDelete)
			}
		}
	}
	c := &startupCase{fx: fx, nows: []time.Time{now}}
	for range 3 {
		c.nows = append(c.nows, now.Add(time.Duration(rng.Int64N(int64(200*24*time.Hour)))-20*24*time.Hour))
	}
	return c
}

// check compares the early-stopping ranking with the full scan, and the
// rendered brief with one rendered from the full scan, for every scope,
// limit and now of the case.
func (c *startupCase) check(t *testing.T) {
	t.Helper()
	scopes := []Scope{
		me, {Project: "proj", ProjectAlias: "alias", AgentProfile: "codex", WorkflowID: "wf2", SessionID: "s2"},
		{Project: "proj"}, {ProjectAlias: "other", SessionID: "s1"}, {Project: "nobody"},
	}
	for _, sc := range scopes {
		for _, limit := range []int{1, 2, 3, 8} {
			for _, at := range c.nows {
				c.candidates(t, sc, candidateCap(limit), at)
				got, gotText := c.rank(t, sc, limit, at, false)
				want, wantText := c.rank(t, sc, limit, at, true)
				if !slices.EqualFunc(got, want, func(a, b ranked) bool {
					return a.doc == b.doc && string(a.id) == string(b.id) && math.Float64bits(a.score) == math.Float64bits(b.score)
				}) || gotText != wantText {
					t.Fatalf("scope %+v limit %d now %v:\n got %v\nwant %v", sc, limit, at, rankedIDs(got), rankedIDs(want))
				}
			}
		}
	}
}

// candidates compares the candidates that startSources places (the
// first limit entries of its lazy runs, and its exact entries) with the
// full merge's.
func (c *startupCase) candidates(t *testing.T, sc Scope, limitC int, at time.Time) {
	t.Helper()
	s := getScratch()
	defer s.release()
	f := filter{groups: sc.groups(), now: at.UnixMicro()}
	q := &searcher{ctx: context.Background(), kv: c.fx.kv, s: s, f: &f}
	runs, exact, err := q.startSources(limitC, at.UnixMicro())
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(exact)
	for _, run := range runs {
		n := 0
		err := q.kv.ForEach(run.prefix[:], func(k, v []byte) error {
			if n == run.limit {
				return errStop
			}
			n++
			e, ok, err := s.start.entry(k, v, at.UnixMicro())
			if !ok {
				t.Fatalf("a lazy run holds an entry expired at %v", at)
			}
			got = append(got, e)
			return err
		})
		if err != nil && err != errStop {
			t.Fatal(err)
		}
	}
	slices.SortFunc(got, func(a, b startEntry) int {
		if startBefore(&a, &b, s.start.ids) {
			return -1
		}
		return 1
	})
	want, err := q.fullStartCandidates(limitC, at.UnixMicro())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, func(a startEntry, b fullEntry) bool {
		return a.doc == b.doc && string(a.idIn(s.start.ids)) == string(b.id)
	}) {
		t.Fatalf("scope %+v cap %d now %v: %d candidates, want %d", sc, limitC, at, len(got), len(want))
	}
}

func (c *startupCase) rank(t *testing.T, sc Scope, limit int, at time.Time, full bool) ([]ranked, string) {
	t.Helper()
	s := getScratch()
	defer s.release()
	f := filter{groups: sc.groups(), now: at.UnixMicro()}
	q := &searcher{ctx: context.Background(), kv: c.fx.kv, s: s, f: &f}
	if len(f.groups) == 0 {
		return nil, ""
	}
	rank := q.startupRecall
	if full {
		rank = q.fullStartupRecall
	}
	top, err := rank(c.fx.bodies, sc, limit, at)
	if err != nil {
		t.Fatal(err)
	}
	var w briefWriter
	for i := range top {
		if err := w.add(&top[i]); err != nil {
			t.Fatal(err)
		}
	}
	text, err := w.text()
	if err != nil {
		t.Fatal(err)
	}
	out := slices.Clone(top)
	for i := range out {
		out[i].id = slices.Clone(out[i].id) // the scratch is reused
	}
	return out, text
}

func rankedIDs(rs []ranked) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %v", r.id, r.score))
	}
	return out
}

// TestStartupEarlyStopIsFullScan: the startup ranking that reads only the
// candidates it can use and stops on its bound gives the full scan's ids,
// order and bit-identical scores, and the same rendered text, on random
// datasets larger and smaller than the candidate limit (256 for limits 1
// and 2, 384 for 3, 1,024 for 8), at several nows.
func TestStartupEarlyStopIsFullScan(t *testing.T) {
	for seed, n := range []int{40, 120, 300, 700, 1500} {
		newStartupCase(t, uint64(seed), n).check(t)
	}
}

// FuzzStartupEarlyStop runs the same comparison on datasets drawn from the
// fuzzer's seed and size.
func FuzzStartupEarlyStop(f *testing.F) {
	f.Add(uint64(7), uint16(300))
	f.Add(uint64(11), uint16(40))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16) {
		newStartupCase(t, seed, int(n%800)).check(t)
	})
}

// startupFixture captures n memories of project proj made by make_, one
// minute apart (the first the oldest).
func startupFixture(t *testing.T, n int, make_ func(i int, r *memory.Record)) *fixture {
	fx := newFixture(t)
	for i := range n {
		r := memory.NewRecord(fmt.Sprintf("mem_%05d", i), fmt.Sprintf("note %d", i), "lesson", now.Add(-time.Duration(n-i)*time.Minute))
		r.Project = memory.Str("proj")
		make_(i, &r)
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
		p, body := r.Split(events.OriginRemember, "nonce")
		fx.bodies[p.BodySHA256] = body
		fx.apply(events.MemoryStream(r.ID), events.TypeMemoryCaptured, &p)
	}
	return fx
}

// startupBoth ranks the startup brief of scope proj both ways, fails when
// they differ, and returns the ranking and the entries it read.
func startupBoth(t *testing.T, fx *fixture, limit int) ([]ranked, int) {
	t.Helper()
	c := &startupCase{fx: fx}
	sc := Scope{Project: "proj"}
	got, gotText := c.rank(t, sc, limit, now, false)
	want, wantText := c.rank(t, sc, limit, now, true)
	if !slices.EqualFunc(got, want, func(a, b ranked) bool {
		return a.doc == b.doc && math.Float64bits(a.score) == math.Float64bits(b.score)
	}) || gotText != wantText {
		t.Fatalf("got %v\nwant %v", rankedIDs(got), rankedIDs(want))
	}
	s := getScratch()
	defer s.release()
	f := filter{groups: sc.groups(), now: now.UnixMicro()}
	q := &searcher{ctx: context.Background(), kv: fx.kv, s: s, f: &f}
	if _, err := q.startupRecall(fx.bodies, sc, limit, now); err != nil {
		t.Fatal(err)
	}
	return got, s.start.read
}

// TestStartupRunBoundUsesItsLargestAuthority: in a run (one ring, salience
// and confidence) the newest entries come first, but an older one with a
// larger source authority scores higher; the walk must not stop before it.
func TestStartupRunBoundUsesItsLargestAuthority(t *testing.T) {
	fx := startupFixture(t, 20, func(i int, r *memory.Record) {
		r.Source.Type = "manual"
		if i == 0 {
			r.Source.Type = "user"
		}
	})
	top, _ := startupBoth(t, fx, 1)
	if len(top) != 1 || string(top[0].id) != "mem_00000" {
		t.Fatalf("top %v, want the oldest (source user)", rankedIDs(top))
	}
}

// TestStartupReadsOnlyTheRunsItNeeds: 3,000 memories in 100 saliences, a
// scar every 50th (the recall benchmark's shape): the brief reads its top
// from the best run and stops, where a read of the candidates took 1,024
// entries.
func TestStartupReadsOnlyTheRunsItNeeds(t *testing.T) {
	fx := startupFixture(t, 3000, func(i int, r *memory.Record) {
		r.Salience = float64(i%100) / 100
		if i%50 == 0 {
			r.Ring = "scar"
		}
	})
	top, read := startupBoth(t, fx, 8)
	if len(top) != 8 || read > 16 {
		t.Fatalf("%d results, %d entries read", len(top), read)
	}
}
