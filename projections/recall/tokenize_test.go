package recall

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestTokenize(t *testing.T) {
	cases := map[string][]string{
		"Hello, World!":          {"hello", "world"},
		"foo_bar-baz 42x":        {"foo", "bar", "baz", "42x"},
		"Ünïcödé ΣΊΣΥΦΟΣ straße": {"ünïcödé", "σίσυφοσ", "straße"},
		"界界界 日本語、テスト":            {"界界界", "日本語", "テスト"},
		"e\u0301te":              {"e\u0301te"}, // a combining mark stays in its token
		"emoji🙂inside":           {"emoji", "inside"},
		"":                       nil,
		"  ...  ":                nil,
		"\xff\xfeabc":            {"abc"},
	}
	for in, want := range cases {
		if got := Tokenize(in); !slices.Equal(got, want) {
			t.Errorf("Tokenize(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Terms("Fix the foo_bar BUG, café!"); !slices.Equal(got, []string{"fix", "the", "foo_bar", "bug", "café"}) {
		t.Errorf("Terms: %q", got)
	}
}

func TestTokenHashMatchesTokenize(t *testing.T) {
	for _, s := range []string{"Deploy ROLLBACK", "ÄÖÜ straße", "mixed_Case-42"} {
		var hs []uint64
		eachToken([]byte(s), func(h uint64) { hs = append(hs, h) })
		var want []uint64
		for _, tok := range Tokenize(s) {
			want = append(want, tokenHash(tok))
		}
		if !slices.Equal(hs, want) {
			t.Errorf("%q: hashes differ", s)
		}
	}
}

func TestParseQuery(t *testing.T) {
	q := parseQuery("What is the durable decision about the cache?")
	if !q.heartwood || q.failure || q.seeds {
		t.Error("intent flags")
	}
	// search: durable decision cache; variants drop durable, then decision.
	want := [][]uint64{
		{tokenHash("durable"), tokenHash("decision"), tokenHash("cache")},
		{tokenHash("decision"), tokenHash("cache")},
		{tokenHash("durable"), tokenHash("cache")},
	}
	if len(q.searches) != len(want) {
		t.Fatalf("searches %v", q.searches)
	}
	for i := range want {
		if !slices.Equal(q.searches[i], want[i]) {
			t.Errorf("search %d: %v want %v", i, q.searches[i], want[i])
		}
	}
	if len(q.or) != 3 || len(q.terms) != 8 {
		t.Errorf("or %d terms %d", len(q.or), len(q.terms))
	}
	long := parseQuery(strings.Repeat("word ", 10) + strings.Repeat("x ", 5) + func() string {
		var b strings.Builder
		for i := 0; i < 100; i++ {
			b.WriteString("t")
			b.WriteString(strings.Repeat("a", i+1))
			b.WriteString(" ")
		}
		return b.String()
	}())
	if len(long.or) != maxSearchTerms || len(long.searches) != 1 {
		t.Errorf("bounded search: %d or terms, %d searches", len(long.or), len(long.searches))
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"failure stale cache", "the what", "", "foo_bar baz", "界界 ÜBER", "\xff\x00a", "rule rule rule", "e\u0301",
		"the a of to and in is it", "İstanbul ǅemal ß ﬁle", "x1 x2 x3 x4 x5 x6 x7 x8 x9 x10 x11 x12 x13 x14 x15 x16 x17 x18 x19 x20 x21 x22 x23 x24 x25 x26 x27 x28 x29 x30 x31 x32 x33 x34"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkQuery(t, s)
		// A query built from the input's words: each twice, in upper
		// case too, joined by separators the tokenizer splits on, and
		// repeated past maxSearchTerms (random strings rarely hold many
		// words, so the bounds and the dedup would never be reached).
		var b strings.Builder
		for i, w := range strings.Fields(s) {
			for k := 0; k < 2+maxSearchTerms/4; k++ {
				b.WriteString([]string{" ", "-", "_", ", ", "/"}[(i+k)%5])
				b.WriteString(w)
				b.WriteString(fmt.Sprint(k % 9))
				b.WriteString(" " + strings.ToUpper(w))
			}
		}
		checkQuery(t, b.String())
	})
}

func checkQuery(t *testing.T, s string) {
	t.Helper()
	toks := Tokenize(s)
	var hs []uint64
	eachToken([]byte(s), func(h uint64) { hs = append(hs, h) })
	if len(hs) != len(toks) {
		t.Fatalf("eachToken saw %d tokens, Tokenize %d", len(hs), len(toks))
	}
	for i, tok := range toks {
		if tok == "" || !utf8.ValidString(tok) {
			t.Fatalf("bad token %q", tok)
		}
		for _, r := range tok {
			if !isTokenRune(r) {
				t.Fatalf("separator %q inside token %q", r, tok)
			}
		}
		if tokenHash(tok) != hs[i] {
			t.Fatalf("hash of %q differs", tok)
		}
		// Index tokens of a token are the token itself (lowercasing
		// is idempotent).
		if again := Tokenize(tok); len(again) != 1 || again[0] != strings.Map(unicode.ToLower, tok) {
			t.Fatalf("re-tokenizing %q gave %q", tok, again)
		}
	}
	q := parseQuery(s)
	if len(q.or) > maxSearchTerms {
		t.Fatalf("%d search terms", len(q.or))
	}
	for i, a := range q.searches {
		if len(a) == 0 {
			t.Fatal("empty AND search")
		}
		for j := 0; j < i; j++ {
			if sameSet(a, q.searches[j]) {
				t.Fatal("repeated search")
			}
		}
	}
	for _, term := range q.terms {
		if term == "" || strings.ToLower(term) != term {
			t.Fatalf("bad term %q", term)
		}
	}
}
