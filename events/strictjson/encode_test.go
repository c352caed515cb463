package strictjson

import (
	"bytes"
	"encoding/json"
	"testing"
)

// stringCases are the strings whose encoding differs between the escape
// rules: plain text, every short escape, control bytes, the HTML
// characters, DEL, multi-byte runes, U+2028/U+2029, invalid and truncated
// UTF-8, and a surrogate half encoded as UTF-8 (invalid).
var stringCases = []string{
	"", "plain", `quote " and \ backslash`, "\b\f\n\r\t", "\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "caf\u00e9 \u65e5\u672c \U0001f600", "line\u2028sep\u2029para",
	"\xff", "a\xc3", "\xed\xa0\x80", "\xe2\x80", "mixed\x00<\u2028\xfe>&",
}

// TestAppendStringMatchesEncodingJSON: AppendString writes json.Marshal's
// bytes, AppendStringNoHTML a SetEscapeHTML(false) Encoder's.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range stringCases {
		checkString(t, s)
	}
	for c := 0; c < 256; c++ { // every single byte
		checkString(t, string([]byte{byte(c)}))
		checkString(t, "x"+string([]byte{byte(c)})+"y")
	}
}

func checkString(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendString([]byte("prefix"), s); string(got) != "prefix"+string(want) {
		t.Errorf("AppendString(%q) = %s, want %s", s, got[6:], want)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	if got := AppendStringNoHTML(nil, s); string(got)+"\n" != buf.String() {
		t.Errorf("AppendStringNoHTML(%q) = %s, want %s", s, got, buf.Bytes())
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkString(t, s) })
}
