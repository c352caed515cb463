package recall

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
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
	Memory memory.Record `json:"memory"`
	Score  float64       `json:"score"`
	// Ranking holds the factors when explain is on: textual_match,
	// salience, confidence, recency, source_authority, ring_boost.
	Ranking map[string]float64 `json:"ranking"`
}

// errStop ends a ForEach early.
var errStop = errors.New("stop")

// posting is a decoded posting entry: a candidate before ranking.
type posting struct {
	doc       uint32
	flags     byte
	group     uint64
	sal, conf byte // rounded up, /255
	ringAuth  byte
	minute    uint32 // created_at, rounded up
	bound     float64
}

func decodePosting(v []byte) posting {
	return posting{
		doc: binary.BigEndian.Uint32(v), flags: v[4], group: binary.BigEndian.Uint64(v[5:]),
		sal: v[13], conf: v[14], ringAuth: v[15], minute: binary.BigEndian.Uint32(v[16:]),
	}
}

// filter decides which postings are candidates. valueOK sees the posting;
// hotOK, when set, needs the memory's hot record and runs for every
// posting that passes valueOK. Expiry is always checked, reading the hot
// record only for postings flagged as expiring.
type filter struct {
	valueOK func(p *posting) bool
	hotOK   func(h *hot) bool
	now     int64
}

func (f *filter) accept(h *hot) bool {
	return !expired(h, f.now) && (f.hotOK == nil || f.hotOK(h))
}

func expired(h *hot, now int64) bool { return h.flags&fExpires != 0 && h.expires <= now }

// counts caches posting counts during one query.
type counts struct {
	kv KV
	m  map[uint64]uint32
}

func (c *counts) get(tok uint64) uint32 {
	if n, ok := c.m[tok]; ok {
		return n
	}
	n := count(c.kv, tok)
	c.m[tok] = n
	return n
}

// andCandidates returns up to limit docs holding every token and passing
// the filter, newest first. It walks the rarest token's posting blocks and
// checks the other tokens in a bitmap of their postings when their lists
// are short enough to read, otherwise in the memory's hot record; its cost
// follows the rarest list and the filter, not the size of the index.
func andCandidates(ctx context.Context, kv KV, cn *counts, toks []uint64, limit int, f *filter) ([]posting, error) {
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
	var sets []bitmap
	var probe []uint64 // tokens checked in the hot record
	for _, t := range toks {
		switch {
		case t == rare:
		case cn.get(t) <= bitmapMax(limit):
			b, err := postingSet(kv, t)
			if err != nil {
				return nil, err
			}
			sets = append(sets, b)
		default:
			probe = append(probe, t)
		}
	}
	var out []posting
	err := eachPosting(ctx, kv, rare, func(p posting) (bool, error) {
		if !f.valueOK(&p) {
			return true, nil
		}
		for _, b := range sets {
			if !b.has(p.doc) {
				return true, nil
			}
		}
		if len(probe) > 0 || f.hotOK != nil || p.flags&fExpires != 0 {
			h, err := hotOfDoc(kv, p.doc)
			if err != nil {
				return false, err
			}
			if !f.accept(&h) || !hasAll(&h, probe) {
				return true, nil
			}
		}
		out = append(out, p)
		return len(out) < limit, nil
	})
	return out, err
}

// bitmapMax is the longest posting list read whole into a bitmap: reading
// a posting costs a few nanoseconds, a hot-record lookup about a
// microsecond, and a walk visits at least limit postings.
func bitmapMax(limit int) uint32 { return uint32(32 * max(limit, 256)) }

// bitmap is a set of docs.
type bitmap []uint64

func (b bitmap) has(doc uint32) bool {
	i := int(doc >> 6)
	return i < len(b) && b[i]&(1<<(doc&63)) != 0
}

// postingSet reads a token's postings into a bitmap.
func postingSet(kv KV, tok uint64) (bitmap, error) {
	var b bitmap
	err := eachPosting(context.Background(), kv, tok, func(p posting) (bool, error) {
		i := int(p.doc >> 6)
		if i >= len(b) {
			b = slices.Grow(b, i+1-len(b))[:i+1]
		}
		b[i] |= 1 << (p.doc & 63)
		return true, nil
	})
	return b, err
}

// eachPosting calls fn with a token's postings, newest first, until fn
// returns false.
func eachPosting(ctx context.Context, kv KV, tok uint64, fn func(p posting) (bool, error)) error {
	seen := 0
	err := kv.ForEach(key(pPost, u64b(tok)), func(_, v []byte) error {
		if len(v)%postingLen != 0 {
			return errors.New("recall: malformed posting block")
		}
		for i := 0; i < len(v); i += postingLen {
			if seen++; seen&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			more, err := fn(decodePosting(v[i:]))
			if err != nil {
				return err
			}
			if !more {
				return errStop
			}
		}
		return nil
	})
	if err == errStop {
		return nil
	}
	return err
}

func hasAll(h *hot, toks []uint64) bool {
	for _, t := range toks {
		if !h.hasToken(t) {
			return false
		}
	}
	return true
}

// orCandidates returns up to limit docs matching any term (each term the
// AND of its tokens), newest first. Each term contributes at most limit
// docs, which contain the union's newest limit; the lists are merged.
func orCandidates(ctx context.Context, kv KV, cn *counts, terms [][]uint64, limit int, f *filter) ([]posting, error) {
	lists := make([][]posting, 0, len(terms))
	for _, t := range terms {
		c, err := andCandidates(ctx, kv, cn, t, limit, f)
		if err != nil {
			return nil, err
		}
		if len(c) > 0 {
			lists = append(lists, c)
		}
	}
	if len(lists) == 1 {
		return lists[0], nil
	}
	out := make([]posting, 0, limit)
	pos := make([]int, len(lists))
	for len(out) < limit {
		best := -1
		for i, l := range lists {
			if pos[i] < len(l) && (best < 0 || l[pos[i]].doc > lists[best][pos[best]].doc) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		p := lists[best][pos[best]]
		for i, l := range lists { // the same doc in other lists: skip it there
			if pos[i] < len(l) && l[pos[i]].doc == p.doc {
				pos[i]++
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// cascade runs the AND searches in order and stops at the first non-empty
// one; if all are empty it runs the OR fallback.
func cascade(ctx context.Context, kv KV, q *parsedQuery, limit int, f *filter) ([]posting, error) {
	cn := &counts{kv: kv, m: map[uint64]uint32{}}
	for _, s := range q.searches {
		if c, err := andCandidates(ctx, kv, cn, s, limit, f); err != nil || len(c) > 0 {
			return c, err
		}
	}
	return orCandidates(ctx, kv, cn, q.or, limit, f)
}

// hotOfDoc reads a doc's hot record.
func hotOfDoc(kv KV, doc uint32) (hot, error) {
	h, ok := decodeHot(kv.Get(key(pHot, docBytes(doc))))
	if !ok {
		return hot{}, fmt.Errorf("recall: doc %d: missing hot record", doc)
	}
	return h, nil
}

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
	want := struct{ proj, agent, wf, sess uint64 }{
		identHash('p', f.Project), identHash('a', f.AgentProfile), identHash('w', f.WorkflowID), identHash('x', f.SessionID),
	}
	scope := -1
	if f.Scope != "" {
		if scope = slices.Index(events.MemoryScopes, f.Scope); scope < 0 {
			return nil, errors.New("invalid scope")
		}
	}
	flt := filter{
		valueOK: func(p *posting) bool { return p.flags&fSensitive == 0 || f.IncludeSensitive },
		now:     now.UnixMicro(),
	}
	if want.proj|want.agent|want.wf|want.sess != 0 || scope >= 0 {
		flt.hotOK = func(h *hot) bool {
			return (want.proj == 0 || h.proj == want.proj) && (want.agent == 0 || h.agent == want.agent) &&
				(want.wf == 0 || h.wf == want.wf) && (want.sess == 0 || h.sess == want.sess) &&
				(scope < 0 || int(h.scope) == scope)
		}
	}
	cands, err := cascade(ctx, kv, &q, candidateCap(limit), &flt)
	if err != nil {
		return nil, err
	}
	exact := func(c *cold) bool { // hashes matched; confirm the strings
		return (f.Project == "" || c.Project == f.Project) && (f.AgentProfile == "" || c.AgentProfile == f.AgentProfile) &&
			(f.WorkflowID == "" || c.WorkflowID == f.WorkflowID) && (f.SessionID == "" || c.SessionID == f.SessionID)
	}
	top, err := rankPostings(kv, bodies, cands, &q, limit, now, exact)
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

// ranked is a scored memory.
type ranked struct {
	doc   uint32
	id    string
	score float64
	fact  factors
	rec   memory.Record
}

// insertTop inserts r into top (score descending, id ascending), keeping
// at most limit entries.
func insertTop(top []ranked, r ranked, limit int) []ranked {
	pos, _ := slices.BinarySearchFunc(top, r, func(a, b ranked) int { return byScore(a.score, a.id, b.score, b.id) })
	if pos >= limit {
		return top
	}
	top = slices.Insert(top, pos, r)
	if len(top) > limit {
		top = top[:limit]
	}
	return top
}

// beats reports whether (score, id) would enter a full top.
func beats(top []ranked, limit int, score float64, id string) bool {
	if len(top) < limit {
		return true
	}
	w := &top[limit-1]
	return byScore(score, id, w.score, w.id) < 0
}

// rankPostings scores candidates with the published formula and returns
// the best limit, by score descending then id ascending, with records.
//
// It is exact (the same result as scoring every candidate) and lazy: a
// candidate's upper bound comes from its posting (static factors rounded
// up, textual = 1); candidates are visited by decreasing bound and the walk
// stops when the bound falls below the last kept score. A visited
// candidate reads its hot record for the exact static factors, and its
// body for the textual factor only if it can still enter.
//
// confirm (optional) re-checks a winner's visibility on its strings (the
// index matched hashes); a winner it rejects is dropped and the ranking
// rerun without it.
func rankPostings(kv KV, bodies Bodies, cands []posting, q *parsedQuery, limit int, now time.Time, confirm func(*cold) bool) ([]ranked, error) {
	nowUS := now.UnixMicro()
	for i := range cands {
		p := &cands[i]
		f := factors{
			textual: 1, sal: float64(p.sal) / 255, conf: float64(p.conf) / 255,
			recency: recency(int64(p.minute)*60_000_000, nowUS), auth: authorityValue(p.ringAuth >> 3),
			ringBoost: ringBoost(p.ringAuth&7, q),
		}
		p.bound = f.score() + 1e-9
	}
	var excluded map[uint32]bool
	var text []byte
	for {
		var top []ranked
		h := boundHeap(slices.Clone(cands))
		h.init()
		for len(h) > 0 {
			p := h.pop()
			if excluded[p.doc] {
				continue
			}
			if len(top) == limit && p.bound < top[limit-1].score {
				break // popped by bound: nothing left can enter either
			}
			hr, err := hotOfDoc(kv, p.doc)
			if err != nil {
				return nil, err
			}
			r := ranked{doc: p.doc, id: hr.id, fact: staticFactors(&hr, q, now)}
			r.fact.textual = 1
			if !beats(top, limit, r.fact.score(), r.id) {
				continue
			}
			raw := bodies.Body(hr.bodyDigest())
			if raw == nil {
				continue
			}
			b, err := memory.ParseBody(raw)
			if err != nil {
				return nil, fmt.Errorf("recall: %s: %w", hr.id, err)
			}
			text = lowerText(text[:0], &b)
			r.fact.textual = textual(q.terms, text)
			r.score = r.fact.score()
			top = insertTop(top, r, limit)
		}
		ok, err := materializeTop(kv, bodies, top, confirm, &excluded)
		if err != nil || ok {
			return top, err
		}
	}
}

// boundHeap is a max-heap of postings by bound: ranking pops only the few
// it visits instead of sorting every candidate.
type boundHeap []posting

func (h boundHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *boundHeap) pop() posting {
	old := *h
	top := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
	return top
}

func (h boundHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		c := l
		if r := l + 1; r < len(h) && h[r].bound > h[l].bound {
			c = r
		}
		if h[c].bound <= h[i].bound {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// materializeTop fills the records of top. It returns false when confirm
// rejected one (now in *excluded): the caller ranks again.
func materializeTop(kv KV, bodies Bodies, top []ranked, confirm func(*cold) bool, excluded *map[uint32]bool) (bool, error) {
	ok := true
	for i := range top {
		rec, good, err := materialize(kv, bodies, top[i].doc, confirm)
		if err != nil {
			return false, err
		}
		if !good {
			if *excluded == nil {
				*excluded = map[uint32]bool{}
			}
			(*excluded)[top[i].doc] = true
			ok = false
			continue
		}
		top[i].rec = rec
	}
	return ok, nil
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
func materialize(kv KV, bodies Bodies, doc uint32, confirm func(*cold) bool) (memory.Record, bool, error) {
	var c cold
	if err := json.Unmarshal(kv.Get(key(pCold, docBytes(doc))), &c); err != nil {
		return memory.Record{}, false, fmt.Errorf("recall: doc %d: cold record: %w", doc, err)
	}
	if confirm != nil && !confirm(&c) {
		return memory.Record{}, false, nil
	}
	raw := bodies.Body(c.BodySHA256)
	if raw == nil {
		return memory.Record{}, false, nil
	}
	b, err := memory.UnmarshalBody(raw)
	if err != nil {
		return memory.Record{}, false, fmt.Errorf("recall: %s: %w", c.MemoryID, err)
	}
	return memory.Join(&c.MemoryCaptured, c.SupersededBy, &b), true, nil
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

// ringBoost is the published query-intent boost.
func ringBoost(ring byte, q *parsedQuery) float64 {
	switch {
	case ring == ringScar && q.failure:
		return 0.20
	case ring == ringHeartwood && q.heartwood:
		return 0.15
	case ring == ringSeed && q.seeds:
		return 0.12
	}
	return 0
}

func staticFactors(h *hot, q *parsedQuery, now time.Time) factors {
	return factors{sal: h.sal, conf: h.conf, recency: recency(h.created, now.UnixMicro()), auth: authorityValue(h.auth), ringBoost: ringBoost(h.ring, q)}
}

// lowerText appends the lowercased summary + " " + details + " " + tags
// joined by " " (strings.ToLower's mapping, rune by rune).
func lowerText(dst []byte, b *memory.BodyView) []byte {
	dst = appendLower(dst, b.Summary)
	dst = append(dst, ' ')
	dst = appendLower(dst, b.Details)
	dst = append(dst, ' ')
	first := true
	b.EachTag(func(t []byte) {
		if !first {
			dst = append(dst, ' ')
		}
		first = false
		dst = appendLower(dst, t)
	})
	return dst
}

func appendLower(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
		i += n
	}
	return dst
}

// textual is the share of query terms found as substrings of the
// lowercased text; 0.1 for a query without terms.
func textual(terms []string, text []byte) float64 {
	if len(terms) == 0 {
		return 0.1
	}
	n := 0
	for _, t := range terms {
		if bytes.Contains(text, []byte(t)) {
			n++
		}
	}
	return float64(n) / float64(len(terms))
}
