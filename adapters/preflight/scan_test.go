package preflight

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events/strictjson"
)

// allKeys collects the keys of every object nested inside v.
func allKeys(v any, into func(string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			into(k)
			allKeys(e, into)
		}
	case []any:
		for _, e := range x {
			allKeys(e, into)
		}
	}
}

// FuzzScan is the differential target of the hook stdin scanner: the same
// bytes go to scan (the fast path every hook and adapter request takes)
// and to the strict decoder; they must agree on the verdict, on every
// top-level key and its raw value, and on which forbidden keys the
// document holds at any depth.
func FuzzScan(f *testing.F) {
	seedFiles(f, "harness-payloads/*/*.json", "adapters/*/stdin/*.json")
	f.Add([]byte(`{"cwd":"/p","c\u0077d":"/q"}`))
	f.Add([]byte(`{"a":{"b":1,"\u0062":2}}`))
	f.Add([]byte(`{"session_id":"s","x":[{"Memory-Root":1,"task_hint":{"Store_ID":2}}]}`))
	wanted := []string{"session_id", "cwd", "hook_event_name", "agent_type", "agent_id", "stop_hook_active"}
	forbidden := func(k string) bool { return slices.Contains(adapters.AdapterStdinForbidden(), normKey(k)) }
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := scan(data, scanSpec{wanted: wanted, forbidden: forbidden, nested: true})
		var top map[string]json.RawMessage
		serr := strictjson.Limits{MaxDepth: maxDepth}.Unmarshal(data, &top)
		if serr == nil && top == nil {
			serr = errNotObject // null
		}
		if (err == nil) != (serr == nil) {
			t.Fatalf("scan %v, strict decoder %v, on %q", err, serr, data)
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		var want []string
		var unknown int
		for k, v := range top {
			if slices.Contains(wanted, k) {
				if string(res.values[k]) != string(v) {
					t.Fatalf("key %q: scan kept %q, strict decoder %q", k, res.values[k], v)
				}
			} else {
				unknown++
			}
		}
		if len(res.values)+unknown != len(top) {
			t.Fatalf("scan kept %d keys and skipped %d, strict decoder %d", len(res.values), unknown, len(top))
		}
		var doc any
		if err := looseDecode(data, &doc); err != nil {
			t.Fatal(err)
		}
		allKeys(doc, func(k string) {
			if forbidden(k) && !slices.Contains(want, normKey(k)) {
				want = append(want, normKey(k))
			}
		})
		slices.Sort(want)
		if !reflect.DeepEqual(res.forbidden, want) && (len(want) > 0 || len(res.forbidden) > 0) {
			t.Fatalf("forbidden keys: scan %q, strict decoder %q", res.forbidden, want)
		}
	})
}
