package recall

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
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

// scratch is one query's reusable memory, pooled so that a query allocates
// nothing per candidate and little per query. It never outlives the query
// that took it; release clears every alias of the read transaction's
// pages before it goes back.
type scratch struct {
	pfx, key []byte // ForEach prefixes and Get keys: separate, a Get runs inside a walk
	counts   map[uint64]uint32
	sets     []bitmap
	lists    [][]posting
	probes   []probeBlock
	cands    []posting
	heap     boundHeap
	text     []byte
	start    startRead
	pos      []int
}

var scratchPool = sync.Pool{New: func() any { return &scratch{counts: map[uint64]uint32{}} }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func (s *scratch) release() {
	clear(s.counts)
	clear(s.probes[:cap(s.probes)]) // blocks alias the finished transaction's pages
	scratchPool.Put(s)
}

// startID is the id of a startup candidate.
func (s *scratch) startID(e *startEntry) []byte {
	return e.idIn(s.start.ids)
}

// prefix builds a ForEach prefix of p and tok.
func (s *scratch) prefix(p byte, tok uint64) []byte {
	s.pfx = binary.BigEndian.AppendUint64(append(s.pfx[:0], p), tok)
	return s.pfx
}

// docKey builds the key of doc's record p.
func (s *scratch) docKey(p byte, doc uint32) []byte {
	s.key = binary.BigEndian.AppendUint32(append(s.key[:0], p), doc)
	return s.key
}

// posting is a decoded posting entry: a candidate before ranking.
type posting struct {
	doc       uint32
	flags     byte
	group     uint64
	sal, conf byte // rounded up, /255
	ringAuth  byte
	minute    uint32 // created_at, rounded up
	bound     float64
	refined   bool // bound: exact static factors and the signature's textual bound
}

func decodePosting(v []byte) posting {
	return posting{
		doc: binary.BigEndian.Uint32(v), flags: v[4], group: binary.BigEndian.Uint64(v[5:]),
		sal: v[13], conf: v[14], ringAuth: v[15], minute: binary.BigEndian.Uint32(v[16:]),
	}
}

// filter decides which postings are candidates: the brief's visibility
// groups, or explicit recall's exact filters (on the hot record, read only
// when one is set). Expiry is always checked, reading the hot record only
// for postings flagged as expiring.
type filter struct {
	groups                []uint64 // brief: the visible groups; nil for explicit recall
	sensitive             bool     // explicit: non-normal sensitivity too
	exact                 bool     // explicit: an identity or scope filter is set
	proj, agent, wf, sess uint64
	// shared is the project's shared-scope group when the project is the
	// only filter: a posting of that group matches without its hot record.
	shared uint64
	scope  int // -1: any
	now    int64
}

func (f *filter) valueOK(p *posting) bool {
	if f.groups != nil {
		return p.flags&fSensitive == 0 && slices.Contains(f.groups, p.group)
	}
	return p.flags&fSensitive == 0 || f.sensitive
}

func (f *filter) needsHot(p *posting) bool {
	return f.exact && (f.shared == 0 || p.group != f.shared) || p.flags&fExpires != 0
}

func (f *filter) accept(h *hot) bool {
	if expired(h, f.now) {
		return false
	}
	return !f.exact || (f.proj == 0 || h.proj == f.proj) && (f.agent == 0 || h.agent == f.agent) &&
		(f.wf == 0 || h.wf == f.wf) && (f.sess == 0 || h.sess == f.sess) && (f.scope < 0 || int(h.scope) == f.scope)
}

func expired(h *hot, now int64) bool { return h.flags&fExpires != 0 && h.expires <= now }

// searcher is one search's state: the snapshot, its scratch and filter.
type searcher struct {
	ctx context.Context
	kv  KV
	s   *scratch
	f   *filter
}

func (q *searcher) count(tok uint64) uint32 {
	if n, ok := q.s.counts[tok]; ok {
		return n
	}
	n := uint32(0)
	if v := q.kv.Get(q.s.prefix(pCount, tok)); len(v) == 4 {
		n = binary.BigEndian.Uint32(v)
	}
	q.s.counts[tok] = n
	return n
}

// hotOf reads a doc's hot record.
func (q *searcher) hotOf(doc uint32) (hot, error) {
	h, ok := decodeHot(q.kv.Get(q.s.docKey(pHot, doc)))
	if !ok {
		return hot{}, fmt.Errorf("recall: doc %d: missing hot record", doc)
	}
	return h, nil
}

// andCandidates appends to dst up to limit docs holding every token and
// passing the filter, newest first. It walks the rarest token's posting
// blocks and checks the other tokens in a bitmap of their postings when
// their lists are short enough to read, otherwise in their posting block
// of the candidate's doc range (one read per range: the walk goes newest
// first); its cost follows the rarest list and the filter, not the size of
// the index.
func (q *searcher) andCandidates(dst []posting, toks []uint64, limit int) ([]posting, error) {
	if len(toks) == 0 {
		return dst, nil
	}
	rare := toks[0]
	for _, t := range toks {
		n := q.count(t)
		if n == 0 {
			return dst, nil
		}
		if n < q.count(rare) {
			rare = t
		}
	}
	sets := q.s.sets[:0]
	probe := q.s.probes[:0]
	for _, t := range toks {
		switch {
		case t == rare:
		case q.count(t) <= bitmapMax(limit):
			var b bitmap
			if len(sets) < cap(sets) {
				b = sets[:len(sets)+1][len(sets)]
			}
			b, err := q.postingSet(b[:0], t)
			if err != nil {
				return dst, err
			}
			sets = append(sets, b)
		default:
			probe = append(probe, probeBlock{tok: t})
		}
	}
	q.s.sets, q.s.probes = sets, probe
	start := len(dst)
	err := q.eachPosting(rare, func(p posting) (bool, error) {
		if !q.f.valueOK(&p) {
			return true, nil
		}
		for _, b := range sets {
			if !b.has(p.doc) {
				return true, nil
			}
		}
		for i := range probe {
			if !q.inBlock(&probe[i], p.doc) {
				return true, nil
			}
		}
		if q.f.needsHot(&p) {
			h, err := q.hotOf(p.doc)
			if err != nil {
				return false, err
			}
			if !q.f.accept(&h) {
				return true, nil
			}
		}
		dst = append(dst, p)
		return len(dst)-start < limit, nil
	})
	return dst, err
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

// postingSet reads a token's postings into the bitmap b (empty, reused).
func (q *searcher) postingSet(b bitmap, tok uint64) (bitmap, error) {
	err := q.eachPosting(tok, func(p posting) (bool, error) {
		i := int(p.doc >> 6)
		if i >= len(b) {
			n := len(b)
			b = slices.Grow(b, i+1-n)[:i+1]
			clear(b[n:])
		}
		b[i] |= 1 << (p.doc & 63)
		return true, nil
	})
	return b, err
}

// eachPosting calls fn with a token's postings, newest first, until fn
// returns false.
func (q *searcher) eachPosting(tok uint64, fn func(p posting) (bool, error)) error {
	seen := 0
	err := q.kv.ForEach(q.s.prefix(pPost, tok), func(_, v []byte) error {
		if len(v)%postingLen != 0 {
			return errors.New("recall: malformed posting block")
		}
		for i := 0; i < len(v); i += postingLen {
			if seen++; seen&1023 == 0 {
				if err := q.ctx.Err(); err != nil {
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

// probeBlock is a token checked in its posting blocks, with the last
// block read.
type probeBlock struct {
	tok   uint64
	rng   uint32
	block []byte // aliases the read transaction's pages
	read  bool
}

// inBlock reports whether doc is among pb's postings.
func (q *searcher) inBlock(pb *probeBlock, doc uint32) bool {
	if r := doc >> blockShift; !pb.read || pb.rng != r {
		k := binary.BigEndian.AppendUint64(append(q.s.key[:0], pPost), pb.tok)
		q.s.key = binary.BigEndian.AppendUint32(k, ^r)
		pb.block, pb.rng, pb.read = q.kv.Get(q.s.key), r, true
	}
	for i := 0; i+postingLen <= len(pb.block); i += postingLen {
		if binary.BigEndian.Uint32(pb.block[i:]) == doc {
			return true
		}
	}
	return false
}

// orCandidates returns up to limit docs matching any term (each term the
// AND of its tokens), newest first. Each term contributes at most limit
// docs, which contain the union's newest limit; the lists are merged.
func (q *searcher) orCandidates(terms [][]uint64, limit int) ([]posting, error) {
	lists := q.s.lists[:0]
	for i, t := range terms {
		var l []posting
		if i < cap(q.s.lists) {
			l = q.s.lists[:i+1][i][:0]
		}
		l, err := q.andCandidates(l, t, limit)
		if err != nil {
			return nil, err
		}
		lists = append(lists, l)
	}
	q.s.lists = lists
	out := q.s.cands[:0]
	pos := slices.Grow(q.s.pos[:0], len(lists))[:len(lists)]
	clear(pos)
	q.s.pos = pos
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
	q.s.cands = out
	return out, nil
}

// cascade runs the AND searches in order and stops at the first non-empty
// one; if all are empty it runs the OR fallback.
func (q *searcher) cascade(pq *parsedQuery, limit int) ([]posting, error) {
	for _, s := range pq.searches {
		c, err := q.andCandidates(q.s.cands[:0], s, limit)
		q.s.cands = c
		if err != nil || len(c) > 0 {
			return c, err
		}
	}
	return q.orCandidates(pq.or, limit)
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
	pq := parseQuery(query)
	if len(pq.terms) == 0 {
		return nil, nil
	}
	if err := checkLayout(kv); err != nil {
		return nil, err
	}
	flt := filter{
		sensitive: f.IncludeSensitive, scope: -1, now: now.UnixMicro(),
		proj: identHash('p', f.Project), agent: identHash('a', f.AgentProfile), wf: identHash('w', f.WorkflowID), sess: identHash('x', f.SessionID),
	}
	if f.Scope != "" {
		if flt.scope = slices.Index(events.MemoryScopes, f.Scope); flt.scope < 0 {
			return nil, errors.New("invalid scope")
		}
	}
	flt.exact = flt.proj|flt.agent|flt.wf|flt.sess != 0 || flt.scope >= 0
	if flt.proj != 0 && flt.agent|flt.wf|flt.sess == 0 && flt.scope < 0 {
		flt.shared = groupHash(gShared, flt.proj, 0)
	}
	s := getScratch()
	defer s.release()
	qs := &searcher{ctx: ctx, kv: kv, s: s, f: &flt}
	cands, err := qs.cascade(&pq, candidateCap(limit))
	if err != nil {
		return nil, err
	}
	exact := func(c *coldView) bool { // hashes matched; confirm the strings
		return (f.Project == "" || string(c.bytes(cProject)) == f.Project) &&
			(f.AgentProfile == "" || string(c.bytes(cAgentProfile)) == f.AgentProfile) &&
			(f.WorkflowID == "" || string(c.bytes(cWorkflowID)) == f.WorkflowID) &&
			(f.SessionID == "" || string(c.bytes(cSessionID)) == f.SessionID)
	}
	top, err := qs.rank(bodies, cands, &pq, limit, now, exact)
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(top))
	for i := range top {
		rec, err := top[i].record()
		if err != nil {
			return nil, err
		}
		out[i] = Result{Memory: rec, Score: top[i].score}
		if f.Explain {
			out[i].Ranking = top[i].fact.explain()
		}
	}
	return out, nil
}

// ranked is a scored memory. id, and after confirmation cv and body,
// alias the read transaction's pages.
type ranked struct {
	doc   uint32
	id    []byte
	score float64
	fact  factors
	cv    coldView
	body  []byte
}

// record copies a confirmed result out as the published record.
func (r *ranked) record() (memory.Record, error) {
	c := r.cv.cold()
	b, err := memory.ParseBody(r.body)
	if err != nil {
		return memory.Record{}, fmt.Errorf("recall: %s: %w", c.MemoryID, err)
	}
	mb := b.Body()
	return memory.Join(&c.MemoryCaptured, c.SupersededBy, &mb), nil
}

// insertTop inserts r into top (score descending, id ascending), keeping
// at most limit entries.
func insertTop(top []ranked, r ranked, limit int) []ranked {
	pos, _ := slices.BinarySearchFunc(top, r, func(a, b ranked) int { return byScore(a.score, a.id, b.score, b.id) })
	if pos >= limit {
		return top
	}
	if len(top) == limit {
		top = top[:limit-1]
	}
	return slices.Insert(top, pos, r)
}

// beats reports whether (score, id) would enter a full top.
func beats(top []ranked, limit int, score float64, id []byte) bool {
	if len(top) < limit {
		return true
	}
	w := &top[limit-1]
	return byScore(score, id, w.score, w.id) < 0
}

// rank scores candidates with the published formula and returns the best
// limit, by score descending then id ascending, confirmed.
//
// It is exact (the same result as scoring every candidate) and lazy: a
// candidate's first upper bound comes from its posting (static factors
// rounded up, textual = 1); candidates are visited by decreasing bound and
// the walk stops when the bound falls below the last kept score. A
// candidate visited the first time reads its hot record and goes back with
// a tighter bound (exact static factors, the text signature's textual
// bound); visited again, it reads its body for the exact textual factor.
//
// confirm (optional) re-checks a winner's visibility on its strings (the
// index matched hashes); a winner it rejects, or whose body is gone, is
// dropped and the ranking rerun without it.
func (q *searcher) rank(bodies Bodies, cands []posting, pq *parsedQuery, limit int, now time.Time, confirm func(*coldView) bool) ([]ranked, error) {
	nowUS := now.UnixMicro()
	for i := range cands {
		p := &cands[i]
		f := factors{
			textual: 1, sal: float64(p.sal) / 255, conf: float64(p.conf) / 255,
			recency: recency(int64(p.minute)*60_000_000, nowUS), auth: authorityValue(p.ringAuth >> 3),
			ringBoost: ringBoost(p.ringAuth&7, pq),
		}
		p.bound = f.score() + 1e-9
	}
	var excluded map[uint32]bool
	top := make([]ranked, 0, min(limit, len(cands)))
	for {
		top = top[:0]
		h := append(q.s.heap[:0], cands...)
		h.init()
		for len(h) > 0 {
			p := h.pop()
			if excluded[p.doc] {
				continue
			}
			if len(top) == limit && p.bound < top[limit-1].score {
				break // popped by bound: nothing left can enter either
			}
			hr, err := q.hotOf(p.doc)
			if err != nil {
				return nil, err
			}
			r := ranked{doc: p.doc, id: hr.id, fact: staticFactors(&hr, pq, now)}
			if !p.refined {
				r.fact.textual = textualBound(pq.terms, hr.sig)
				if p.bound = r.fact.score() + 1e-9; beats(top, limit, p.bound, r.id) {
					p.refined = true
					h.push(p)
				}
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
			q.s.text = lowerText(q.s.text[:0], &b)
			r.fact.textual = textual(pq.terms, q.s.text)
			r.score = r.fact.score()
			top = insertTop(top, r, limit)
		}
		q.s.heap = h
		ok, err := q.confirmTop(bodies, top, confirm, &excluded)
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

func (h *boundHeap) push(p posting) {
	*h = append(*h, p)
	for i := len(*h) - 1; i > 0; {
		parent := (i - 1) / 2
		if (*h)[parent].bound >= (*h)[i].bound {
			return
		}
		(*h)[parent], (*h)[i] = (*h)[i], (*h)[parent]
		i = parent
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

// confirmTop reads the cold records and bodies of top. It returns false
// when confirm rejected one or its body is gone (now in *excluded): the
// caller ranks again.
func (q *searcher) confirmTop(bodies Bodies, top []ranked, confirm func(*coldView) bool, excluded *map[uint32]bool) (bool, error) {
	ok := true
	for i := range top {
		r := &top[i]
		cv, err := parseCold(q.kv.Get(q.s.docKey(pCold, r.doc)))
		if err != nil {
			return false, fmt.Errorf("recall: doc %d: %w", r.doc, err)
		}
		r.cv = cv
		if confirm == nil || confirm(&r.cv) {
			r.body = bodies.Body(string(cv.bytes(cBodySHA256)))
		}
		if r.body == nil {
			if *excluded == nil {
				*excluded = map[uint32]bool{}
			}
			(*excluded)[r.doc] = true
			ok = false
		}
	}
	return ok, nil
}

// byScore orders by score descending, then id ascending.
func byScore(sa float64, ida []byte, sb float64, idb []byte) int {
	switch {
	case sa > sb:
		return -1
	case sa < sb:
		return 1
	}
	return bytes.Compare(ida, idb)
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
	return termShare(terms, func(t string) bool { return bytes.Contains(text, []byte(t)) })
}

// termShare is the share of terms that has; 0.1 without terms.
func termShare(terms []string, has func(string) bool) float64 {
	if len(terms) == 0 {
		return 0.1
	}
	n := 0
	for _, t := range terms {
		if has(t) {
			n++
		}
	}
	return float64(n) / float64(len(terms))
}
