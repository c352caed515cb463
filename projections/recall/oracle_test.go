package recall

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
)

// TestRankingMatchesBruteForce checks the lazy, bounded ranking against a
// direct implementation of the published rules on random data: the same
// ids, in the same order, with bit-identical scores.
func TestRankingMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"cache", "deploy", "stale", "rollback", "failure", "rule", "decision", "roadmap", "build", "Ünïcode", "note", "the", "a"}
	rings := events.MemoryRings
	for round := 0; round < 20; round++ {
		fx := newFixture(t)
		var recs []memory.Record
		for i := 0; i < 120; i++ {
			var sb []string
			for j := 0; j < 2+rng.IntN(5); j++ {
				sb = append(sb, words[rng.IntN(len(words))])
			}
			m := mem{
				id: fmt.Sprintf("mem_%03d_%d", rng.IntN(50), i), summary: strings.Join(sb, " "), project: "proj",
				ring: rings[rng.IntN(len(rings))], sal: float64(rng.IntN(101)) / 100, conf: float64(rng.IntN(101)) / 100,
				age: time.Duration(rng.IntN(90*24)) * time.Hour,
			}
			if m.sal == 0 {
				m.sal = 0.001
			}
			if m.conf == 0 {
				m.conf = 0.001
			}
			if rng.IntN(4) == 0 {
				m.tags = []string{words[rng.IntN(len(words))]}
			}
			recs = append(recs, fx.capture(m)) // source type manual: authority 0.4
		}
		for qn := 0; qn < 15; qn++ {
			var qw []string
			for j := 0; j < 1+rng.IntN(3); j++ {
				qw = append(qw, words[rng.IntN(len(words))])
			}
			q := strings.Join(qw, " ")
			limit := 1 + rng.IntN(10)
			got := fx.recall(q, Filter{Limit: limit})
			want := bruteForce(recs, q, limit)
			if len(got) != len(want) {
				t.Fatalf("round %d %q: %d results, want %d", round, q, len(got), len(want))
			}
			for i := range got {
				if got[i].Memory.ID != want[i].id || got[i].Score != want[i].score {
					t.Fatalf("round %d %q #%d: got %s %v, want %s %v", round, q, i, got[i].Memory.ID, got[i].Score, want[i].id, want[i].score)
				}
			}
		}
		// Startup brief: all visible (shared scope of proj).
		c := fx.brief(BriefQuery{Scope: me, Limit: 8})
		want := bruteStartup(recs, 8)
		if !slices.Equal(c.MemoryIDs, want) {
			t.Fatalf("round %d startup: got %v want %v", round, c.MemoryIDs, want)
		}
	}
}

type scored struct {
	id    string
	score float64
}

func oracleScore(r *memory.Record, terms []string, textualV float64, boost float64) float64 {
	created, _ := events.ParseMemoryTime(r.CreatedAt)
	age := float64(max(now.UnixMicro()-created.UnixMicro(), 0)) / 1e6
	rec := math.Exp(-age / 86400 / 30)
	auth := 0.4 // manual
	return 0.25*textualV + 0.25*r.Salience + 0.25*r.Confidence + 0.20*rec + 0.05*auth + boost
}

func bruteForce(recs []memory.Record, q string, limit int) []scored {
	terms := Terms(q)
	if len(terms) == 0 {
		return nil
	}
	var search []string
	for _, t := range terms {
		if !fillerWords[t] && !slices.Contains(search, t) {
			search = append(search, t)
		}
	}
	tokensOf := func(r *memory.Record) []string {
		return Tokenize(r.Summary + " " + r.Details + " " + strings.Join(r.Tags, " ") + " " + r.Source.Ref)
	}
	matchAll := func(r *memory.Record, ts []string) bool {
		toks := tokensOf(r)
		for _, t := range ts {
			for _, tok := range Tokenize(t) {
				if !slices.Contains(toks, tok) {
					return false
				}
			}
		}
		return true
	}
	var sets [][]string
	if len(search) > 0 {
		sets = append(sets, search)
	}
	for _, t := range search {
		if isIntent(t) {
			var v []string
			for _, u := range search {
				if u != t {
					v = append(v, u)
				}
			}
			if len(v) > 0 {
				sets = append(sets, v)
			}
		}
	}
	var cands []*memory.Record
	for _, s := range sets {
		for i := range recs {
			if matchAll(&recs[i], s) {
				cands = append(cands, &recs[i])
			}
		}
		if len(cands) > 0 {
			break
		}
	}
	if len(cands) == 0 {
		for i := range recs {
			for _, t := range search {
				if matchAll(&recs[i], []string{t}) {
					cands = append(cands, &recs[i])
					break
				}
			}
		}
	}
	fail, heart, seed := false, false, false
	for _, t := range terms {
		fail, heart, seed = fail || failureTerms[t], heart || heartwoodTerms[t], seed || seedTerms[t]
	}
	var out []scored
	for _, r := range cands {
		text := strings.ToLower(r.Summary + " " + r.Details + " " + strings.Join(r.Tags, " "))
		n := 0
		for _, t := range terms {
			if strings.Contains(text, t) {
				n++
			}
		}
		boost := 0.0
		switch {
		case r.Ring == "scar" && fail:
			boost = 0.20
		case r.Ring == "heartwood" && heart:
			boost = 0.15
		case r.Ring == "seed" && seed:
			boost = 0.12
		}
		out = append(out, scored{r.ID, oracleScore(r, terms, float64(n)/float64(len(terms)), boost)})
	}
	slices.SortFunc(out, func(a, b scored) int { return byScore(a.score, []byte(a.id), b.score, []byte(b.id)) })
	return out[:min(limit, len(out))]
}

func bruteStartup(recs []memory.Record, limit int) []string {
	var out []scored
	for i := range recs {
		r := &recs[i]
		s := oracleScore(r, nil, 0.1, 0)
		switch r.Ring {
		case "scar":
			s += 0.20
		case "heartwood":
			s += 0.15
		}
		out = append(out, scored{r.ID, s})
	}
	slices.SortFunc(out, func(a, b scored) int { return byScore(a.score, []byte(a.id), b.score, []byte(b.id)) })
	var ids []string
	for _, s := range out[:min(limit, len(out))] {
		ids = append(ids, s.id)
	}
	return ids
}

// A token in more memories than bitmapMax is checked in its posting blocks
// (probeBlock), not read into a bitmap: the ranking must not change.
func TestProbedTokensMatchBruteForce(t *testing.T) {
	fx := newFixture(t)
	var recs []memory.Record
	// Limits 1 and 2 have the smallest candidate cap (256), so the
	// smallest bitmap bound.
	n := int(bitmapMax(candidateCap(1))) * 5 / 4
	for i := 0; i < n; i++ {
		m := mem{id: fmt.Sprintf("mem_%05d", i), summary: fmt.Sprintf("common note %d", i), project: "proj",
			sal: float64(i%97+1) / 98, conf: 0.01, age: time.Duration(n-i) * time.Minute}
		switch {
		case i%7 == 0:
			m.summary += " rare"
		case i%11 == 0: // would win if the AND let them in
			m.summary, m.sal, m.conf, m.age = fmt.Sprintf("rare only %d", i), 1, 1, 0
		}
		recs = append(recs, fx.capture(m))
	}
	if c := fx.kv.Get(key(pCount, u64b(tokenHash("common")))); binary.BigEndian.Uint32(c) <= bitmapMax(candidateCap(2)) {
		t.Fatal("common is not probed")
	}
	for _, c := range []struct {
		q     string
		limit int
	}{{"common rare", 1}, {"rare common note", 2}, {"note common", 2}} {
		q := c.q
		got := fx.recall(q, Filter{Limit: c.limit})
		want := bruteForce(recs, q, c.limit)
		if len(got) != len(want) {
			t.Fatalf("%q: %d results, want %d", q, len(got), len(want))
		}
		for i := range got {
			if got[i].Memory.ID != want[i].id || got[i].Score != want[i].score {
				t.Fatalf("%q #%d: got %s %v, want %s %v", q, i, got[i].Memory.ID, got[i].Score, want[i].id, want[i].score)
			}
		}
	}
}
