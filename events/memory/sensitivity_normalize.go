package memory

import (
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// The detector reads text as a reader sees it, not as it is encoded: a
// token with a zero-width space inside, in fullwidth forms, with a
// Cyrillic А for the A of AKIA, or wrapped over two lines is still the
// token (issue 26). The normalized text only feeds the patterns; nothing
// of it is stored, and the record keeps the bytes it was given.
//
// NFKC comes from golang.org/x/text/unicode/norm (the Go project's own
// implementation of UAX #15, already in the module graph through
// x/crypto): it folds fullwidth and other compatibility forms, ligatures,
// and the long s and Kelvin sign the published patterns' ASCII letters
// needed a table for. Its tables are static data: importing it compiles
// nothing at start-up.

// prepare returns the text the patterns read and the triggers are
// searched in: at most maxInspectBytes of s, normalized when it is not
// ASCII (normalize). The search lowers ASCII letters itself and every
// trigger is ASCII, so a folded copy would trigger exactly the same rules
// (TestTriggerIndexIsContains).
func prepare(s string) string {
	if len(s) > maxInspectBytes {
		s = s[:maxInspectBytes]
	}
	// Most texts are ASCII: a byte loop says so far cheaper than the
	// normalization, which leaves ASCII as it is.
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			s = normalize(s)
			if len(s) > maxInspectBytes { // NFKC may expand a few runes
				s = s[:maxInspectBytes]
			}
			return s
		}
	}
	return s
}

// normalize removes format characters (Unicode category Cf: zero-width
// space, joiners, word joiner, soft hyphen, byte order mark, bidirectional
// controls), applies NFKC to what is left (so a character split by one
// composes) and folds the common confusables of ASCII letters to them
// (confusable). Linear in len(s).
func normalize(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	return strings.Map(confusable, norm.NFKC.String(s))
}

// confusable returns the ASCII letter a Cyrillic or Greek letter is drawn
// as in common fonts (Unicode's confusables for the letters of the rules'
// prefixes: AKIA, ghp_, sk-, xox, ...), else r.
func confusable(r rune) rune {
	if r < confusables[0].from || r > confusables[len(confusables)-1].from {
		return r
	}
	if i, ok := slices.BinarySearchFunc(confusables[:], r, func(c fold, r rune) int { return int(c.from - r) }); ok {
		return rune(confusables[i].to)
	}
	return r
}

// fold is one confusable and its letter.
type fold struct {
	from rune
	to   byte
}

// confusables, sorted by rune: an array of constants, static data (no
// table is built at start-up).
var confusables = [...]fold{
	{'Α', 'A'}, {'Β', 'B'}, {'Ε', 'E'}, {'Ζ', 'Z'},
	{'Η', 'H'}, {'Ι', 'I'}, {'Κ', 'K'}, {'Μ', 'M'},
	{'Ν', 'N'}, {'Ο', 'O'}, {'Ρ', 'P'}, {'Τ', 'T'},
	{'Υ', 'Y'}, {'Χ', 'X'}, {'ν', 'v'}, {'ο', 'o'},
	{'ρ', 'p'}, {'χ', 'x'}, {'ϲ', 'c'}, {'Ϲ', 'C'},
	{'Ѕ', 'S'}, {'І', 'I'}, {'Ј', 'J'}, {'А', 'A'},
	{'В', 'B'}, {'Е', 'E'}, {'К', 'K'}, {'М', 'M'},
	{'Н', 'H'}, {'О', 'O'}, {'Р', 'P'}, {'С', 'C'},
	{'Т', 'T'}, {'У', 'Y'}, {'Х', 'X'}, {'а', 'a'},
	{'е', 'e'}, {'к', 'k'}, {'о', 'o'}, {'р', 'p'},
	{'с', 'c'}, {'у', 'y'}, {'х', 'x'}, {'ѕ', 's'},
	{'і', 'i'}, {'ј', 'j'}, {'Ү', 'Y'}, {'һ', 'h'},
	{'ӏ', 'l'}, {'ԁ', 'd'}, {'ԛ', 'q'}, {'ԝ', 'w'},
}

// joinSplits returns text with the whitespace inside a wrapped or spaced
// token removed ("" when there is none), for the secret rules to read a
// second time: a run of spaces and tabs with at most one line break is
// dropped when the fragments on both sides look like parts of a token
// (tokenFragment), so "AKIAIOSF ODNN7EXA MPLE" and a key wrapped at 64
// columns read whole while prose ("use ghp_ tokens", "CI lint") is left
// alone. One pass, linear in len(text); text is ASCII or normalized.
func joinSplits(text string) string {
	var b strings.Builder
	last := 0  // text[:last] is written or will be
	start := 0 // start of the current fragment
	for i := 0; i < len(text); {
		if !isSpaceOrBreak(text[i]) {
			if !isTokenByte(text[i]) {
				start = i + 1
			}
			i++
			continue
		}
		left := text[start:i]
		j, breaks := i, 0
		for j < len(text) && isSpaceOrBreak(text[j]) {
			if text[j] == '\n' {
				breaks++
			}
			j++
		}
		k := j
		for k < len(text) && isTokenByte(text[k]) {
			k++
		}
		if breaks <= 1 && tokenFragment(left) && tokenFragment(text[j:k]) {
			b.WriteString(text[last:i])
			last = j
		}
		i, start = j, j
	}
	if last == 0 {
		return ""
	}
	b.WriteString(text[last:])
	return b.String()
}

func isSpaceOrBreak(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isTokenByte: the characters of the formats' tokens (base64, base64url,
// hex, the prefixes' separators).
func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '+' || c == '/' || c == '='
}

// tokenFragment reports whether f can be part of a token: at least 4
// characters and not a plain lower-case word, so it has a digit, an upper
// case letter or a separator.
func tokenFragment(f string) bool {
	if len(f) < 4 {
		return false
	}
	for i := 0; i < len(f); i++ {
		if c := f[i]; c < 'a' || c > 'z' {
			return true
		}
	}
	return false
}
