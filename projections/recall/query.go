package recall

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
)

// DefaultLimit is the published default number of results.
const DefaultLimit = 8

// MaxLimit bounds an explicit recall's --limit.
const MaxLimit = 1000

// candidateCap is the published candidate limit of the startup brief,
// clamp(limit×128, 256, 2048).
func candidateCap(limit int) int { return min(max(limit*128, 256), 2048) }

// queryCandidates is the candidate limit of a search (explicit recall and
// task hints). It does not depend on the limit, so the first 5 results
// of --limit 10 are the results of --limit 5.
const queryCandidates = 2048

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
	// Ranking holds the parts of the score when explain is on (see
	// factors.explain).
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
	seen     bitmap   // docs already considered by a search
	bits     bitmap   // one posting list's docs
	facts    [][]byte // the factor blocks a search read, by doc >> factShift (aliasing the read transaction's pages)
	cands    []posting
	order    []int
	heap     boundHeap
	start    startRead
}

var scratchPool = sync.Pool{New: func() any { return &scratch{counts: map[uint64]uint32{}} }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func (s *scratch) release() {
	clear(s.counts)
	clear(s.facts)
	scratchPool.Put(s)
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

// posting is a decoded posting with its memory's factor entry: a
// candidate before ranking.
type posting struct {
	doc       uint32
	flags     byte
	group     uint64
	sal, conf byte // rounded up, /255
	ringAuth  byte
	minute    uint32 // created_at, rounded up
	words     uint16
	// A search's: which query tokens the memory has as words (whole) and
	// only by stem (sub), its textual factor, and its score's upper bound.
	whole, sub uint32
	textual    float64
	bound      float64
}

// decodePosting decodes doc's factor entry f (factorLen bytes).
func decodePosting(doc uint32, f []byte) posting {
	return posting{
		doc: doc, flags: f[0], group: binary.BigEndian.Uint64(f[1:]),
		sal: f[9], conf: f[10], ringAuth: f[11], minute: binary.BigEndian.Uint32(f[12:]), words: binary.BigEndian.Uint16(f[16:]),
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

// factors returns doc's factor entry, reading its block once per search
// (q.s.facts has a slot for every block: search).
func (q *searcher) factors(doc uint32) ([]byte, error) {
	r := int(doc >> factShift)
	if r >= len(q.s.facts) {
		return nil, fmt.Errorf("recall: doc %d: beyond the index", doc)
	}
	fb := q.s.facts[r]
	if fb == nil {
		q.s.key = binary.BigEndian.AppendUint32(append(q.s.key[:0], pFact), uint32(r))
		fb = q.kv.Get(q.s.key)
		q.s.facts[r] = fb
	}
	off := factorOffset(doc)
	if off+factorLen > len(fb) || fb[off]&fIndexed == 0 {
		return nil, fmt.Errorf("recall: doc %d: posting without factors", doc)
	}
	return fb[off : off+factorLen], nil
}

func (q *searcher) count(tok uint64) uint32 {
	if n, ok := q.s.counts[tok]; ok {
		return n
	}
	n := countOf(q.kv.Get(q.s.prefix(pCount, tok)))
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

// BM25's parameters. The term frequency is 1: the index keeps which words
// a memory has, not how often (memories are short).
const (
	bm25K1 = 1.5
	bm25B  = 0.5
)

// subWeight is the weight of a stem (sub-word) match relative to a whole
// word match of the same rarity.
const subWeight = 0.75

// priorWeight bounds the priors (salience, confidence, recency, source
// authority, ring boost): together they move a score by at most 0.1, so
// they reorder memories whose textual factors (0..1) are within 0.1 and
// never a clearly better match.
const priorWeight = 0.1

// idf is BM25's inverse document frequency of a list of df postings among
// n memories.
func idf(n, df float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }

// weigh reads the posting counts of the query's keys and sets its weights.
func (q *searcher) weigh(pq *parsedQuery, live uint64) {
	n := float64(live)
	pq.w = make([]float64, pq.toks)
	pq.ws = make([]float64, pq.toks)
	subDF := make([]uint32, pq.toks)
	pq.weight = 0
	for i := range pq.keys {
		k := &pq.keys[i]
		k.df = q.count(k.hash)
		if k.sub {
			subDF[k.tok] += k.df
		} else if k.df > 0 {
			pq.w[k.tok] = idf(n, float64(k.df))
			pq.weight += pq.w[k.tok]
		}
	}
	pq.live, pq.unknown = n, 0
	for t, df := range subDF {
		if df > 0 {
			pq.ws[t] = subWeight * idf(n, float64(df))
			if pq.w[t] == 0 { // the token is only a sub-word: its stem's weight is its own
				pq.weight += pq.ws[t]
			}
		}
		if df == 0 && pq.w[t] == 0 {
			pq.unknown++
		}
	}
}

// search returns the candidates of a query (ranked OR retrieval): every
// memory that passes the filter and has a query token as a word or a
// stem, reading the rarest lists first, at most queryCandidates (newest
// first within a list once the cap is near), each with its token matches
// and textual factor. Rare tokens decide relevance; a list too common to
// read whole is only probed for the candidates found.
func (q *searcher) search(pq *parsedQuery, next uint32) ([]posting, error) {
	order := q.s.order[:0]
	for i := range pq.keys {
		if pq.keys[i].df > 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(pq.keys[a].df, pq.keys[b].df) })
	q.s.order = order
	seen := grow(q.s.seen, next)
	q.s.seen = seen
	if n := int(next>>factShift) + 1; cap(q.s.facts) < n {
		q.s.facts = make([][]byte, n)
	} else {
		q.s.facts = q.s.facts[:n]
		clear(q.s.facts)
	}
	cands := q.s.cands[:0]
	for _, ki := range order {
		if len(cands) == queryCandidates {
			break
		}
		err := q.eachPosting(pq.keys[ki].hash, func(doc uint32) (bool, error) {
			if seen.has(doc) {
				return true, nil
			}
			seen.set(doc)
			fe, err := q.factors(doc)
			if err != nil {
				return false, err
			}
			p := decodePosting(doc, fe)
			if !q.f.valueOK(&p) {
				return true, nil
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
			cands = append(cands, p)
			return len(cands) < queryCandidates, nil
		})
		if err != nil {
			return nil, err
		}
	}
	q.s.cands = cands
	slices.SortFunc(cands, func(a, b posting) int { return cmp.Compare(b.doc, a.doc) })
	if err := q.matches(pq, cands); err != nil {
		return nil, err
	}
	for i := range cands {
		cands[i].textual = pq.textual(&cands[i])
	}
	return cands, nil
}

// grow returns b cleared, with room for docs below next.
func grow(b bitmap, next uint32) bitmap {
	n := int(next>>6) + 1
	if cap(b) < n {
		return make(bitmap, n)
	}
	b = b[:n]
	clear(b)
	return b
}

func (b bitmap) set(doc uint32) { b[doc>>6] |= 1 << (doc & 63) }

// matches sets the token matches of cands (sorted by doc, descending).
// A key's list is read into a bitmap when it has fewer blocks than the
// candidates span; otherwise each candidate's block is probed (candidates
// sorted by doc share blocks, so a block is read once).
func (q *searcher) matches(pq *parsedQuery, cands []posting) error {
	blocks, last := 0, uint32(math.MaxUint32)
	for i := range cands {
		if r := cands[i].doc >> blockShift; r != last {
			blocks, last = blocks+1, r
		}
	}
	if err := q.matchKeys(pq, cands, blocks, false, 0); err != nil {
		return err
	}
	all := uint32(math.MaxUint32) // the tokens every candidate has as a word
	for i := range cands {
		all &= cands[i].whole
	}
	return q.matchKeys(pq, cands, blocks, true, all)
}

// matchKeys sets the matches of the whole-word keys, or of the sub-word
// keys of tokens not in skip (a stem adds nothing to a word match, so a
// candidate with the word is not checked for its stem either).
func (q *searcher) matchKeys(pq *parsedQuery, cands []posting, blocks int, sub bool, skip uint32) error {
	for _, ki := range q.s.order {
		k := &pq.keys[ki]
		if k.sub != sub || skip&(1<<k.tok) != 0 {
			continue
		}
		useSet := k.df <= inlineMax || int(k.df) <= blocks<<blockShift // an inline token has no blocks to probe
		if useSet {
			b, err := q.postingSet(q.s.bits[:0], k.hash)
			if err != nil {
				return err
			}
			q.s.bits = b
		}
		pb := probeBlock{tok: k.hash}
		bit := uint32(1) << k.tok
		for i := range cands {
			p := &cands[i]
			if p.whole&bit != 0 || useSet && !q.s.bits.has(p.doc) || !useSet && !q.inBlock(&pb, p.doc) {
				continue
			}
			if k.sub {
				p.sub |= bit
			} else {
				p.whole |= bit
			}
		}
	}
	return nil
}

// matched is the weight of p's matched tokens: a whole word its IDF, a
// token found only by stem its stem's (times subWeight).
func (pq *parsedQuery) matched(p *posting) (whole, sub float64) {
	for t := range pq.toks {
		switch bit := uint32(1) << t; {
		case p.whole&bit != 0:
			whole += pq.w[t]
		case p.sub&bit != 0:
			sub += pq.ws[t]
		}
	}
	return whole, sub
}

// lengthNorm is BM25's term-frequency factor at frequency 1 divided by its
// maximum (k1+1): 1 for an empty memory, 1/(k1+1)·(k1+1)/(1+k1) = 0.4 at
// the average length, less for longer ones.
func lengthNorm(words uint16, avgWords float64) float64 {
	l := 1 - bm25B
	if avgWords > 0 {
		l += bm25B * float64(words) / avgWords
	}
	return 1 / (1 + bm25K1*l)
}

// textual is p's textual factor: its BM25 score (tf 1, whole words by
// IDF, stems by subWeight·IDF) over the largest possible, that of an
// empty memory with every token the query has in the index; 0..1.
func (pq *parsedQuery) textual(p *posting) float64 {
	if pq.weight == 0 {
		return 0
	}
	whole, sub := pq.matched(p)
	return (whole + sub) / pq.weight * lengthNorm(p.words, pq.avgWords)
}

// share is the part of the query's weight p matched, regardless of
// length, a token no memory has counting as if one had it (it may be the
// word that matters, "frobnicator" in "how do i use the frobnicator": a
// memory matching only "use" is no answer).
func (pq *parsedQuery) share(p *posting) float64 {
	whole, sub := pq.matched(p)
	return (whole + sub) / (pq.weight + float64(pq.unknown)*idf(pq.live, 1))
}

// bitmap is a set of docs.
type bitmap []uint64

func (b bitmap) has(doc uint32) bool {
	i := int(doc >> 6)
	return i < len(b) && b[i]&(1<<(doc&63)) != 0
}

// postingSet reads a token's postings into the bitmap b (empty, reused).
func (q *searcher) postingSet(b bitmap, tok uint64) (bitmap, error) {
	err := q.eachPosting(tok, func(doc uint32) (bool, error) {
		i := int(doc >> 6)
		if i >= len(b) {
			n := len(b)
			b = slices.Grow(b, i+1-n)[:i+1]
			clear(b[n:])
		}
		b[i] |= 1 << (doc & 63)
		return true, nil
	})
	return b, err
}

// eachPosting calls fn with a token's postings' docs, newest first, until
// fn returns false.
func (q *searcher) eachPosting(tok uint64, fn func(doc uint32) (bool, error)) error {
	seen := 0
	err := q.kv.ForEach(q.s.prefix(pPost, tok), func(k, v []byte) error {
		if len(k) != blockKeyLen {
			return q.eachInline(v, fn) // the token's count, and its postings while it has no blocks
		}
		if len(v) == 0 || len(v) > blockDocs {
			return errors.New("recall: malformed posting block")
		}
		base := ^binary.BigEndian.Uint32(k[9:]) << blockShift
		for _, o := range v {
			if seen++; seen&1023 == 0 {
				if err := q.ctx.Err(); err != nil {
					return err
				}
			}
			if o >= blockDocs {
				return errors.New("recall: malformed posting block")
			}
			more, err := fn(base | uint32(o))
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

// eachInline calls fn with the postings of a count key's value v, if
// they are inline, until fn returns false (errStop).
func (q *searcher) eachInline(v []byte, fn func(doc uint32) (bool, error)) error {
	n := countOf(v)
	if n > inlineMax {
		return nil
	}
	if len(v) != 4+4*int(n) {
		return errors.New("recall: malformed inline postings")
	}
	for i := 4; i < len(v); i += 4 {
		more, err := fn(binary.BigEndian.Uint32(v[i:]))
		if err != nil {
			return err
		}
		if !more {
			return errStop
		}
	}
	return nil
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
	// A block's postings are sorted by doc, descending: binary search.
	o := slot(doc)
	lo, hi := 0, len(pb.block)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch d := pb.block[m]; {
		case d == o:
			return true
		case d > o:
			lo = m + 1
		default:
			hi = m
		}
	}
	return false
}

// run searches and ranks a parsed query; confirm (optional) re-checks a
// winner's visibility on its strings; minShare drops candidates matching
// less of the query's weight (the brief's floor; 0 keeps all).
func (q *searcher) run(bodies Bodies, pq *parsedQuery, limit int, minShare float64, now time.Time, confirm func(*coldView) bool) ([]ranked, error) {
	live, words := stats(q.kv)
	if live == 0 {
		return nil, nil
	}
	q.weigh(pq, live)
	var next uint32
	if v := q.kv.Get(keyNext); len(v) == 4 {
		next = binary.BigEndian.Uint32(v)
	}
	pq.avgWords = float64(words) / float64(live)
	cands, err := q.search(pq, next)
	if err != nil {
		return nil, err
	}
	if minShare > 0 {
		kept := cands[:0]
		for i := range cands {
			if pq.share(&cands[i]) >= minShare {
				kept = append(kept, cands[i])
			}
		}
		cands = kept
	}
	return q.rank(bodies, cands, pq, limit, now, confirm)
}

// Recall is the explicit recall of `tree-ring recall`: ranked OR retrieval
// (search) over memories that pass the exact filters, are not superseded,
// redacted or expired, and have normal sensitivity unless
// f.IncludeSensitive; scored by factors.queryScore and sorted by score,
// textual factor, created_at (newest first), then id. An empty query or no
// match returns no results and no error. Expiry is evaluated at now (the
// published explicit recall leaves expired rows to `maintain`; we never
// return them).
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
	if pq.toks == 0 {
		return nil, nil
	}
	if err := checkLayout(kv); err != nil {
		return nil, err
	}
	flt, err := f.filter(now)
	if err != nil {
		return nil, err
	}
	s := getScratch()
	defer s.release()
	qs := &searcher{ctx: ctx, kv: kv, s: s, f: &flt}
	top, err := qs.run(bodies, &pq, limit, 0, now, f.exact)
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

// filter is the index filter of f: identity hashes, scope, expiry at now.
func (f *Filter) filter(now time.Time) (filter, error) {
	flt := filter{
		sensitive: f.IncludeSensitive, scope: -1, now: now.UnixMicro(),
		proj: identHash('p', f.Project), agent: identHash('a', f.AgentProfile), wf: identHash('w', f.WorkflowID), sess: identHash('x', f.SessionID),
	}
	if f.Scope != "" {
		if flt.scope = slices.Index(events.MemoryScopes, f.Scope); flt.scope < 0 {
			return filter{}, errors.New("invalid scope")
		}
	}
	flt.exact = flt.proj|flt.agent|flt.wf|flt.sess != 0 || flt.scope >= 0
	if flt.proj != 0 && flt.agent|flt.wf|flt.sess == 0 && flt.scope < 0 {
		flt.shared = groupHash(gShared, flt.proj, 0)
	}
	return flt, nil
}

// exact confirms a result's identities on their strings (the index
// matched hashes).
func (f *Filter) exact(c *coldView) bool {
	return (f.Project == "" || string(c.bytes(cProject)) == f.Project) &&
		(f.AgentProfile == "" || string(c.bytes(cAgentProfile)) == f.AgentProfile) &&
		(f.WorkflowID == "" || string(c.bytes(cWorkflowID)) == f.WorkflowID) &&
		(f.SessionID == "" || string(c.bytes(cSessionID)) == f.SessionID)
}

// ranked is a scored memory. id, and after confirmation cv and body,
// alias the read transaction's pages.
type ranked struct {
	doc     uint32
	id      []byte
	score   float64
	created int64 // searches only: the tie-break after the textual factor
	fact    factors
	cv      coldView
	body    []byte
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

// rankOrder is the result order: score descending, then the textual factor
// (relevance before priors), created_at (newest first), id ascending. The
// startup brief's entries have equal textual factors and no created_at:
// score, then id, as published.
func rankOrder(a, b *ranked) int {
	if c := byScore(a.score, nil, b.score, nil); c != 0 {
		return c
	}
	if c := cmp.Compare(b.fact.textual, a.fact.textual); c != 0 {
		return c
	}
	if c := cmp.Compare(b.created, a.created); c != 0 {
		return c
	}
	return bytes.Compare(a.id, b.id)
}

// insertTop inserts r into top (rankOrder), keeping at most limit entries.
func insertTop(top []ranked, r ranked, limit int) []ranked {
	pos, _ := slices.BinarySearchFunc(top, r, func(a, b ranked) int { return rankOrder(&a, &b) })
	if pos >= limit {
		return top
	}
	if len(top) == limit {
		top = top[:limit-1]
	}
	return slices.Insert(top, pos, r)
}

// beats reports whether (score, id) would enter a full top of the startup
// brief.
func beats(top []ranked, limit int, score float64, id []byte) bool {
	if len(top) < limit {
		return true
	}
	w := &top[limit-1]
	return byScore(score, id, w.score, w.id) < 0
}

// rank scores candidates and returns the best limit in rankOrder,
// confirmed.
//
// It is exact (the same result as scoring every candidate) and lazy: a
// candidate's textual factor is exact from the postings, its priors'
// upper bound comes from the posting's rounded-up copies; candidates are
// visited by decreasing bound and the walk stops when the bound falls
// below the last kept score. A visited candidate reads its hot record for
// the exact priors.
//
// confirm (optional) re-checks a winner's visibility on its strings (the
// index matched hashes); a winner it rejects, or whose body is gone, is
// dropped and the ranking rerun without it.
func (q *searcher) rank(bodies Bodies, cands []posting, pq *parsedQuery, limit int, now time.Time, confirm func(*coldView) bool) ([]ranked, error) {
	nowUS := now.UnixMicro()
	for i := range cands {
		p := &cands[i]
		f := factors{
			textual: p.textual, sal: float64(p.sal) / 255, conf: float64(p.conf) / 255,
			recency: recency(int64(p.minute)*60_000_000, nowUS), auth: authorityValue(p.ringAuth >> 3),
			ringBoost: ringBoost(p.ringAuth&7, pq),
		}
		p.bound = f.queryScore() + 1e-9
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
			r := ranked{doc: p.doc, id: hr.id, created: hr.created, fact: staticFactors(&hr, pq, now)}
			r.fact.textual = p.textual
			r.fact.whole, r.fact.sub = pq.matched(&p)
			if pq.weight > 0 {
				r.fact.whole, r.fact.sub = r.fact.whole/pq.weight, r.fact.sub/pq.weight
			}
			r.fact.lengthNorm = lengthNorm(p.words, pq.avgWords)
			r.score = r.fact.queryScore()
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
		h, err := q.hotOf(r.doc)
		if err != nil {
			return false, err
		}
		cv, err := parseCold(h.cold, &h)
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

// factors are the parts of a score: the textual factor and, for a
// search, its whole-word and sub-word shares of the query's weight and
// the length normalization; the priors.
type factors struct {
	textual, whole, sub, lengthNorm     float64
	sal, conf, recency, auth, ringBoost float64
	startBonus                          float64
}

// score is the published formula, the startup brief's: 0.25·textual +
// 0.25·salience + 0.25·confidence + 0.20·recency + 0.05·source_authority +
// ring_boost (+ the startup ring bonus), summed in that order.
func (f *factors) score() float64 {
	s := 0.25*f.textual + 0.25*f.sal + 0.25*f.conf + 0.20*f.recency + 0.05*f.auth + f.ringBoost
	return s + f.startBonus
}

// prior is the published formula's non-textual part scaled to 0..1 (the
// largest ring boost is 0.20).
func (f *factors) prior() float64 {
	return (0.25*f.sal + 0.25*f.conf + 0.20*f.recency + 0.05*f.auth + f.ringBoost) / 0.95
}

// queryScore is a search's score: textual + priorWeight·prior.
func (f *factors) queryScore() float64 { return f.textual + priorWeight*f.prior() }

// explain is --explain's ranking object: the score is textual_match +
// 0.05·prior; textual_match is (whole_word + sub_word)·length_norm.
func (f *factors) explain() map[string]float64 {
	return map[string]float64{
		"textual_match": f.textual, "whole_word": f.whole, "sub_word": f.sub, "length_norm": f.lengthNorm,
		"prior": f.prior(), "salience": f.sal, "confidence": f.conf,
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
