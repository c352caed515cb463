package recall

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// The signature may say "possible" wrongly, never "impossible": every
// substring of the text is possible, so the textual bound is never below
// the textual factor.
func TestSignatureHasNoFalseNegatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []rune("abcdeé界_ 9")
	for round := 0; round < 300; round++ {
		var sb strings.Builder
		for range 3 + rng.IntN(200) {
			sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		text := []byte(sb.String())
		sig := textSignature(text)
		for range 50 {
			i := rng.IntN(len(text))
			j := i + rng.IntN(len(text)-i+1)
			if !mayContain(sig[:], string(text[i:j])) {
				t.Fatalf("%q is in %q", text[i:j], text)
			}
		}
		terms := []string{string(text[:len(text)/2]), "zzz", "qq", "a"}
		if b, tx := textualBound(terms, sig[:]), textual(terms, text); b < tx {
			t.Fatalf("bound %v < textual %v", b, tx)
		}
	}
}

func TestSignatureExcludesAbsentTerms(t *testing.T) {
	text := []byte("avoid stale deployment rollback cache failure 4242. deployment cache")
	sig := textSignature(text)
	for _, term := range []string{"zebra", "quorum", "kubernetes"} {
		if mayContain(sig[:], term) {
			t.Errorf("%q: possible", term)
		}
	}
	if !mayContain(sig[:], "ll") || !mayContain(nil, "zebra") {
		t.Error("short terms and unsigned texts are always possible")
	}
	if mayContain(make([]byte, sigBytes), "abc") {
		t.Error("an empty text excludes every trigram")
	}
}
