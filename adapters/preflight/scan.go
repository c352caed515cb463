// Package preflight is the domain of the session-start proof: parsing the
// harness's stdin (lifecycle hook events and adapter requests), deriving the
// worker identity, checking the activation contract on disk, the receipt
// (its wire shape, path, the eight verification rules and retention), the
// Agent Zero plugin descriptor and the exact outputs a harness consumes.
//
// It never touches the ledger: the command layer opens the store, runs one
// write transaction and calls in here for every decision. Nothing here logs,
// and no error message carries an input value (errors name keys from the
// published lists, never values), so an error may be printed on stderr.
package preflight

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tree-ring/tree-ring/events/memory"
)

// maxDepth bounds the nesting of a stdin document. Real clients nest three
// levels (background task lists); a deeper document is refused rather than
// walked.
const maxDepth = 64

// errNotObject is the refusal of a document that is not one JSON object.
var errNotObject = errors.New("must be one JSON object")

// scanSpec says which keys a scan keeps and which it refuses.
type scanSpec struct {
	// wanted keys keep their raw value; every other key's value is skipped
	// without being copied or decoded (benign host metadata).
	wanted []string
	// forbidden reports whether a key (as written, unescaped) is refused.
	forbidden func(key string) bool
	// nested applies forbidden to the keys of objects at every depth, not
	// only at the top level.
	nested bool
}

// scanResult is what a scan kept.
type scanResult struct {
	values    map[string][]byte // wanted key -> raw value (a sub-slice of the input)
	forbidden []string          // forbidden keys found, sorted, unique
	unknown   []string          // top-level keys not wanted, in document order
}

// scan walks data, which must be exactly one JSON object, and applies spec.
// Duplicate top-level keys are refused (a second "cwd" must not shadow the
// first). The values of keys that are not wanted are never decoded or kept;
// only their keys are inspected when spec.nested is set.
func scan(data []byte, spec scanSpec) (scanResult, error) {
	res := scanResult{values: map[string][]byte{}}
	if !json.Valid(data) {
		return res, errors.New("is not valid JSON")
	}
	c := cursor{b: data}
	c.ws()
	if c.peek() != '{' {
		return res, errNotObject
	}
	seen := map[string]bool{}
	forbid := func(k string) {
		if spec.forbidden == nil || !spec.forbidden(k) {
			return
		}
		if k = normKey(k); !slices.Contains(res.forbidden, k) {
			res.forbidden = append(res.forbidden, k)
		}
	}
	var onNested func(string)
	if spec.nested {
		onNested = forbid
	}
	c.i++
	c.ws()
	if c.peek() == '}' {
		c.i++
	} else {
		for {
			c.ws()
			key, err := unquote(c.str())
			if err != nil {
				return res, err
			}
			if seen[key] {
				return res, fmt.Errorf("repeats a key%s", named(key))
			}
			seen[key] = true
			forbid(key)
			c.ws()
			c.i++ // ':'
			c.ws()
			start := c.i
			if err := c.value(onNested, 1); err != nil {
				return res, err
			}
			if slices.Contains(spec.wanted, key) {
				res.values[key] = data[start:c.i]
			} else {
				res.unknown = append(res.unknown, key)
			}
			c.ws()
			if c.peek() == ',' {
				c.i++
				continue
			}
			c.i++ // '}'
			break
		}
	}
	c.ws()
	if c.i != len(data) {
		return res, errNotObject
	}
	slices.Sort(res.forbidden)
	return res, nil
}

// cursor walks a document already checked by json.Valid, so it only tracks
// structure; it never allocates for values.
type cursor struct {
	b []byte
	i int
}

func (c *cursor) peek() byte {
	if c.i < len(c.b) {
		return c.b[c.i]
	}
	return 0
}

func (c *cursor) ws() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// str returns the string token at the cursor, quotes included.
func (c *cursor) str() []byte {
	start := c.i
	c.i++
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case '\\':
			c.i += 2
		case '"':
			c.i++
			return c.b[start:c.i]
		default:
			c.i++
		}
	}
	return c.b[start:]
}

// value skips one value. When onKey is set, it is called with every key of
// every object inside the value.
func (c *cursor) value(onKey func(string), depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("nests deeper than %d levels", maxDepth)
	}
	switch c.peek() {
	case '"':
		c.str()
	case '{':
		c.i++
		c.ws()
		if c.peek() == '}' {
			c.i++
			return nil
		}
		for {
			c.ws()
			raw := c.str()
			if onKey != nil {
				k, err := unquote(raw)
				if err != nil {
					return err
				}
				onKey(k)
			}
			c.ws()
			c.i++ // ':'
			c.ws()
			if err := c.value(onKey, depth+1); err != nil {
				return err
			}
			c.ws()
			if c.peek() == ',' {
				c.i++
				continue
			}
			c.i++ // '}'
			return nil
		}
	case '[':
		c.i++
		c.ws()
		if c.peek() == ']' {
			c.i++
			return nil
		}
		for {
			c.ws()
			if err := c.value(onKey, depth+1); err != nil {
				return err
			}
			c.ws()
			if c.peek() == ',' {
				c.i++
				continue
			}
			c.i++ // ']'
			return nil
		}
	default: // number, true, false, null
		for c.i < len(c.b) {
			switch c.b[c.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return nil
			}
			c.i++
		}
	}
	return nil
}

// unquote decodes a string token (a key); escapes are honoured so that
// "\u0063apability" is the key capability.
func unquote(raw []byte) (string, error) {
	if len(raw) < 2 {
		return "", errors.New("is not valid JSON")
	}
	if !slices.Contains(raw, '\\') {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errors.New("is not valid JSON")
	}
	return s, nil
}

// named renders a key for an error message. Keys are chosen by whoever
// wrote the document, so only what looks like a field name (at most 40
// bytes of lowercase letters, digits and '_', normal sensitivity) is
// echoed; anything else could carry a value (a path, an id, a secret) and
// is not repeated.
func named(key string) string {
	if key == "" || len(key) > 40 {
		return ""
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return ""
		}
	}
	if memory.InspectText(key) != memory.SensitivityNormal {
		return ""
	}
	return fmt.Sprintf(" (%q)", key)
}

// normKey is the form forbidden keys are matched in: lowercase, '-' as '_'.
func normKey(k string) string { return strings.ReplaceAll(strings.ToLower(k), "-", "_") }

// quoteKeys renders forbidden keys (normalized, hence on a published list)
// for an error message.
func quoteKeys(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}
