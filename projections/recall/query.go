package recall

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tree-ring/tree-ring/events"
)

// DefaultLimit is the published default number of results.
const DefaultLimit = 8

// MaxLimit bounds an explicit recall's --limit.
const MaxLimit = 1000

// candidateCap is the published candidate limit, clamp(limit×128, 256, 2048).
func candidateCap(limit int) int { return min(max(limit*128, 256), 2048) }

// Filter is the exact, conjunctive filter of an explicit recall (empty
// fields match anything), as published for `tree-ring recall`.
type Filter struct {
	Project, AgentProfile, WorkflowID, SessionID, Scope string
	IncludeSensitive                                    bool
	Limit                                               int // 0 means DefaultLimit
	Explain                                             bool
}

// Result is one recalled memory.
type Result struct {
	Memory events.MemoryRecord `json:"memory"`
	Score  float64             `json:"score"`
	// Ranking holds the factors when explain is on: textual_match,
	// salience, confidence, recency, source_authority, ring_boost.
	Ranking map[string]float64 `json:"ranking"`
}

// errStop ends a ForEach early.
var errStop = errors.New("stop")

// candidate is a memory that passed every filter.
type candidate struct {
	doc   uint32
	h     hot
	bound float64 // score with textual = 1: an upper bound
	score float64
	fact  factors
}

// acceptFunc decides from a posting value (flags, group) and, when it must,
// the hot record whether a doc passes the filters. It returns the hot
// record when it read it.
type acceptFunc func(doc uint32, pv []byte) (hot, bool, error)

// counts caches posting counts during one query.
type counts struct {
	kv KV
	m  map[uint64]uint32
}

func (c *counts) get(tok uint64) uint32 {
	if n, ok := c.m[tok]; ok {
		return n
	}
	var n uint32
	if v := c.kv.Get(key(pCount, u64b(tok))); len(v) == 4 {
		n = binary.BigEndian.Uint32(v)
	}
	c.m[tok] = n
	return n
}

// andCandidates returns up to limit docs holding every token and passing
// accept, newest first. It walks the rarest token's postings and probes the
// others, so its cost follows the rarest list, not the index.
func andCandidates(ctx context.Context, kv KV, cn *counts, toks []uint64, limit int, accept acceptFunc) ([]candidate, error) {
	if len(toks) == 0 {
		return nil, nil
	}
	rare := toks[0]
	for _, t := range toks {
		n := cn.get(t)
		if n == 0 {
			return nil, nil
		}
		if n < cn.get(rare) {
			rare = t
		}
	}
	var out []candidate
	probe := make([]byte, 13)
	probe[0] = pPost
	seen := 0
	err := kv.ForEach(key(pPost, u64b(rare)), func(k, v []byte) error {
		if seen++; seen&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if len(k) != 13 || len(v) != 9 {
			return fmt.Errorf("recall: malformed posting")
		}
		doc := ^binary.BigEndian.Uint32(k[9:])
		for _, t := range toks {
			if t == rare {
				continue
			}
			binary.BigEndian.PutUint64(probe[1:], t)
			copy(probe[9:], k[9:])
			if kv.Get(probe) == nil {
				return nil
			}
		}
		h, ok, err := accept(doc, v)
		if err != nil || !ok {
			return err
		}
		out = append(out, candidate{doc: doc, h: h})
		if len(out) == limit {
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return nil, err
	}
	return out, nil
}

// orCandidates returns up to limit docs matching any term (each term the
// AND of its tokens), newest first. Each term contributes at most limit
// docs, which contain the union's newest limit.
func orCandidates(ctx context.Context, kv KV, cn *counts, terms [][]uint64, limit int, accept acceptFunc) ([]candidate, error) {
	var all []candidate
	for _, t := range terms {
		c, err := andCandidates(ctx, kv, cn, t, limit, accept)
		if err != nil {
			return nil, err
		}
		all = append(all, c...)
	}
	slices.SortFunc(all, func(a, b candidate) int { return cmpU32(b.doc, a.doc) })
	all = slices.CompactFunc(all, func(a, b candidate) bool { return a.doc == b.doc })
	if len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cascade runs the AND searches in order and stops at the first non-empty
// one; if all are empty it runs the OR fallback.
func cascade(ctx context.Context, kv KV, q *parsedQuery, limit int, accept acceptFunc) ([]candidate, error) {
	cn := &counts{kv: kv, m: map[uint64]uint32{}}
	for _, s := range q.searches {
		c, err := andCandidates(ctx, kv, cn, s, limit, accept)
		if err != nil || len(c) > 0 {
			return c, err
		}
	}
	return orCandidates(ctx, kv, cn, q.or, limit, accept)
}

// hotOfDoc reads a doc's hot record.
func hotOfDoc(kv KV, doc uint32) (hot, error) {
	h, ok := decodeHot(kv.Get(key(pHot, docBytes(doc))))
	if !ok {
		return hot{}, fmt.Errorf("recall: doc %d: missing hot record", doc)
	}
	return h, nil
}

func expired(h *hot, now int64) bool { return h.flags&fExpires != 0 && h.expires <= now }

// Recall is the explicit recall of `tree-ring recall`: the AND cascade with
// intent-term removal, then the OR fallback, over memories that pass the
// exact filters, are not superseded, redacted or expired, and have normal
// sensitivity unless f.IncludeSensitive; at most clamp(limit×128, 256,
// 2048) candidates, newest first; scored by the published formula and
// sorted by score, then id. An empty query or no match returns no results
// and no error. Expiry is evaluated at now (the published explicit recall
// leaves expired rows to `maintain`; we never return them).
//
// kv and bodies must come from one read snapshot; the results do not
// reference them after return.
func Recall(ctx context.Context, kv KV, bodies Bodies, query string, f Filter, now time.Time) ([]Result, error) {
	limit := f.Limit
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("limit must be between 1 and %d", MaxLimit)
	}
	q := parseQuery(query)
	if len(q.terms) == 0 {
		return nil, nil
	}
	nowUS := now.UnixMicro()
	want := struct{ proj, agent, wf, sess uint64 }{
		identHash('p', f.Project), identHash('a', f.AgentProfile), identHash('w', f.WorkflowID), identHash('x', f.SessionID),
	}
	scope := -1
	if f.Scope != "" {
		if scope = slices.Index(events.MemoryScopes, f.Scope); scope < 0 {
			return nil, errors.New("invalid scope")
		}
	}
	accept := func(doc uint32, pv []byte) (hot, bool, error) {
		if pv[0]&fSensitive != 0 && !f.IncludeSensitive {
			return hot{}, false, nil
		}
		h, err := hotOfDoc(kv, doc)
		if err != nil {
			return hot{}, false, err
		}
		ok := h.flags&(fSuperseded|fRedacted) == 0 && !expired(&h, nowUS) &&
			(want.proj == 0 || h.proj == want.proj) && (want.agent == 0 || h.agent == want.agent) &&
			(want.wf == 0 || h.wf == want.wf) && (want.sess == 0 || h.sess == want.sess) &&
			(scope < 0 || int(h.scope) == scope)
		return h, ok, nil
	}
	cands, err := cascade(ctx, kv, &q, candidateCap(limit), accept)
	if err != nil {
		return nil, err
	}
	exact := func(c *cold) bool { // hashes matched; confirm the strings
		return (f.Project == "" || c.Project == f.Project) && (f.AgentProfile == "" || c.AgentProfile == f.AgentProfile) &&
			(f.WorkflowID == "" || c.WorkflowID == f.WorkflowID) && (f.SessionID == "" || c.SessionID == f.SessionID)
	}
	top, err := rank(kv, bodies, cands, &q, limit, now, exact)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(top))
	for i, t := range top {
		out[i] = Result{Memory: t.rec, Score: t.score}
		if f.Explain {
			out[i].Ranking = t.fact.explain()
		}
	}
	return out, nil
}

// ranked is a scored memory with its record.
type ranked struct {
	candidate
	rec events.MemoryRecord
}

// rank scores candidates with the published formula and returns the best
// limit, by score descending then id ascending. The textual factor needs
// the body; everything else is in the hot record. Candidates are visited in
// order of their upper bound (textual = 1) and the walk stops when no
// remaining candidate can enter the top: the result is exactly that of
// scoring them all, while usually reading only about limit bodies.
//
// A nil q is the startup brief: no query terms (textual = 0.1, no ring
// boost) plus the startup ring bonus, so the bound is the exact score.
func rank(kv KV, bodies Bodies, cands []candidate, q *parsedQuery, limit int, now time.Time, confirm func(*cold) bool) ([]ranked, error) {
	startup := q == nil
	if startup {
		q = &parsedQuery{}
	}
	for i := range cands {
		c := &cands[i]
		c.fact = staticFactors(&c.h, q, now)
		c.fact.textual = 1
		if startup {
			c.fact.textual = 0.1
			switch c.h.ring {
			case ringScar:
				c.fact.startBonus = 0.20
			case ringHeartwood:
				c.fact.startBonus = 0.15
			}
		}
		c.bound = c.fact.score()
	}
	slices.SortFunc(cands, func(a, b candidate) int { return byScore(a.bound, a.h.id, b.bound, b.h.id) })
	var top []ranked
	for i := range cands {
		c := cands[i]
		if len(top) == limit {
			w := top[limit-1]
			if byScore(c.bound, c.h.id, w.score, w.h.id) > 0 {
				break // sorted by bound: nothing later can enter either
			}
		}
		rec, ok, err := materialize(kv, bodies, c.doc, confirm)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if !startup {
			c.fact.textual = textual(q.terms, &rec)
		}
		c.score = c.fact.score()
		pos, _ := slices.BinarySearchFunc(top, c, func(r ranked, c candidate) int { return byScore(r.score, r.h.id, c.score, c.h.id) })
		top = slices.Insert(top, pos, ranked{candidate: c, rec: rec})
		if len(top) > limit {
			top = top[:limit]
		}
	}
	return top, nil
}

// byScore orders by score descending, then id ascending.
func byScore(sa float64, ida string, sb float64, idb string) int {
	switch {
	case sa > sb:
		return -1
	case sa < sb:
		return 1
	}
	return strings.Compare(ida, idb)
}

// materialize reads a doc's full record: cold state and body. ok is false
// when confirm rejects it or its body is gone.
func materialize(kv KV, bodies Bodies, doc uint32, confirm func(*cold) bool) (events.MemoryRecord, bool, error) {
	var c cold
	if err := json.Unmarshal(kv.Get(key(pCold, docBytes(doc))), &c); err != nil {
		return events.MemoryRecord{}, false, fmt.Errorf("recall: doc %d: cold record: %w", doc, err)
	}
	if confirm != nil && !confirm(&c) {
		return events.MemoryRecord{}, false, nil
	}
	raw := bodies.Body(c.BodySHA256)
	if raw == nil {
		return events.MemoryRecord{}, false, nil
	}
	b, err := events.UnmarshalBody(raw)
	if err != nil {
		return events.MemoryRecord{}, false, fmt.Errorf("recall: %s: %w", c.MemoryID, err)
	}
	return events.JoinMemory(&c.MemoryCaptured, c.SupersededBy, &b), true, nil
}

// factors are the published score factors.
type factors struct {
	textual, sal, conf, recency, auth, ringBoost float64
	startBonus                                   float64
}

// score is 0.25·textual + 0.25·salience + 0.25·confidence + 0.20·recency +
// 0.05·source_authority + ring_boost (+ the startup ring bonus), summed in
// that order.
func (f *factors) score() float64 {
	s := 0.25*f.textual + 0.25*f.sal + 0.25*f.conf + 0.20*f.recency + 0.05*f.auth + f.ringBoost
	return s + f.startBonus
}

func (f *factors) explain() map[string]float64 {
	return map[string]float64{
		"textual_match": f.textual, "salience": f.sal, "confidence": f.conf,
		"recency": f.recency, "source_authority": f.auth, "ring_boost": f.ringBoost,
	}
}

// recency is exp(-age/30 days); a future created_at counts as now.
func recency(createdUS, nowUS int64) float64 {
	age := float64(max(nowUS-createdUS, 0)) / 1e6
	return math.Exp(-age / 86400 / 30)
}

func staticFactors(h *hot, q *parsedQuery, now time.Time) factors {
	f := factors{sal: h.sal, conf: h.conf, recency: recency(h.created, now.UnixMicro()), auth: authorityValue(h.auth)}
	switch {
	case h.ring == ringScar && q.failure:
		f.ringBoost = 0.20
	case h.ring == ringHeartwood && q.heartwood:
		f.ringBoost = 0.15
	case h.ring == ringSeed && q.seeds:
		f.ringBoost = 0.12
	}
	return f
}

// textual is the share of query terms found as substrings of the lowercased
// summary, details and tags; 0.1 for a query without terms.
func textual(terms []string, r *events.MemoryRecord) float64 {
	if len(terms) == 0 {
		return 0.1
	}
	text := strings.ToLower(r.Summary + " " + r.Details + " " + strings.Join(r.Tags, " "))
	n := 0
	for _, t := range terms {
		if strings.Contains(text, t) {
			n++
		}
	}
	return float64(n) / float64(len(terms))
}
