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
	q := parseQuery("What is the durable decision about the caches? the")
	if !q.heartwood || q.failure || q.seeds {
		t.Error("intent flags")
	}
	// Every distinct token is searched (rarity weighs them, no stop list);
	// a token of four bytes or more also by its stem, and by the stem as a
	// word when they differ.
	want := []qkey{
		{hash: tokenHash("what"), tok: 0}, {hash: stemHash([]byte("what")), tok: 0, sub: true},
		{hash: tokenHash("is"), tok: 1},
		{hash: tokenHash("the"), tok: 2},
		{hash: tokenHash("durable"), tok: 3}, {hash: stemHash([]byte("durabl")), tok: 3, sub: true}, {hash: tokenHash("durabl"), tok: 3, sub: true},
		{hash: tokenHash("decision"), tok: 4}, {hash: stemHash([]byte("decisio")), tok: 4, sub: true}, {hash: tokenHash("decisio"), tok: 4, sub: true},
		{hash: tokenHash("about"), tok: 5}, {hash: stemHash([]byte("about")), tok: 5, sub: true},
		{hash: tokenHash("caches"), tok: 6}, {hash: stemHash([]byte("cach")), tok: 6, sub: true}, {hash: tokenHash("cach"), tok: 6, sub: true},
	}
	if !slices.Equal(q.keys, want) || q.toks != 7 || len(q.terms) != 9 {
		t.Errorf("keys %v (%d tokens, %d terms)", q.keys, q.toks, len(q.terms))
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
	if long.toks != maxSearchTerms {
		t.Errorf("bounded search: %d tokens", long.toks)
	}
}

func TestStem(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"fonts", "font"}, {"font", "font"}, {"libraries", "library"}, {"classes", "class"}, {"indexes", "index"},
		{"bindings", "bind"}, {"binding", "bind"}, {"wrapped", "wrap"}, {"wrapping", "wrap"}, {"create", "creat"},
		{"creating", "creat"}, {"allocations", "allocat"}, {"allocate", "allocat"}, {"programming", "program"},
		{"status", "status"}, {"analysis", "analysi"}, {"uses", "use"}, {"feed", "feed"}, {"note", "note"}, {"notes", "note"}, {"éléphants", "éléph"},
	} {
		if got := string(stem(nil, []byte(c.in))); got != c.want {
			t.Errorf("stem(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if stem(nil, []byte("int")) != nil {
		t.Error("a three-byte word has a stem")
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
	if q.toks > maxSearchTerms {
		t.Fatalf("%d search tokens", q.toks)
	}
	for i, k := range q.keys {
		if k.tok >= q.toks || !k.sub && i > 0 && q.keys[i-1].tok == k.tok {
			t.Fatalf("key %d: %+v", i, k)
		}
	}
	for _, term := range q.terms {
		if term == "" || strings.ToLower(term) != term {
			t.Fatalf("bad term %q", term)
		}
	}
}
