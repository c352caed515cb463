package recall

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
)

// benchFixture is a small version of the recall benchmark
// (projections/recall/recallbench/bench.py --fixture): 300 memories (standard-library
// docstrings and Debian package synopses) and 120 queries, each labeled
// with the memory its words were drawn from.
type benchFixture struct {
	Memories []struct {
		ID, Summary, Details, Ref string
		Tags                      []string
		AgeMinutes                int `json:"age_minutes"`
	}
	Queries []struct{ Target, Keywords, Prompt string }
}

func loadBenchFixture(t *testing.T) benchFixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "recallbench.json"))
	if err != nil {
		t.Fatal(err)
	}
	var b benchFixture
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

// index folds the fixture's memories, created at now or, dated, their
// age before it.
func (b *benchFixture) index(t *testing.T, dated bool) *fixture {
	fx := newFixture(t)
	for _, m := range b.Memories {
		created := now
		if dated {
			created = now.Add(-time.Duration(m.AgeMinutes) * time.Minute)
		}
		r := memory.NewRecord(m.ID, m.Summary, "lesson", created)
		r.Details, r.Tags, r.Source.Ref, r.Project = m.Details, m.Tags, m.Ref, memory.Str("bench")
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
		p, body := r.Split(events.OriginImport, m.ID)
		fx.bodies[p.BodySHA256] = body
		fx.apply(events.MemoryStream(r.ID), events.TypeMemoryCaptured, &p)
	}
	return fx
}

// bm25 is the baseline: Okapi BM25 (k1 1.5, b 0.75) over the same text
// and index tokens, term frequencies counted; ties by id.
type bm25 struct {
	ids   []string
	tf    []map[string]int
	lens  []int
	df    map[string]int
	avgdl float64
}

func newBM25(b *benchFixture) *bm25 {
	x := &bm25{df: map[string]int{}}
	total := 0
	for _, m := range b.Memories {
		toks := Tokenize(m.Summary + " " + m.Details + " " + strings.Join(m.Tags, " ") + " " + m.Ref)
		tf := map[string]int{}
		for _, t := range toks {
			tf[t]++
		}
		for t := range tf {
			x.df[t]++
		}
		x.ids, x.tf, x.lens = append(x.ids, m.ID), append(x.tf, tf), append(x.lens, len(toks))
		total += len(toks)
	}
	x.avgdl = float64(total) / float64(len(x.ids))
	return x
}

func (x *bm25) rank(q string, k int) []string {
	var toks []string
	for _, t := range Tokenize(q) {
		if !slices.Contains(toks, t) {
			toks = append(toks, t)
		}
	}
	n := float64(len(x.ids))
	type hit struct {
		i     int
		score float64
	}
	var hits []hit
	for i, tf := range x.tf {
		s := 0.0
		for _, t := range toks {
			if f := float64(tf[t]); f > 0 {
				df := float64(x.df[t])
				s += math.Log(1+(n-df+0.5)/(df+0.5)) * f * 2.5 / (f + 1.5*(0.25+0.75*float64(x.lens[i])/x.avgdl))
			}
		}
		if s > 0 {
			hits = append(hits, hit{i, s})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.score != b.score {
			return cmpFloat(b.score, a.score)
		}
		return strings.Compare(x.ids[a.i], x.ids[b.i])
	})
	var out []string
	for _, h := range hits[:min(k, len(hits))] {
		out = append(out, x.ids[h.i])
	}
	return out
}

// quality is R@5 and nDCG@10 (one relevant memory per query).
type quality struct{ r5, ndcg float64 }

func (q *quality) add(ranking []string, target string, n int) {
	if i := slices.Index(ranking, target); i >= 0 && i < 10 {
		if i < 5 {
			q.r5 += 1 / float64(n)
		}
		q.ndcg += 1 / math.Log2(float64(i+2)) / float64(n)
	}
}

// TestRecallBeatsBM25 guards the ranking's quality: on every query style
// of the benchmark's small fixture, tree-ring's R@5 and nDCG@10 are at
// least BM25's. (The full benchmark, with SQLite FTS5 baselines and
// intervals, is projections/recall/recallbench; docs/memory.md has its figures.)
func TestRecallBeatsBM25(t *testing.T) {
	b := loadBenchFixture(t)
	base := newBM25(&b)
	for _, style := range []struct {
		name   string
		dated  bool
		prompt bool
	}{{"keywords", false, false}, {"keywords-dated", true, false}, {"prompt", false, true}} {
		fx := b.index(t, style.dated)
		var tr, bm quality
		for _, q := range b.Queries {
			text := q.Keywords
			if style.prompt {
				text = q.Prompt
			}
			n := len(b.Queries)
			tr.add(ids(fx.recall(text, Filter{Project: "bench", Limit: 10})), q.Target, n)
			bm.add(base.rank(text, 10), q.Target, n)
		}
		t.Logf("%s: tree-ring R@5 %.3f nDCG@10 %.3f; BM25 R@5 %.3f nDCG@10 %.3f", style.name, tr.r5, tr.ndcg, bm.r5, bm.ndcg)
		if tr.r5 < bm.r5 || tr.ndcg < bm.ndcg {
			t.Errorf("%s: tree-ring R@5 %.3f nDCG@10 %.3f below BM25's %.3f %.3f", style.name, tr.r5, tr.ndcg, bm.r5, bm.ndcg)
		}
	}
}
