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
	if strings.ContainsAny(s, "ſK") {
		s = asciiFolds.Replace(s)
	}
	return s, foldASCII(s)
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
		if p := &secretPatterns[i]; anyTrigger(f, p.triggers) && p.matches(s) {
			return p.name
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
	out := append([]string{"", "a", "ſ", "K", "\xff", "sk", "s\xffk-"}, benchTexts...)
	out = append(out, jwt, awsSecret, stripe, slack, google, gitlab, npmTok, ghClassic, ghFine, huggingface, sha256Digest, sha1Commit)
	var lits []string
	for _, p := range secretPatterns {
		lits = append(lits, p.triggers...)
	}
	for _, p := range categoryPatterns {
		lits = append(lits, p.triggers...)
	}
	for _, t := range lits {
		out = append(out, t, strings.ToUpper(t), "x"+t+"y", "note: "+t, t[:len(t)-1], strings.ReplaceAll(t, "s", "ſ"), strings.ReplaceAll(t, "k", "K"),
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

// The one-pass index finds exactly the rules whose triggers occur.
func TestTriggerIndexIsContains(t *testing.T) {
	x := theDetector().index
	for _, s := range oracleTexts() {
		_, f := oraclePrepare(s)
		var want uint64
		for i, p := range secretPatterns {
			if anyTrigger(f, p.triggers) {
				want |= 1 << i
			}
		}
		for j, p := range categoryPatterns {
			if anyTrigger(f, p.triggers) {
				want |= categoryBit(j)
			}
		}
		if got := x.scan(f); got != want {
			t.Errorf("%q: scan %b, Contains %b", s, got, want)
		}
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
		if text, folded := prepare(s); func() bool { wt, wf := oraclePrepare(s); return text != wt || folded != wf }() {
			t.Fatalf("prepare(%q) = %q, %q differs from the oracle's", s, text, folded)
		}
	})
}
