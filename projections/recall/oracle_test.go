package recall

import (
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
// direct implementation of its rules on random data: the same ids, in the
// same order, with the same scores (to rounding).
func TestRankingMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"cache", "caches", "deploy", "deployed", "stale", "rollback", "failure", "rule", "decision", "roadmap", "build", "Ünïcode", "note", "the", "a"}
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
				if got[i].Memory.ID != want[i].id || math.Abs(got[i].Score-want[i].score) > 1e-12 {
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

// bruteForce ranks recs by the rules of the search, written directly: the
// words of each record, its stems, BM25 weights over all records, the
// candidate walk (rarest list first, newest first, at most
// queryCandidates), every candidate scored.
func bruteForce(recs []memory.Record, q string, limit int) []scored {
	words := make([][]string, len(recs))
	stems := make([][]string, len(recs))
	total := 0
	for i := range recs {
		r := &recs[i]
		for _, w := range Tokenize(r.Summary + " " + r.Details + " " + strings.Join(r.Tags, " ") + " " + r.Source.Ref) {
			if slices.Contains(words[i], w) {
				continue
			}
			words[i] = append(words[i], w)
			if st := string(stem(nil, []byte(w))); st != "" && st != w {
				stems[i] = append(stems[i], st)
			}
		}
		total += len(words[i])
	}
	n := float64(len(recs))
	avg := float64(total) / n
	var toks []string
	for _, term := range Terms(q) {
		for _, t := range Tokenize(term) {
			if !slices.Contains(toks, t) && len(toks) < maxSearchTerms {
				toks = append(toks, t)
			}
		}
	}
	type key struct {
		tok int
		sub bool
		in  func(i int) bool
		df  int
	}
	var keys []key
	for ti, t := range toks {
		keys = append(keys, key{tok: ti, in: func(i int) bool { return slices.Contains(words[i], t) }})
		if st := string(stem(nil, []byte(t))); st != "" {
			keys = append(keys, key{tok: ti, sub: true, in: func(i int) bool { return slices.Contains(stems[i], st) }})
			if st != t {
				keys = append(keys, key{tok: ti, sub: true, in: func(i int) bool { return slices.Contains(words[i], st) }})
			}
		}
	}
	w, ws, subDF := make([]float64, len(toks)), make([]float64, len(toks)), make([]int, len(toks))
	weight := 0.0
	for k := range keys {
		for i := range recs {
			if keys[k].in(i) {
				keys[k].df++
			}
		}
		if keys[k].sub {
			subDF[keys[k].tok] += keys[k].df
		} else if keys[k].df > 0 {
			w[keys[k].tok] = math.Log(1 + (n-float64(keys[k].df)+0.5)/(float64(keys[k].df)+0.5))
			weight += w[keys[k].tok]
		}
	}
	for t, df := range subDF {
		if df > 0 {
			ws[t] = subWeight * math.Log(1+(n-float64(df)+0.5)/(float64(df)+0.5))
			if w[t] == 0 {
				weight += ws[t]
			}
		}
	}
	order := slices.Clone(keys)
	slices.SortStableFunc(order, func(a, b key) int { return a.df - b.df })
	var cands []int
	for _, k := range order {
		for i := len(recs) - 1; i >= 0 && k.df > 0 && len(cands) < queryCandidates; i-- {
			if k.in(i) && !slices.Contains(cands, i) {
				cands = append(cands, i)
			}
		}
	}
	fail, heart, seed := false, false, false
	for _, t := range Terms(q) {
		fail, heart, seed = fail || failureTerms[t], heart || heartwoodTerms[t], seed || seedTerms[t]
	}
	type result struct {
		scored
		textual float64
		created int64
	}
	var out []result
	for _, i := range cands {
		r := &recs[i]
		var whole, sub float64
		for t := range toks {
			switch {
			case slices.Contains(words[i], toks[t]):
				whole += w[t]
			case slices.ContainsFunc(keys, func(k key) bool { return k.tok == t && k.sub && k.in(i) }):
				sub += ws[t]
			}
		}
		textual := (whole + sub) / weight / (1 + bm25K1*(1-bm25B+bm25B*float64(len(words[i]))/avg))
		boost := 0.0
		switch {
		case r.Ring == "scar" && fail:
			boost = 0.20
		case r.Ring == "heartwood" && heart:
			boost = 0.15
		case r.Ring == "seed" && seed:
			boost = 0.12
		}
		created, _ := events.ParseMemoryTime(r.CreatedAt)
		rec := math.Exp(-float64(max(now.UnixMicro()-created.UnixMicro(), 0)) / 1e6 / 86400 / 30)
		prior := (0.25*r.Salience + 0.25*r.Confidence + 0.20*rec + 0.05*0.4 + boost) / 0.95
		out = append(out, result{scored{r.ID, textual + priorWeight*prior}, textual, created.UnixMicro()})
	}
	slices.SortFunc(out, func(a, b result) int {
		if c := byScore(a.score, nil, b.score, nil); c != 0 {
			return c
		}
		if a.textual != b.textual {
			return cmpFloat(b.textual, a.textual)
		}
		if a.created != b.created {
			return cmpFloat(float64(b.created), float64(a.created))
		}
		return strings.Compare(a.id, b.id)
	})
	var top []scored
	for _, r := range out[:min(limit, len(out))] {
		top = append(top, r.scored)
	}
	return top
}

func cmpFloat(a, b float64) int {
	if a < b {
		return -1
	}
	return 1
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

// A list too long for the candidates' blocks is probed per candidate
// (probeBlock), not read into a bitmap, and a walk stops at the candidate
// cap: the ranking must not change.
func TestProbedTokensMatchBruteForce(t *testing.T) {
	fx := newFixture(t)
	var recs []memory.Record
	n := queryCandidates * 3 / 2
	for i := 0; i < n; i++ {
		m := mem{id: fmt.Sprintf("mem_%05d", i), summary: fmt.Sprintf("common note %d", i), project: "proj",
			sal: float64(i%97+1) / 98, conf: 0.01, age: time.Duration(n-i) * time.Minute}
		switch {
		case i%7 == 0:
			m.summary += " rare"
		case i%11 == 0:
			m.summary, m.sal, m.conf, m.age = fmt.Sprintf("rare only %d", i), 1, 1, 0
		}
		recs = append(recs, fx.capture(m))
	}
	for _, c := range []struct {
		q     string
		limit int
	}{{"common rare", 1}, {"rare common note", 2}, {"note common", 3}, {"notes commons", 5}} {
		q := c.q
		got := fx.recall(q, Filter{Limit: c.limit})
		want := bruteForce(recs, q, c.limit)
		if len(got) != len(want) {
			t.Fatalf("%q: %d results, want %d", q, len(got), len(want))
		}
		for i := range got {
			if got[i].Memory.ID != want[i].id || math.Abs(got[i].Score-want[i].score) > 1e-12 {
				t.Fatalf("%q #%d: got %s %v, want %s %v", q, i, got[i].Memory.ID, got[i].Score, want[i].id, want[i].score)
			}
		}
	}
}
