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
// (plus at most one newline); the input is never modified. Each input is
// checked as it is and as a document built around a real block (text
// before, the block with that body, text after, with CRLF endings, a
// second marker or a missing newline when the layout bits say so), since
// random bytes almost never hold a marker.
func FuzzFindMarkdownBlock(f *testing.F) {
	blk := MarkdownBlockText("codex", "body\n")
	for i, s := range []string{"", blk, "# x\n" + blk + "y\n", blk + blk, "<!-- tree-ring:end codex -->", "<!-- tree-ring:begin codex \n<!-- tree-ring:end codex -->"} {
		f.Add([]byte(s), []byte("body\n"), []byte("after\n"), uint8(i))
	}
	f.Fuzz(func(t *testing.T, data, body, after []byte, layout uint8) {
		checkMarkdownBlock(t, data)
		doc := MarkdownBlockText("codex", string(body))
		if layout&1 != 0 {
			doc = strings.ReplaceAll(doc, "\n", "\r\n")
		}
		if layout&2 != 0 {
			doc = strings.TrimSuffix(doc, "\n")
		}
		if layout&4 != 0 {
			doc += doc
		}
		sep := "\n"
		if layout&8 != 0 {
			sep = ""
		}
		built := []byte(string(data) + sep + doc + string(after))
		span, found := checkMarkdownBlock(t, built)
		// A block around a body of whole lines and text without markers
		// is found where it was put.
		clean := (len(body) == 0 || body[len(body)-1] == '\n') && !bytes.Contains(built[:len(data)], []byte("<!--")) && !bytes.Contains(body, []byte("<!--")) && !bytes.Contains(after, []byte("<!--"))
		if clean && layout&(4|8) == 0 && (len(data) == 0 || data[len(data)-1] != '\r') && (!found || span.Start != len(data)+1) {
			t.Fatalf("block not found at %d in %q: %+v %v", len(data)+1, built, span, found)
		}
	})
}

func checkMarkdownBlock(t *testing.T, data []byte) (Span, bool) {
	orig := bytes.Clone(data)
	span, found, err := FindMarkdownBlock(data, "codex")
	if !bytes.Equal(orig, data) {
		t.Fatal("input modified")
	}
	if err != nil || !found {
		return span, false
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
	return span, true
}

// A managed block is rewritten only while it holds the recorded bytes, and
// nothing outside it changes.
func TestRewriteMarkdownBlock(t *testing.T) {
	old := "<!-- tree-ring:begin codex v1 -->\nold text\n<!-- tree-ring:end codex -->\n"
	data := []byte("# Mine\n\nuser text\n\n" + old + "after, mine too\n")
	neu := []byte("<!-- tree-ring:begin codex v1 -->\nnew text\n<!-- tree-ring:end codex -->\n")
	got, err := RewriteMarkdownBlock("AGENTS.md", data, "codex", SHA256Hex([]byte(old)), neu)
	if err != nil || string(got) != "# Mine\n\nuser text\n\n"+string(neu)+"after, mine too\n" {
		t.Fatalf("rewrite: %q %v", got, err)
	}
	var ce *ChangedError
	for name, in := range map[string][]byte{
		"edited block":  bytes.Replace(data, []byte("old text"), []byte("old text, edited"), 1),
		"no block":      []byte("# Mine\n"),
		"two begins":    append(append([]byte{}, data...), "<!-- tree-ring:begin codex v1 -->\n"...),
		"another block": bytes.ReplaceAll(data, []byte("codex"), []byte("claude")),
	} {
		if _, err := RewriteMarkdownBlock("AGENTS.md", in, "codex", SHA256Hex([]byte(old)), neu); !errors.As(err, &ce) || ce.Path != "AGENTS.md" {
			t.Errorf("%s: %v", name, err)
		}
	}
}
