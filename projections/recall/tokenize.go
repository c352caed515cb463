package recall

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Two tokenizers, as in the published implementation:
//
//   - index tokens (FTS5 unicode61): maximal runs of letters, numbers,
//     combining marks and private-use characters, lowercased. Everything
//     else, including '_', separates. Unlike unicode61 we do not strip
//     diacritics ("café" and "cafe" are different tokens).
//   - query terms (the scorer's \w+): maximal runs of letters, marks,
//     decimal and letter numbers, connector punctuation ('_') and the
//     zero-width joiners, lowercased. A term such as "foo_bar" searches as
//     the AND of its index tokens ("foo", "bar"); the published FTS phrase
//     would also require them to be adjacent.

func isTokenRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) || unicode.Is(unicode.Co, r)
}

func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
	}
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) || unicode.Is(unicode.Nl, r) ||
		unicode.Is(unicode.Pc, r) || r == 0x200C || r == 0x200D
}

// FNV-1a, 64 bit: token hashes key the posting lists. The index holds
// hashes, never token text.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// eachToken calls fn with the hash of every index token of s, in order.
func eachToken(s []byte, fn func(h uint64)) {
	var h uint64
	in := false
	var buf [utf8.UTFMax]byte
	for i := 0; i < len(s); {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRune(s[i:])
		}
		i += n
		if !isTokenRune(r) {
			if in {
				fn(h)
				in = false
			}
			continue
		}
		if !in {
			h, in = fnvOffset, true
		}
		if r < utf8.RuneSelf {
			c := byte(r)
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			h = (h ^ uint64(c)) * fnvPrime
			continue
		}
		m := utf8.EncodeRune(buf[:], unicode.ToLower(r))
		for _, c := range buf[:m] {
			h = (h ^ uint64(c)) * fnvPrime
		}
	}
	if in {
		fn(h)
	}
}

// tokenHash is the hash of one already lowercased token.
func tokenHash(tok string) uint64 {
	var h uint64 = fnvOffset
	for i := 0; i < len(tok); i++ {
		h = (h ^ uint64(tok[i])) * fnvPrime
	}
	return h
}

// Tokenize returns the lowercased index tokens of s (for tests and tools;
// the index uses eachToken, which hashes without allocating).
func Tokenize(s string) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		if !isTokenRune(r) {
			flush()
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	flush()
	return out
}

// Terms returns the scorer's query terms of s: \w+ runs, lowercased.
func Terms(s string) []string {
	var out []string
	start := -1
	for i, r := range s {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, strings.ToLower(s[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, strings.ToLower(s[start:]))
	}
	return out
}

// Published word lists: the query intents of the ring boost.
var (
	failureTerms   = set("error", "failure", "regression", "bug", "rejected", "rollback", "stale", "conflict", "security", "privacy", "mistake")
	heartwoodTerms = set("preference", "rule", "constraint", "decision", "durable")
	seedTerms      = set("planning", "roadmap", "future", "alternative", "experiment", "explore")
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// eachTokenText calls fn with every index token of s, lowercased into buf
// (reused: fn must not keep the slice), in order. tokenHash of it is
// eachToken's hash.
func eachTokenText(s, buf []byte, fn func(tok []byte)) []byte {
	buf = buf[:0]
	for i := 0; i < len(s); {
		r, n := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRune(s[i:])
		}
		i += n
		if !isTokenRune(r) {
			if len(buf) > 0 {
				fn(buf)
				buf = buf[:0]
			}
			continue
		}
		if r < utf8.RuneSelf {
			c := byte(r)
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			buf = append(buf, c)
			continue
		}
		buf = utf8.AppendRune(buf, unicode.ToLower(r))
	}
	if len(buf) > 0 {
		fn(buf)
	}
	return buf
}

// Stems: a sub-word match is two words sharing a stem: the word without
// an English plural (-s, -es, -ies), then without -ing, -ed (and a doubled
// consonant before it) or a final -e, cut to its first stemLen bytes (at
// a rune boundary): "fonts", "font"; "bindings", "bind"; "allocations",
// "allocate"; "programming", "program". Words shorter than minStemWord
// bytes have no stem: a fragment that short means nothing ("int" inside
// "point").
const (
	stemLen     = 7
	minStemWord = 4
	minStem     = 3 // a suffix is removed only if this much is left
)

// stem appends the stem of a lowercased token to dst, or returns nil when
// the token is too short to have one. The index keeps a stem posting only
// for a word whose stem differs from it (the word's own postings serve
// the rest).
func stem(dst, tok []byte) []byte {
	if len(tok) < minStemWord {
		return nil
	}
	dst = singular(append(dst, tok...))
	ends := func(suf string) bool { return endsIn(dst, suf) }
	switch { // -ing, -ed, then a doubled final consonant ("wrapped": "wrap")
	case ends("ing"):
		dst = undouble(dst[:len(dst)-3])
	case ends("ed"):
		dst = undouble(dst[:len(dst)-2])
	case ends("e") && len(dst) > minStemWord: // "create", "creating": "creat"; "note" stays
		dst = dst[:len(dst)-1]
	}
	if len(dst) > stemLen {
		cut := stemLen
		for cut > 0 && !utf8.RuneStart(dst[cut]) {
			cut--
		}
		dst = dst[:cut]
	}
	return dst
}

// endsIn reports whether b ends in suf with at least minStem bytes before.
func endsIn(b []byte, suf string) bool {
	return len(b)-len(suf) >= minStem && string(b[len(b)-len(suf):]) == suf
}

// singular drops an English plural ending of b.
func singular(b []byte) []byte {
	switch {
	case endsIn(b, "ies"):
		return append(b[:len(b)-3], 'y')
	case endsIn(b, "sses"), endsIn(b, "xes"), endsIn(b, "ches"), endsIn(b, "shes"):
		return b[:len(b)-2]
	case endsIn(b, "s") && !endsIn(b, "ss") && !endsIn(b, "us") && !endsIn(b, "is"):
		return b[:len(b)-1]
	}
	return b
}

// undouble drops the last letter of a doubled final consonant other than
// l, s and z.
func undouble(b []byte) []byte {
	n := len(b)
	if n > minStem && b[n-1] == b[n-2] && b[n-1] >= 'a' && b[n-1] <= 'z' && !strings.ContainsRune("aeiouylsz", rune(b[n-1])) {
		return b[:n-1]
	}
	return b
}

// stemHash is the posting key of a stem: FNV-1a over a 0x01 byte (never in
// a token) and the stem, so stems and whole words never share a list.
func stemHash(st []byte) uint64 {
	var h uint64 = fnvOffset
	h = (h ^ 1) * fnvPrime
	for _, c := range st {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

// maxSearchTerms bounds how many distinct tokens a query searches with (a
// long pasted prompt must not turn into hundreds of posting walks).
const maxSearchTerms = 32

// qkey is one posting list a query reads: a query token's whole word, its
// stem, or its stem as a whole word (the last two are its sub-word
// matches).
type qkey struct {
	hash uint64
	tok  int  // the query token it belongs to
	sub  bool // a stem key
	df   uint32
}

// parsedQuery is a query ready to run.
type parsedQuery struct {
	terms []string // every \w+ term, lowercased, in order (ring boost)
	toks  int      // distinct index tokens of the terms, at most maxSearchTerms
	keys  []qkey
	// w and ws are each token's whole-word and stem weights (BM25's IDF),
	// weight the sum of w over the tokens some memory has; set by weigh.
	w, ws                     []float64
	weight                    float64
	avgWords                  float64 // the mean distinct words of a memory with postings
	live                      float64 // memories with postings
	unknown                   int     // tokens no memory has, by word or stem
	failure, heartwood, seeds bool
}

func parseQuery(q string) parsedQuery {
	p := parsedQuery{terms: Terms(q)}
	for _, t := range p.terms {
		p.failure = p.failure || failureTerms[t]
		p.heartwood = p.heartwood || heartwoodTerms[t]
		p.seeds = p.seeds || seedTerms[t]
	}
	var seen []uint64
	var buf, st []byte
	for _, t := range p.terms {
		buf = eachTokenText([]byte(t), buf, func(tok []byte) {
			h := tokenHash(string(tok))
			if p.toks == maxSearchTerms || slices.Contains(seen, h) {
				return
			}
			seen = append(seen, h)
			p.keys = append(p.keys, qkey{hash: h, tok: p.toks})
			if st = stem(st[:0], tok); st != nil {
				p.keys = append(p.keys, qkey{hash: stemHash(st), tok: p.toks, sub: true})
				if string(st) != string(tok) {
					p.keys = append(p.keys, qkey{hash: tokenHash(string(st)), tok: p.toks, sub: true})
				}
			}
			p.toks++
		})
	}
	return p
}
