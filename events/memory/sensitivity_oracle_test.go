package memory

import (
	"strings"
	"testing"
)

// The detector as it was before its one-pass trigger index: every rule's
// triggers searched one by one, the text prepared once per detector. It is
// the definition the detector is tested against: same rules, same
// regexps, so any difference is the index's or prepare's fast path.
func oraclePrepare(s string) (text, folded string) {
	if len(s) > maxInspectBytes {
		s = s[:maxInspectBytes]
	}
	// Always normalized: NFKC leaves ASCII as it is, so prepare's ASCII
	// fast path must give the same text.
	s = normalize(s)
	if len(s) > maxInspectBytes {
		s = s[:maxInspectBytes]
	}
	return s, foldASCII(s)
}

// foldASCII lowercases ASCII letters and maps the two non-ASCII runes that
// case-fold to ASCII letters (U+017F long s, U+212A Kelvin sign), so that a
// trigger search on the result never misses what a (?i) pattern matches.
// Triggers are a fast path only: a text without any trigger cannot match
// the pattern, so the regexp is skipped.
func foldASCII(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range s {
		switch {
		case c >= 'A' && c <= 'Z':
			b.WriteByte(byte(c) + 32)
		case c == 'ſ':
			b.WriteByte('s')
		case c == '\u212a':
			b.WriteByte('k')
		case c < 0x80:
			b.WriteByte(byte(c))
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func anyTrigger(folded string, triggers []string) bool {
	for _, t := range triggers {
		if strings.Contains(folded, t) {
			return true
		}
	}
	return false
}

func oracleSecretKind(s string) string {
	if s == "" {
		return ""
	}
	s, f := oraclePrepare(s)
	for i := range secretPatterns {
		if p := &secretPatterns[i]; (len(p.triggers) == 0 || anyTrigger(f, p.triggers)) && p.matches(s) {
			return p.name
		}
	}
	if joined := joinSplits(s); joined != "" {
		f := foldASCII(joined)
		for i := range secretPatterns {
			if p := &secretPatterns[i]; (len(p.triggers) == 0 || anyTrigger(f, p.triggers)) && p.matches(joined) {
				return p.name
			}
		}
	}
	return ""
}

func oracleCategoryOf(s string) string {
	if s == "" {
		return ""
	}
	s, f := oraclePrepare(s)
	for _, p := range categoryPatterns {
		if anyTrigger(f, p.triggers) && p.re.MatchString(s) {
			return p.class
		}
	}
	return ""
}

func oracleInspectText(s string) string {
	if oracleSecretKind(s) != "" {
		return SensitivitySecret
	}
	if c := oracleCategoryOf(s); c != "" {
		return c
	}
	return SensitivityNormal
}

// oracleTexts holds every trigger of every rule, alone, in upper case,
// glued to its neighbours, at the very end of a text and behind the two
// non-ASCII folds, with the package's other test texts.
func oracleTexts() []string {
	out := append([]string{"", "a", "ſ", "\u212a", "\xff", "sk", "s\xffk-"}, benchTexts...)
	out = append(out, jwt, awsSecret, stripe, slack, google, gitlab, npmTok, ghClassic, ghFine, huggingface, sha256Digest, sha1Commit)
	var lits []string
	for _, p := range secretPatterns {
		lits = append(lits, p.triggers...)
	}
	for _, p := range categoryPatterns {
		lits = append(lits, p.triggers...)
	}
	for _, t := range lits {
		out = append(out, t, strings.ToUpper(t), "x"+t+"y", "note: "+t, t[:len(t)-1], strings.ReplaceAll(t, "s", "ſ"), strings.ReplaceAll(t, "k", "\u212a"),
			"token = "+t+strings.Repeat("Ab1", 12), "password: "+t+"Xy9z")
	}
	return out
}

func TestDetectorIsTheOracle(t *testing.T) {
	for _, s := range oracleTexts() {
		if got, want := SecretKind(s), oracleSecretKind(s); got != want {
			t.Errorf("SecretKind(%q) = %q, oracle %q", s, got, want)
		}
		if got, want := InspectText(s), oracleInspectText(s); got != want {
			t.Errorf("InspectText(%q) = %q, oracle %q", s, got, want)
		}
	}
}

// containsMask is the trigger index's definition: the rules with a
// trigger that strings.Contains finds in the oracle's folded text.
func containsMask(s string) uint64 {
	_, f := oraclePrepare(s)
	var m uint64
	for i, p := range secretPatterns {
		if anyTrigger(f, p.triggers) {
			m |= 1 << i
		}
	}
	for j, p := range categoryPatterns {
		if anyTrigger(f, p.triggers) {
			m |= categoryBit(j)
		}
	}
	return m
}

// checkPrepared holds prepare and the one-pass index to their oracles:
// the same text for the patterns, the same rules triggered.
func checkPrepared(t *testing.T, s string) {
	t.Helper()
	text := prepare(s)
	if wt, _ := oraclePrepare(s); text != wt {
		t.Fatalf("prepare(%q) text %q, oracle %q", s, text, wt)
	}
	if got, want := theDetector().index.scan(text), containsMask(s); got != want {
		t.Fatalf("%q: scan %b, Contains %b", s, got, want)
	}
}

func TestTriggerIndexIsContains(t *testing.T) {
	for _, s := range oracleTexts() {
		checkPrepared(t, s)
	}
}

func FuzzDetectorIsTheOracle(f *testing.F) {
	for _, s := range oracleTexts() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := SecretKind(s), oracleSecretKind(s); got != want {
			t.Fatalf("SecretKind(%q) = %q, oracle %q", s, got, want)
		}
		if got, want := InspectText(s), oracleInspectText(s); got != want {
			t.Fatalf("InspectText(%q) = %q, oracle %q", s, got, want)
		}
		checkPrepared(t, s)
	})
}
