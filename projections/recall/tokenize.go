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

// Published word lists.
var (
	fillerWords    = set("a", "an", "and", "about", "are", "for", "in", "is", "not", "of", "on", "or", "the", "to", "what")
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

func isIntent(t string) bool { return failureTerms[t] || heartwoodTerms[t] || seedTerms[t] }

// maxSearchTerms bounds how many distinct non-filler terms a query searches
// with (a long pasted prompt must not turn into hundreds of posting walks).
// The textual score still uses every term.
const maxSearchTerms = 32

// parsedQuery is a query ready to run.
type parsedQuery struct {
	terms []string // every \w+ term, lowercased, in order (textual score, ring boost)
	// searches is the AND cascade: the query, then the query without each
	// intent term in turn; each entry is the deduplicated token hashes of
	// its non-filler terms. Empty and repeated entries are dropped.
	searches [][]uint64
	// or is the fallback: one entry per non-filler term, each the AND of
	// that term's tokens.
	or                        [][]uint64
	failure, heartwood, seeds bool
}

func parseQuery(q string) parsedQuery {
	p := parsedQuery{terms: Terms(q)}
	for _, t := range p.terms {
		p.failure = p.failure || failureTerms[t]
		p.heartwood = p.heartwood || heartwoodTerms[t]
		p.seeds = p.seeds || seedTerms[t]
	}
	// The distinct non-filler terms, bounded, in order.
	var search []string
	for _, t := range p.terms {
		if !fillerWords[t] && !slices.Contains(search, t) {
			if len(search) == maxSearchTerms {
				break
			}
			search = append(search, t)
		}
	}
	termTokens := make(map[string][]uint64, len(search))
	for _, t := range search {
		var hs []uint64
		eachToken([]byte(t), func(h uint64) {
			if !slices.Contains(hs, h) {
				hs = append(hs, h)
			}
		})
		termTokens[t] = hs
		if len(hs) > 0 {
			p.or = append(p.or, hs)
		}
	}
	and := func(without string) []uint64 {
		var hs []uint64
		for _, t := range search {
			if t == without {
				continue
			}
			for _, h := range termTokens[t] {
				if !slices.Contains(hs, h) {
					hs = append(hs, h)
				}
			}
		}
		return hs
	}
	add := func(hs []uint64) {
		if len(hs) == 0 {
			return
		}
		for _, prev := range p.searches {
			if sameSet(prev, hs) {
				return
			}
		}
		p.searches = append(p.searches, hs)
	}
	add(and(""))
	for _, t := range search {
		if isIntent(t) {
			add(and(t))
		}
	}
	return p
}

func sameSet(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for _, h := range a {
		if !slices.Contains(b, h) {
			return false
		}
	}
	return true
}
