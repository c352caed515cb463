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
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/events/strictjson"
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
}

// scan reads data, which must be exactly one JSON object, with
// strictjson's Reader and applies spec: keys are read exactly as the
// strict decoder reads them (escapes decoded, so "\u0063wd" is the key
// cwd), and a repeated key at any depth is refused (a second "cwd" must not
// shadow the first). The values of keys that are not wanted are checked
// but never decoded or kept; only their keys are inspected when
// spec.nested is set. Errors never carry a value from data, and name a key
// only when it looks like a field name (named).
func scan(data []byte, spec scanSpec) (scanResult, error) {
	res := scanResult{values: map[string][]byte{}}
	forbid := func(key []byte) {
		if spec.forbidden == nil || !spec.forbidden(string(key)) {
			return
		}
		if k := normKey(string(key)); !slices.Contains(res.forbidden, k) {
			res.forbidden = append(res.forbidden, k)
		}
	}
	r := strictjson.NewReader(data, strictjson.Limits{MaxBytes: adapters.MaxStdinBytes, MaxDepth: maxDepth})
	if r.Kind() != "object" {
		if err := r.Skip(); err != nil {
			return res, scanErr(err)
		}
		return res, errNotObject
	}
	err := r.Object(func(k []byte) error {
		key := string(k)
		forbid(k)
		var raw []byte
		var err error
		if spec.nested {
			raw, err = r.RawKeys(forbid)
		} else {
			raw, err = r.Raw()
		}
		if err != nil {
			return err
		}
		if slices.Contains(spec.wanted, key) {
			res.values[key] = raw
		}
		return nil
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return res, scanErr(err)
	}
	slices.Sort(res.forbidden)
	return res, nil
}

// scanErr turns a strict decoding error into a message safe to print: the
// kind of fault, and a key only through named.
func scanErr(err error) error {
	var dup *strictjson.DuplicateKeyError
	var deep *strictjson.DepthError
	switch {
	case errors.As(err, &dup):
		return fmt.Errorf("repeats a key%s", memory.EchoKey(dup.Key))
	case errors.As(err, &deep):
		return fmt.Errorf("nests deeper than %d levels", maxDepth)
	default:
		return errors.New("is not valid JSON")
	}
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
