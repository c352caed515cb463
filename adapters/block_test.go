package adapters

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestFindMarkdownBlock(t *testing.T) {
	blk := MarkdownBlockText("codex", "## Tree Ring Memory\n\nbody\n")
	cases := []struct {
		name  string
		data  string
		found bool
		err   bool
		span  string // expected block bytes
	}{
		{"alone", blk, true, false, blk},
		{"grown around", "# Mine\n\n" + blk + "\nMore.\n", true, false, blk},
		{"no final newline", strings.TrimSuffix(blk, "\n"), true, false, strings.TrimSuffix(blk, "\n")},
		{"absent", "# Mine\n", false, false, ""},
		{"other block id", MarkdownBlockText("codex-extra", "x\n"), false, false, ""},
		{"begin twice", blk + blk, false, true, ""},
		{"end only", "<!-- tree-ring:end codex -->\n", false, true, ""},
		{"begin only", "<!-- tree-ring:begin codex v1 -->\nx\n", false, true, ""},
		{"reversed", "<!-- tree-ring:end codex -->\n<!-- tree-ring:begin codex v1 -->\n", false, true, ""},
		{"not at line start", "text <!-- tree-ring:begin codex v1 -->\n<!-- tree-ring:end codex -->\n", false, true, ""},
		{"another version", "<!-- tree-ring:begin codex v2 -->\nx\n<!-- tree-ring:end codex -->\n", true, false, "<!-- tree-ring:begin codex v2 -->\nx\n<!-- tree-ring:end codex -->\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			span, found, err := FindMarkdownBlock([]byte(c.data), "codex")
			var me *MarkerError
			if c.err != (err != nil) || err != nil && !errors.As(err, &me) {
				t.Fatalf("err = %v, want error %v", err, c.err)
			}
			if found != c.found {
				t.Fatalf("found = %v, want %v", found, c.found)
			}
			if found && c.data[span.Start:span.End] != c.span {
				t.Fatalf("span %q, want %q", c.data[span.Start:span.End], c.span)
			}
		})
	}
}

func TestSeparators(t *testing.T) {
	for in, want := range map[string]string{"": "", "a\n\n": "", "a\n": "\n", "a": "\n\n"} {
		if got := AppendSeparator([]byte(in)); got != want {
			t.Errorf("AppendSeparator(%q) = %q, want %q", in, got, want)
		}
	}
	data := []byte("x\n\n<!-- tree-ring:begin codex v1 -->\n<!-- tree-ring:end codex -->\n")
	span, _, _ := FindMarkdownBlock(data, "codex")
	if !HasLeadingSeparator(data, span, "\n\n") || !HasLeadingSeparator(data, span, "") || HasLeadingSeparator([]byte("x<!--"), Span{Start: 1}, "\n") {
		t.Fatal("HasLeadingSeparator")
	}
}

// FuzzFindMarkdownBlock: never panics; a found block lies within the input,
// starts with its begin marker at a line start and ends with its end marker
// (plus at most one newline); the input is never modified.
func FuzzFindMarkdownBlock(f *testing.F) {
	blk := MarkdownBlockText("codex", "body\n")
	for _, s := range []string{"", blk, "# x\n" + blk + "y\n", blk + blk, "<!-- tree-ring:end codex -->", "<!-- tree-ring:begin codex \n<!-- tree-ring:end codex -->"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := bytes.Clone(data)
		span, found, err := FindMarkdownBlock(data, "codex")
		if !bytes.Equal(orig, data) {
			t.Fatal("input modified")
		}
		if err != nil || !found {
			return
		}
		if span.Start < 0 || span.End > len(data) || span.Start >= span.End {
			t.Fatalf("span %+v out of %d bytes", span, len(data))
		}
		b := data[span.Start:span.End]
		if !bytes.HasPrefix(b, []byte("<!-- tree-ring:begin codex ")) || !lineStart(data, span.Start) {
			t.Fatalf("block does not start with its begin marker: %q", b)
		}
		if !bytes.HasSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("<!-- tree-ring:end codex -->")) {
			t.Fatalf("block does not end with its end marker: %q", b)
		}
		if bytes.Count(data, []byte("<!-- tree-ring:begin codex ")) != 1 || bytes.Count(data, []byte("<!-- tree-ring:end codex -->")) != 1 {
			t.Fatal("found with markers not unique")
		}
	})
}
