package adapters

import (
	"bytes"
	"fmt"
)

// MarkdownBlockText is a complete marked block: the begin marker line, the
// body (ending in a newline) and the end marker line with its newline.
func MarkdownBlockText(id, body string) string {
	return "<!-- tree-ring:begin " + id + " v1 -->\n" + body + "<!-- tree-ring:end " + id + " -->\n"
}

// MarkerError reports markers of a managed block that occur more than once,
// only one of the pair, in the wrong order or not at the start of a line.
type MarkerError struct {
	Path    string
	BlockID string
}

func (e *MarkerError) Error() string {
	return fmt.Sprintf("%s: conflicting or incomplete Tree Ring managed markers (block %s)", e.Path, e.BlockID)
}

// Span is a block's byte range data[Start:End] in its file.
type Span struct{ Start, End int }

// FindMarkdownBlock locates the managed block id in data. The block runs from
// its begin marker to the end of its end-marker line (the newline included
// when present). found is false, with a nil error, when neither marker of
// this block occurs. Markers must each occur exactly once, begin before end,
// each at the start of a line; anything else is a *MarkerError. data is
// never modified.
func FindMarkdownBlock(data []byte, id string) (span Span, found bool, err error) {
	begin := []byte("<!-- tree-ring:begin " + id + " ")
	end := []byte("<!-- tree-ring:end " + id + " -->")
	nb, ne := bytes.Count(data, begin), bytes.Count(data, end)
	if nb == 0 && ne == 0 {
		return Span{}, false, nil
	}
	if nb != 1 || ne != 1 {
		return Span{}, false, &MarkerError{BlockID: id}
	}
	bi, ei := bytes.Index(data, begin), bytes.Index(data, end)
	if bi > ei || !lineStart(data, bi) || !lineStart(data, ei) {
		return Span{}, false, &MarkerError{BlockID: id}
	}
	stop := ei + len(end)
	if stop < len(data) && data[stop] == '\n' {
		stop++
	}
	return Span{Start: bi, End: stop}, true, nil
}

func lineStart(data []byte, i int) bool { return i == 0 || data[i-1] == '\n' }

// HasLeadingSeparator reports whether the bytes before span end with sep,
// the adapter-owned whitespace a manifest may record before a block.
func HasLeadingSeparator(data []byte, span Span, sep string) bool {
	return bytes.HasSuffix(data[:span.Start], []byte(sep))
}

// AppendSeparator is the separator the protocol uses when a block is
// appended to existing text: "" after a blank line, "\n" after a newline,
// "\n\n" otherwise. Tree Ring does not append to files it did not create; it
// is kept for reading manifests written by other implementations.
func AppendSeparator(existing []byte) string {
	switch {
	case len(existing) == 0 || bytes.HasSuffix(existing, []byte("\n\n")):
		return ""
	case bytes.HasSuffix(existing, []byte("\n")):
		return "\n"
	default:
		return "\n\n"
	}
}

// ValidSeparator reports whether sep is one of the protocol's three.
func ValidSeparator(sep string) bool { return sep == "" || sep == "\n" || sep == "\n\n" }

// RewriteMarkdownBlock returns data with its managed block id replaced by
// block (a block's bytes, begin marker to end-marker line), only while the
// block in data holds the digest recorded when Tree Ring wrote it
// (previous, hex SHA-256): every byte outside the block is kept. A block
// that is missing, malformed or changed is a *ChangedError naming path.
func RewriteMarkdownBlock(path string, data []byte, id, previous string, block []byte) ([]byte, error) {
	span, found, err := FindMarkdownBlock(data, id)
	if err != nil || !found || SHA256Hex(data[span.Start:span.End]) != previous {
		return nil, &ChangedError{Path: path}
	}
	out := make([]byte, 0, len(data)-(span.End-span.Start)+len(block))
	out = append(append(append(out, data[:span.Start]...), block...), data[span.End:]...)
	return out, nil
}
