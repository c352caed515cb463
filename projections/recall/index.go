// Package recall is the recall index of memories: an inline projection
// folded from memory.captured, memory.superseded and memory.forgotten, and
// the queries that read it: explicit recall (Recall), the startup brief and
// task-hint recall of a preflight (Brief), and lookups for the memory
// commands (Lookup, Claimed, Each).
//
// The index holds no memory text. Text lives in the ledger's bodies bucket;
// the index keeps 64-bit token hashes, identifiers, numbers and a digest,
// and reads bodies only for the few results it returns. All visibility,
// sensitivity, supersession, expiry and tombstone filters are applied while
// candidates are gathered, before the candidate limit.
//
// Keys (one projection bucket, byte-ordered; doc is a 4-byte big-endian
// ordinal assigned in fold order, so a larger doc is a newer memory):
//
//	'#' "next"                    -> next doc
//	'#' "layout"                  -> Version (4), written with the first doc
//	'#' "live", '#' "words"       -> memories with postings (8), the sum of their word counts (8): BM25's N and average length
//	'm' id                        -> doc
//	'd' doc                       -> hot record (fixed layout, id: see hot), then the cold record (the rest of the payload and the state: see cold.go)
//	't' token(8)                  -> posting count(4), then, while the count is at most inlineMax (16), the postings: doc(4) each, newest first
//	't' token(8) ^range(4)        -> posting block (count above inlineMax): the token's postings of docs range*64 … range*64+63, newest first
//	'f' doc>>10 (4)               -> factor block: the static score factors of the 1,024 docs' indexed memories (see factorLen)
//
// A token's count sorts just before its blocks, so it shares a leaf with
// the newest of them: a capture's rare tokens (most of a memory's new
// keys, at random places) rewrite one page each, not two. Most tokens are
// rare (a few postings in as many ranges): theirs are in the count key
// and they have no blocks, one key instead of one plus one per range
// (bbolt adds 16 bytes to each; layout 5 spent 30 bytes on a 1-byte
// posting). The form is a function of the count alone: a capture that
// takes a token past inlineMax moves its postings to blocks, a removal
// that brings it back moves them inline again, so an index does not
// depend on history (a re-fold that never indexed a since-deleted body
// writes the same keys).
//
// A token is a word's hash or a stem's (stemHash: a word whose stem
// differs from it is also posted under its stem, the sub-word match).
//
//	's' group(8) ringclass(1) ^sal ^conf ^created id -> doc(4) authority(1) flags(1) ring(1) expires(8)
//	'S' group(8) ringclass(1) ^sal ^conf -> run summary: expiring(4), entries per authority code (8×4)
//	'o' claim(32)                 -> memory id (operation_id idempotency)
//
// A posting is one byte: its doc's place in the block's range (doc & 63;
// the key holds the range). What a query needs of a posting's memory
// without reading its hot record is kept once per memory, in the factor
// block of its 1,024 docs at slot doc & 1023 (factorLen bytes: flags(1)
// group(8), then a rounded-up copy of its static score factors: salience
// and confidence in 1/255 steps (1 each), ring and authority (1),
// created_at in minutes since 1970 (4), and its number of distinct words
// (2, BM25's document length)). A search reads each factor block once:
// its candidates, from many rare tokens, fall all over the doc space, and
// with blocks of 64 docs it read nearly every one of them (1,562 of 1,563
// at 100k for a task hint) at a Get each. Queries compute the textual
// score from postings alone and the priors' upper bounds from the factors;
// they read a hot record only when the memory can still enter the
// results, a body only for a result. (Layout 4 kept those 17 bytes in
// each of a memory's ~29 postings.)
//
// A token's postings are grouped in blocks by doc range, newest range
// first, so a prefix walk visits memories newest first. A capture updates
// one block value per token rather than inserting a key per posting: bbolt
// does not split nodes inside a transaction, and one key per posting made
// a bulk import quadratic. A posting's block depends on its doc only, not
// on history, so a re-fold that never saw a since-deleted body produces
// the same blocks.
//
// A run is a group's 's' entries with one ring class, salience and
// confidence (a key prefix): they differ only in created_at and id, so in
// key order their startup scores fall with their recency but for the
// source authority. Its 'S' summary lets the startup brief count
// candidates and bound scores a run at a time, and read only the entries
// of the runs that can reach its top.
//
// Postings and 's' entries exist only for live memories (not superseded,
// redacted or deleted). 's' entries, the startup brief's pre-sorted
// candidate lists, exist only for normal-sensitivity memories with a
// project, one list per visibility group: (project, shared scopes),
// (project, agent), (project, workflow), (project, session).
//
// The fold is deterministic (no clock: expiry and recency are evaluated by
// the queries against the `now` they are given) and uses only Get, Put and
// Delete, but for one prefix walk of a token's blocks when a removal
// brings it back to inlineMax postings, so a verify re-fold into memory
// costs what the live fold costs.
package recall

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/events/strictjson"
)

// KV and Bodies are the fold's key/value space and memory bodies
// (events/fold; this package does not import its parent, which registers
// it).
type (
	KV     = fold.KV
	Bodies = fold.Bodies
)

// Name is the projection's bucket name.
const Name = "recall"

// Version changes whenever the fold or the key layout changes (2: binary
// cold records; 3: stem postings, word counts, no text signature; 4: a
// token's count beside its blocks; 5: one-byte postings, factors once
// per memory; 6: a rare token's postings inline in its count key).
const Version = 6

// Handles reports whether the fold uses events of type t.
func Handles(t string) bool {
	return t == events.TypeMemoryCaptured || t == events.TypeMemorySuperseded || t == events.TypeMemoryForgotten
}

const (
	pNext  = '#'
	pMem   = 'm'
	pHot   = 'd'
	pPost  = 't'
	pStart = 's'
	pClaim = 'o'
	pFact  = 'f'
	pRun   = 'S'
)

// Posting blocks.
const (
	blockShift = 6 // a block holds the postings of 64 consecutive docs
	blockDocs  = 1 << blockShift
	pCount     = pPost // 't' token(8), shorter than a block key
	inlineMax  = 16    // a token with at most this many postings keeps them in its count key
	factorLen  = 18    // flags(1) group(8) sal(1) conf(1) ring|auth(1) minute(4) words(2)
	factShift  = 10    // a factor block holds the entries of 1,024 consecutive docs
)

var (
	keyNext   = []byte("#next")
	keyLayout = []byte("#layout")
	keyLive   = []byte("#live")
	keyWords  = []byte("#words")
)

// ErrStaleIndex is returned by the queries when the index was built by a
// binary with another key layout (Version) and not rebuilt since: a
// read-only open does not refold projections, the next writing command
// (or `tree-ring projections rebuild`) does.
var ErrStaleIndex = errors.New("recall index was built by another tree-ring version; run `tree-ring projections rebuild`")

// checkLayout refuses an index of another layout. An index that never
// folded a capture is empty in every layout.
func checkLayout(kv KV) error {
	if v := kv.Get(keyLayout); len(v) == 4 && binary.BigEndian.Uint32(v) == Version || kv.Get(keyNext) == nil {
		return nil
	}
	return ErrStaleIndex
}

// Hot record flags (also used in posting and 's' values).
const (
	fSensitive  = 1 << 0 // sensitivity is not normal
	fSuperseded = 1 << 1
	fRedacted   = 1 << 2
	fExpires    = 1 << 3 // expires_at is set
	fIndexed    = 1 << 4 // factor entries only: the slot holds a memory's factors
)

// hot is the part of a memory that queries read per candidate.
//
//	0 flags, 1 ring, 2 scope, 3 authority, 4 id length (uint16), 6 words (uint16),
//	8 salience, 16 confidence (float64 bits), 24 created, 32 expires (unix µs),
//	40 project, 48 agent, 56 workflow, 64 session (identity hashes),
//	72 body SHA-256 (32), 104 id, then the cold record (cold.go): one key
//	per memory, the cold part read only for results
//
// It holds no token list (layout 4 kept one, 8 bytes a token, a third of
// the record): a deindex re-tokenizes the body, which is present when the
// memory has postings (see deindex).
type hot struct {
	flags, ring, scope, auth byte
	words                    uint16 // distinct words indexed; 0 when not indexed
	sal, conf                float64
	created, expires         int64
	proj, agent, wf, sess    uint64
	// body (32 bytes), id and cold alias the stored value once decoded.
	body, id, cold []byte
}

const hotFixed = 104

func (h *hot) encode() []byte {
	b := make([]byte, hotFixed, hotFixed+len(h.id))
	b[0], b[1], b[2], b[3] = h.flags, h.ring, h.scope, h.auth
	binary.BigEndian.PutUint16(b[4:], uint16(len(h.id)))
	binary.BigEndian.PutUint16(b[6:], h.words)
	binary.BigEndian.PutUint64(b[8:], math.Float64bits(h.sal))
	binary.BigEndian.PutUint64(b[16:], math.Float64bits(h.conf))
	binary.BigEndian.PutUint64(b[24:], uint64(h.created))
	binary.BigEndian.PutUint64(b[32:], uint64(h.expires))
	binary.BigEndian.PutUint64(b[40:], h.proj)
	binary.BigEndian.PutUint64(b[48:], h.agent)
	binary.BigEndian.PutUint64(b[56:], h.wf)
	binary.BigEndian.PutUint64(b[64:], h.sess)
	copy(b[72:], h.body)
	return append(b, h.id...)
}

func decodeHot(b []byte) (hot, bool) {
	if len(b) < hotFixed {
		return hot{}, false
	}
	idEnd := hotFixed + int(binary.BigEndian.Uint16(b[4:]))
	if idEnd > len(b) {
		return hot{}, false
	}
	h := hot{
		flags: b[0], ring: b[1], scope: b[2], auth: b[3], words: binary.BigEndian.Uint16(b[6:]),
		sal:     math.Float64frombits(binary.BigEndian.Uint64(b[8:])),
		conf:    math.Float64frombits(binary.BigEndian.Uint64(b[16:])),
		created: int64(binary.BigEndian.Uint64(b[24:])),
		expires: int64(binary.BigEndian.Uint64(b[32:])),
		proj:    binary.BigEndian.Uint64(b[40:]),
		agent:   binary.BigEndian.Uint64(b[48:]),
		wf:      binary.BigEndian.Uint64(b[56:]),
		sess:    binary.BigEndian.Uint64(b[64:]),
		id:      b[hotFixed:idEnd],
		cold:    b[idEnd:],
	}
	h.body = b[72:104]
	return h, true
}

// cold is the full state of a memory minus its text.
type cold struct {
	events.MemoryCaptured
	SupersededBy string `json:"superseded_by,omitempty"`
	// Claim is the hex operation claim this memory made, kept through a
	// redaction (which nulls operation_id) so that a delete can release it.
	Claim string `json:"claim,omitempty"`
}

// identHash hashes an identity value; "" (null) hashes to 0.
func identHash(kind byte, v string) uint64 {
	if v == "" {
		return 0
	}
	h := sha256.New()
	h.Write([]byte{kind})
	h.Write([]byte(v))
	var sum [32]byte
	h.Sum(sum[:0])
	return binary.BigEndian.Uint64(sum[:8]) | 1
}

// Visibility group kinds.
const (
	gShared   = 's'
	gAgent    = 'a'
	gWorkflow = 'w'
	gSession  = 'x'
)

// groupHash is the visibility group of (kind, project hash, identity hash).
func groupHash(kind byte, proj, ident uint64) uint64 {
	var b [17]byte
	b[0] = kind
	binary.BigEndian.PutUint64(b[1:], proj)
	binary.BigEndian.PutUint64(b[9:], ident)
	sum := sha256.Sum256(b[:])
	return binary.BigEndian.Uint64(sum[:8]) | 1
}

// sharedScopes are visible to every worker of the project; the
// agent/workflow/session fields of such a memory are provenance only.
func isShared(scope string) bool {
	switch scope {
	case "global", "project", "tool", "eval", "manual", "dox", "revolve":
		return true
	}
	return false
}

// group returns the visibility group of a memory, 0 for none (no project).
func (h *hot) group() uint64 {
	if h.proj == 0 {
		return 0
	}
	switch scopeName(h.scope) {
	case "agent":
		return groupHash(gAgent, h.proj, h.agent)
	case "workflow":
		return groupHash(gWorkflow, h.proj, h.wf)
	case "session":
		return groupHash(gSession, h.proj, h.sess)
	default:
		return groupHash(gShared, h.proj, 0)
	}
}

// Source authority by source.type, as published.
var authorities = []struct {
	typ string
	v   float64
}{{"user", 1.0}, {"contract", 0.9}, {"eval", 0.8}, {"file", 0.7}, {"tool", 0.6}, {"summary", 0.5}, {"manual", 0.4}}

const authOther = 7

func authorityCode(sourceType string) byte {
	for i, a := range authorities {
		if a.typ == sourceType {
			return byte(i)
		}
	}
	return authOther
}

func authorityValue(code byte) float64 {
	if int(code) < len(authorities) {
		return authorities[code].v
	}
	return 0.3
}

func scopeName(code byte) string {
	if int(code) < len(events.MemoryScopes) {
		return events.MemoryScopes[code]
	}
	return ""
}

func ringCode(ring string) byte   { return byte(slices.Index(events.MemoryRings, ring)) }
func scopeCode(scope string) byte { return byte(slices.Index(events.MemoryScopes, scope)) }

const (
	ringScar      = 4 // index in events.MemoryRings
	ringHeartwood = 3
	ringSeed      = 5
)

// ringClass is the startup order: scar, heartwood, everything else.
func ringClass(ring byte) byte {
	switch ring {
	case ringScar:
		return 0
	case ringHeartwood:
		return 1
	}
	return 2
}

func micros(ts string) int64 {
	t, err := events.ParseMemoryTime(ts)
	if err != nil {
		return 0 // unreachable: payloads are checked on intake
	}
	return t.UnixMicro()
}

func hotOf(p *events.MemoryCaptured, flags byte) hot {
	h := hot{
		flags: flags, ring: ringCode(p.Ring), scope: scopeCode(p.Scope), auth: authorityCode(p.SourceType),
		sal: p.Salience, conf: p.Confidence, created: micros(p.CreatedAt),
		proj: identHash('p', p.Project), agent: identHash('a', p.AgentProfile),
		wf: identHash('w', p.WorkflowID), sess: identHash('x', p.SessionID), id: []byte(p.MemoryID),
	}
	h.body = make([]byte, 32)
	hex.Decode(h.body, []byte(p.BodySHA256)) // checked on intake: 64 hex
	if p.Sensitivity != memory.SensitivityNormal {
		h.flags |= fSensitive
	}
	if p.ExpiresAt != "" {
		h.flags |= fExpires
		h.expires = micros(p.ExpiresAt)
	}
	return h
}

func docBytes(doc uint32) []byte { return binary.BigEndian.AppendUint32(nil, doc) }

func key(prefix byte, parts ...[]byte) []byte {
	n := 1
	for _, p := range parts {
		n += len(p)
	}
	k := make([]byte, 1, n)
	k[0] = prefix
	for _, p := range parts {
		k = append(k, p...)
	}
	return k
}

func u64b(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func blockKey(tok uint64, doc uint32) []byte {
	k := make([]byte, 13)
	k[0] = pPost
	binary.BigEndian.PutUint64(k[1:], tok)
	binary.BigEndian.PutUint32(k[9:], ^(doc >> blockShift))
	return k
}

// factorKey is the key of the factor block of doc's range.
func factorKey(doc uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{pFact}, doc>>factShift)
}

// factorOffset is where doc's entry is in its factor block.
func factorOffset(doc uint32) int { return int(doc&(1<<factShift-1)) * factorLen }

// slot is doc's place in its posting and factor blocks.
func slot(doc uint32) byte { return byte(doc & (blockDocs - 1)) }

// startKey is the 's' key of a memory in its group: it sorts as the
// published startup order (scar, heartwood, other; salience, confidence and
// created_at descending; id ascending). A -0 (an imported ledger's) is
// keyed as 0, the value it equals: ^bits would put it first.
func startKey(group uint64, h *hot) []byte {
	k := make([]byte, 0, 1+8+1+24+len(h.id))
	k = append(k, pStart)
	k = binary.BigEndian.AppendUint64(k, group)
	k = append(k, ringClass(h.ring))
	k = binary.BigEndian.AppendUint64(k, ^math.Float64bits(h.sal+0))
	k = binary.BigEndian.AppendUint64(k, ^math.Float64bits(h.conf+0))
	k = binary.BigEndian.AppendUint64(k, ^(uint64(h.created) ^ 1<<63))
	return append(k, h.id...)
}

const (
	startFixed  = 1 + 8 + 1 + 24 // prefix, group, class, sal, conf, created
	startRunLen = 1 + 8 + 1 + 16 // prefix, group, class, sal, conf: a run's prefix
	runValueLen = 4 + 4*(authOther+1)
)

// addRun adds d (1 or -1) to the summary of h's run in group g; a run
// without entries has no summary, as in a re-fold that never saw them.
func addRun(kv KV, g uint64, h *hot, d int) error {
	k := startKey(g, h)[:startRunLen]
	k[0] = pRun
	v := make([]byte, runValueLen)
	if cur := kv.Get(k); len(cur) == runValueLen {
		copy(v, cur)
	}
	add := func(off int) {
		binary.BigEndian.PutUint32(v[off:], uint32(int64(binary.BigEndian.Uint32(v[off:]))+int64(d)))
	}
	if h.flags&fExpires != 0 {
		add(0)
	}
	add(4 + 4*int(min(h.auth, authOther)))
	for i := 4; i < runValueLen; i += 4 {
		if binary.BigEndian.Uint32(v[i:]) != 0 {
			return kv.Put(k, v)
		}
	}
	return kv.Delete(k)
}

const startValueLen = 15

func startValue(doc uint32, h *hot) []byte {
	v := make([]byte, startValueLen)
	binary.BigEndian.PutUint32(v, doc)
	v[4] = h.auth
	v[5] = h.flags
	v[6] = h.ring
	binary.BigEndian.PutUint64(v[7:], uint64(h.expires))
	return v
}

// Apply folds one memory event. It reads the payload value the event's
// validation decoded when the event carries it (events.VerifiedPayload:
// built by events.Factory in this process, or imported), else decodes the
// stored payload with strictjson (three times faster than encoding/json
// here): every stored payload passed the same strict decoding into the
// same struct when it was appended.
func Apply(kv KV, bodies Bodies, e *events.Envelope) error {
	switch e.Type {
	case events.TypeMemoryCaptured:
		p, err := payload[events.MemoryCaptured](e)
		if err != nil {
			return err
		}
		return applyCaptured(kv, bodies, p)
	case events.TypeMemorySuperseded:
		p, err := payload[events.MemorySuperseded](e)
		if err != nil {
			return err
		}
		return applySuperseded(kv, bodies, p)
	case events.TypeMemoryForgotten:
		p, err := payload[events.MemoryForgotten](e)
		if err != nil {
			return err
		}
		return applyForgotten(kv, bodies, p, events.FormatMemoryTime(e.RecordedAt))
	}
	return nil
}

// payload is e's payload as a *T (see Apply). The value may be shared
// with the envelope: the fold never modifies it.
func payload[T any](e *events.Envelope) (*T, error) {
	if v, ok := events.VerifiedPayload(e); ok {
		if p, ok := v.(*T); ok {
			return p, nil
		}
	}
	p := new(T)
	if err := strictjson.Unmarshal(e.Payload, p); err != nil {
		return nil, fmt.Errorf("recall: %s: %w", e.Type, err)
	}
	return p, nil
}

func nextDoc(kv KV) (uint32, error) {
	var doc uint32
	if v := kv.Get(keyNext); len(v) == 4 {
		doc = binary.BigEndian.Uint32(v)
	}
	if doc == math.MaxUint32 {
		return 0, fmt.Errorf("recall: index is full")
	}
	if doc == 0 {
		if err := kv.Put(keyLayout, docBytes(Version)); err != nil {
			return 0, err
		}
	}
	return doc, kv.Put(keyNext, docBytes(doc+1))
}

func applyCaptured(kv KV, bodies Bodies, p *events.MemoryCaptured) error {
	mk := key(pMem, []byte(p.MemoryID))
	if kv.Get(mk) != nil {
		return nil // the first capture of an id wins; commands never append a second
	}
	doc, err := nextDoc(kv)
	if err != nil {
		return err
	}
	var flags byte
	if p.Redacted {
		flags |= fRedacted
	}
	h := hotOf(p, flags)
	c := cold{MemoryCaptured: *p}
	if p.OperationID != "" {
		claim := memory.OperationClaim(p.Project, p.WorkflowID, p.AgentProfile, p.OperationID)
		c.Claim = hex.EncodeToString(claim[:])
		ck := key(pClaim, claim[:])
		if kv.Get(ck) == nil { // a claim is one-way: the first memory keeps it
			if err := kv.Put(ck, []byte(p.MemoryID)); err != nil {
				return err
			}
		}
	}
	if err := kv.Put(mk, docBytes(doc)); err != nil {
		return err
	}
	if !p.Redacted {
		var toks []uint64
		if bodies != nil {
			if raw := bodies.Body(p.BodySHA256); raw != nil {
				b, err := memory.ParseBody(raw)
				if err != nil {
					return fmt.Errorf("recall: %s: %w", p.MemoryID, err)
				}
				toks, h.words = bodyTokens(&b)
			}
		}
		// A body deleted later (forget --mode delete) is absent on a
		// re-fold: the memory is then indexed without tokens, and the
		// forget that follows removes it, so the end state is the same as
		// the live fold's.
		if err := index(kv, doc, &h, toks); err != nil {
			return err
		}
	}
	return putState(kv, docBytes(doc), &h, &c)
}

// bodyTokens returns the sorted distinct token hashes of the indexed text
// (summary, details, tags and source ref, the published FTS columns; the
// ref is scored like the rest), words and stems, and the number of
// distinct words (capped at 65,535).
func bodyTokens(b *memory.BodyView) ([]uint64, uint16) {
	var words, stems []uint64
	var buf, st []byte
	add := func(tok []byte) {
		words = append(words, tokenHash(string(tok)))
		if st = stem(st[:0], tok); st != nil && string(st) != string(tok) {
			stems = append(stems, stemHash(st))
		}
	}
	buf = eachTokenText(b.Summary, buf, add)
	buf = eachTokenText(b.Details, buf, add)
	b.EachTag(func(t []byte) { buf = eachTokenText(t, buf, add) })
	eachTokenText(b.SourceRef, buf, add)
	slices.Sort(words)
	words = slices.Compact(words)
	n := uint16(min(len(words), math.MaxUint16))
	toks := append(words, stems...)
	slices.Sort(toks)
	return slices.Compact(toks), n
}

func putState(kv KV, db []byte, h *hot, c *cold) error {
	return kv.Put(key(pHot, db), append(h.encode(), encodeCold(c)...))
}

// index adds a live memory's postings and startup entry; the caller
// stores h.
func index(kv KV, doc uint32, h *hot, toks []uint64) error {
	g := h.group()
	for _, t := range toks {
		if err := addPosting(kv, t, doc); err != nil {
			return err
		}
	}
	if len(toks) > 0 {
		f := encodeFactors(h.flags&(fSensitive|fExpires), g, h)
		if err := setFactors(kv, doc, &f); err != nil {
			return err
		}
		if err := addStat(kv, 1, int64(h.words)); err != nil {
			return err
		}
	}
	if g != 0 && h.flags&fSensitive == 0 {
		if err := addRun(kv, g, h, 1); err != nil {
			return err
		}
		return kv.Put(startKey(g, h), startValue(doc, h))
	}
	return nil
}

// deindex removes a memory's postings and startup entry. It is
// idempotent: a memory has postings while its factor entry is there.
//
// Its postings are found by tokenizing its body again, so the body must be
// present when a memory with postings is superseded or forgotten: a forget
// deletes the body after its event is folded (cmd/tree-ring forgetIn), and
// a re-fold that finds the body gone never indexed the memory.
func deindex(kv KV, bodies Bodies, doc uint32, h *hot) error {
	if hasFactors(kv, doc) {
		var raw []byte
		if bodies != nil {
			raw = bodies.Body(hex.EncodeToString(h.body))
		}
		if raw == nil {
			return fmt.Errorf("recall: %s: the body of an indexed memory is missing, so are the keys of its postings", h.id)
		}
		b, err := memory.ParseBody(raw)
		if err != nil {
			return fmt.Errorf("recall: %s: %w", h.id, err)
		}
		toks, _ := bodyTokens(&b)
		for _, t := range toks {
			if err := removePosting(kv, t, doc); err != nil {
				return err
			}
		}
		if err := setFactors(kv, doc, nil); err != nil {
			return err
		}
		if err := addStat(kv, -1, -int64(h.words)); err != nil {
			return err
		}
	}
	if g := h.group(); g != 0 && kv.Get(startKey(g, h)) != nil {
		if err := addRun(kv, g, h, -1); err != nil {
			return err
		}
		return kv.Delete(startKey(g, h))
	}
	return nil
}

// stats reads the number of memories with postings and the sum of their
// word counts.
func stats(kv KV) (live, words uint64) {
	if v := kv.Get(keyLive); len(v) == 8 {
		live = binary.BigEndian.Uint64(v)
	}
	if v := kv.Get(keyWords); len(v) == 8 {
		words = binary.BigEndian.Uint64(v)
	}
	return live, words
}

func addStat(kv KV, live, words int64) error {
	l, w := stats(kv)
	if err := putStat(kv, keyLive, int64(l)+live); err != nil {
		return err
	}
	return putStat(kv, keyWords, int64(w)+words)
}

// putStat stores a counter; zero is no key, as in a re-fold that never
// indexed the memories that were removed (a redacted or deleted body).
func putStat(kv KV, k []byte, v int64) error {
	if v <= 0 {
		return kv.Delete(k)
	}
	return kv.Put(k, binary.BigEndian.AppendUint64(nil, uint64(v)))
}

// countOf is the posting count in a count key's value (0: no key).
func countOf(v []byte) uint32 {
	if len(v) < 4 {
		return 0
	}
	return binary.BigEndian.Uint32(v)
}

// inlineValue is the count key's value of a token with docs (newest
// first) inline: count(4) then the docs.
func inlineValue(docs []uint32) []byte {
	v := binary.BigEndian.AppendUint32(make([]byte, 0, 4+4*len(docs)), uint32(len(docs)))
	for _, d := range docs {
		v = binary.BigEndian.AppendUint32(v, d)
	}
	return v
}

// inlineDocs appends the docs of an inline count value to docs.
func inlineDocs(docs []uint32, v []byte) ([]uint32, error) {
	if len(v) == 0 {
		return docs, nil
	}
	n := countOf(v)
	if n == 0 || n > inlineMax || len(v) != 4+4*int(n) {
		return docs, errors.New("recall: malformed inline postings")
	}
	for i := 4; i < len(v); i += 4 {
		docs = append(docs, binary.BigEndian.Uint32(v[i:]))
	}
	return docs, nil
}

// addPosting adds doc as the token's newest posting (docs only grow): in
// its count key while the token has at most inlineMax, else first in its
// block, the inline ones moved to their blocks first.
func addPosting(kv KV, tok uint64, doc uint32) error {
	if b, ok := kv.(*batch); ok {
		return b.addPosting(tok, doc)
	}
	ck := key(pCount, u64b(tok))
	cur := kv.Get(ck)
	n := countOf(cur)
	if n <= inlineMax {
		docs, err := inlineDocs([]uint32{doc}, cur)
		if err != nil {
			return err
		}
		if n < inlineMax {
			return kv.Put(ck, inlineValue(docs))
		}
		for i := len(docs) - 1; i >= 0; i-- { // oldest first: each goes first in its block
			if err := putBlockPosting(kv, tok, docs[i]); err != nil {
				return err
			}
		}
	} else if err := putBlockPosting(kv, tok, doc); err != nil {
		return err
	}
	return kv.Put(ck, binary.BigEndian.AppendUint32(make([]byte, 0, 4), n+1))
}

// putBlockPosting puts doc first in its block of the token.
func putBlockPosting(kv KV, tok uint64, doc uint32) error {
	bk := blockKey(tok, doc)
	cur := kv.Get(bk)
	v := make([]byte, 0, 1+len(cur))
	return kv.Put(bk, append(append(v, slot(doc)), cur...))
}

// removePosting drops doc from the token's postings. A token left with
// inlineMax postings gets them inline again, its blocks deleted: the form
// is a function of the count, as in a re-fold that never indexed the
// removed memory.
func removePosting(kv KV, tok uint64, doc uint32) error {
	if b, ok := kv.(*batch); ok {
		return b.removePosting(tok, doc)
	}
	ck := key(pCount, u64b(tok))
	cur := kv.Get(ck)
	n := countOf(cur)
	if n <= inlineMax {
		docs, err := inlineDocs(nil, cur)
		if err != nil {
			return err
		}
		i := slices.Index(docs, doc)
		if i < 0 {
			return fmt.Errorf("recall: posting of doc %d missing from its token", doc)
		}
		if n == 1 {
			return kv.Delete(ck)
		}
		return kv.Put(ck, inlineValue(slices.Delete(docs, i, i+1)))
	}
	bk := blockKey(tok, doc)
	cur = kv.Get(bk)
	i := bytes.IndexByte(cur, slot(doc))
	if i < 0 {
		return fmt.Errorf("recall: posting of doc %d missing from its block", doc)
	}
	var err error
	if len(cur) == 1 {
		err = kv.Delete(bk)
	} else {
		rest := make([]byte, 0, len(cur)-1)
		err = kv.Put(bk, append(append(rest, cur[:i]...), cur[i+1:]...))
	}
	if err != nil {
		return err
	}
	if n-1 > inlineMax {
		return kv.Put(ck, binary.BigEndian.AppendUint32(make([]byte, 0, 4), n-1))
	}
	docs, blocks, err := blockedPostings(kv, tok)
	if err != nil {
		return err
	}
	for _, k := range blocks {
		if err := kv.Delete(k); err != nil {
			return err
		}
	}
	return kv.Put(ck, inlineValue(docs))
}

// blockedPostings reads a blocked token's postings, newest first, and the
// keys of its blocks.
func blockedPostings(kv KV, tok uint64) (docs []uint32, blocks [][]byte, err error) {
	err = kv.ForEach(key(pPost, u64b(tok)), func(k, v []byte) error {
		if len(k) != blockKeyLen {
			return nil // the token's count
		}
		base := ^binary.BigEndian.Uint32(k[9:]) << blockShift
		for _, o := range v {
			docs = append(docs, base|uint32(o))
		}
		blocks = append(blocks, bytes.Clone(k))
		return nil
	})
	return docs, blocks, err
}

// encodeFactors builds a memory's factor entry; its score factors round
// up, so a score computed from them bounds the exact one from above.
func encodeFactors(flags byte, group uint64, h *hot) [factorLen]byte {
	var e [factorLen]byte
	e[0] = flags | fIndexed
	binary.BigEndian.PutUint64(e[1:], group)
	e[9] = unitUp(h.sal)
	e[10] = unitUp(h.conf)
	e[11] = h.ring&7 | h.auth<<3
	binary.BigEndian.PutUint32(e[12:], minuteUp(h.created))
	binary.BigEndian.PutUint16(e[16:], h.words)
	return e
}

// setFactors stores doc's factor entry, or clears it (e nil).
func setFactors(kv KV, doc uint32, e *[factorLen]byte) error {
	if b, ok := kv.(*batch); ok {
		b.setFactors(doc, e)
		return nil
	}
	k := factorKey(doc)
	v := withFactors(kv.Get(k), doc, e)
	if len(v) == 0 {
		return kv.Delete(k)
	}
	return kv.Put(k, v)
}

// hasFactors reports whether doc has a factor entry (it has postings).
func hasFactors(kv KV, doc uint32) bool {
	v, off := kv.Get(factorKey(doc)), factorOffset(doc)
	return off+factorLen <= len(v) && v[off]&fIndexed != 0
}

// withFactors returns a copy of the factor block cur with doc's slot set
// to e, or cleared (e nil). A block ends at its last indexed slot, so it
// depends on the live memories only, not on history (a re-fold that never
// indexed a since-deleted memory writes the same bytes).
func withFactors(cur []byte, doc uint32, e *[factorLen]byte) []byte {
	return putFactors(append(make([]byte, 0, max(len(cur), factorOffset(doc)+factorLen)), cur...), doc, e)
}

// putFactors is withFactors in place: v is the caller's own.
func putFactors(v []byte, doc uint32, e *[factorLen]byte) []byte {
	off := factorOffset(doc)
	if n := off + factorLen; n > len(v) {
		old := len(v)
		v = slices.Grow(v, n-old)[:n]
		clear(v[old:])
	}
	if e != nil {
		copy(v[off:], e[:])
	} else {
		clear(v[off : off+factorLen])
	}
	for len(v) >= factorLen && v[len(v)-factorLen]&fIndexed == 0 {
		v = v[:len(v)-factorLen]
	}
	return v
}

func unitUp(v float64) byte { return byte(min(math.Ceil(v*255+1e-9), 255)) }

func minuteUp(us int64) uint32 {
	if us <= 0 {
		return 0 // before 1970: minute 0 is later, so still an upper bound of recency
	}
	return uint32(min((us+59_999_999)/60_000_000, math.MaxUint32))
}

// load reads the doc, hot and cold records of id.
func load(kv KV, id string) (uint32, hot, cold, bool, error) {
	v := kv.Get(key(pMem, []byte(id)))
	if len(v) != 4 {
		return 0, hot{}, cold{}, false, nil
	}
	doc := binary.BigEndian.Uint32(v)
	h, ok := decodeHot(kv.Get(key(pHot, v)))
	if !ok {
		return 0, hot{}, cold{}, false, fmt.Errorf("recall: %s: missing hot record", id)
	}
	cv, err := parseCold(h.cold, &h)
	if err != nil {
		return 0, hot{}, cold{}, false, fmt.Errorf("recall: %s: %w", id, err)
	}
	return doc, h, cv.cold(), true, nil
}

func applySuperseded(kv KV, bodies Bodies, p *events.MemorySuperseded) error {
	doc, h, c, ok, err := load(kv, p.MemoryID)
	if err != nil || !ok || h.flags&fRedacted != 0 {
		return err // unknown or redacted targets are left alone
	}
	if err := deindex(kv, bodies, doc, &h); err != nil {
		return err
	}
	h.flags |= fSuperseded
	c.SupersededBy = p.SupersededBy
	return putState(kv, docBytes(doc), &h, &c)
}

func applyForgotten(kv KV, bodies Bodies, p *events.MemoryForgotten, at string) error {
	doc, h, c, ok, err := load(kv, p.MemoryID)
	if err != nil || !ok {
		return err
	}
	if err := deindex(kv, bodies, doc, &h); err != nil {
		return err
	}
	db := docBytes(doc)
	if p.Mode == events.ForgetRedact {
		// The published redaction keeps the row as a tombstone and keeps
		// its operation claim.
		c.MemoryCaptured = memory.RedactPayload(c.MemoryCaptured, p.RedactedSHA256, at)
		c.SupersededBy = ""
		nh := hotOf(&c.MemoryCaptured, fRedacted)
		return putState(kv, db, &nh, &c)
	}
	// Delete: the row goes, and so do its claims (the only way to release
	// one, as published).
	if c.Claim != "" {
		raw, err := hex.DecodeString(c.Claim)
		if err != nil {
			return fmt.Errorf("recall: %s: claim: %w", p.MemoryID, err)
		}
		ck := key(pClaim, raw)
		if string(kv.Get(ck)) == p.MemoryID {
			if err := kv.Delete(ck); err != nil {
				return err
			}
		}
	}
	for _, k := range [][]byte{key(pMem, []byte(p.MemoryID)), key(pHot, db)} {
		if err := kv.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
