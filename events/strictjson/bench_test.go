package strictjson

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
)

// wideObject is one object of n keys "k00000":123 (13 bytes a member, so
// 80,000 keys are just under MaxBytes). With dup the last key repeats the
// first, so the whole object is read before it is refused.
func wideObject(n int, dup bool) []byte {
	b := make([]byte, 0, 13*n+2)
	b = append(b, '{')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		k := i
		if dup && i == n-1 {
			k = 0
		}
		b = fmt.Appendf(b, `"k%05d":%d`, k, 100+i%900)
	}
	return append(b, '}')
}

// wideSizes are the object sizes of docs/benchmarks.md.
var wideSizes = []int{1_000, 10_000, 80_000}

// BenchmarkWideObject decodes (or refuses) one object of 1k/10k/80k keys.
// The baseline is encoding/json into map[string]any over the same bytes,
// which checks no duplicates; the strict decoder must stay within a small
// constant factor of it at every size (linear, not quadratic).
func BenchmarkWideObject(b *testing.B) {
	for _, n := range wideSizes {
		data := wideObject(n, false)
		dup := wideObject(n, true)
		if len(data) > MaxBytes {
			b.Fatalf("%d keys: %d bytes, over MaxBytes", n, len(data))
		}
		name := "keys=" + strconv.Itoa(n)
		b.Run(name+"/encoding-json-map-any", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var m map[string]any
				if err := json.Unmarshal(data, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/strictjson-map-any", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var m map[string]any
				if err := Unmarshal(data, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/strictjson-map-int", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var m map[string]int
				if err := Unmarshal(data, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/strictjson-valid", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := Valid(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/strictjson-refuse-duplicate", func(b *testing.B) {
			b.SetBytes(int64(len(dup)))
			for b.Loop() {
				var m map[string]any
				if err := Unmarshal(dup, &m); err == nil {
					b.Fatal("duplicate accepted")
				}
			}
		})
		b.Run(name+"/reader-object", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				r := NewReader(data, Limits{})
				if err := r.Object(func([]byte) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// smallDoc is a payload-sized document with nested objects and arrays.
type smallDoc struct {
	HarnessID string   `json:"harness_id"`
	From      string   `json:"from"`
	To        string   `json:"to"`
	ReceiptID string   `json:"receipt_id"`
	Worker    string   `json:"worker_key_fingerprint"`
	Version   uint64   `json:"version"`
	Markers   []string `json:"markers"`
	Files     []struct {
		Path   string `json:"path"`
		Sha256 string `json:"sha256"`
	} `json:"owned_files"`
}

var smallJSON = []byte(`{"harness_id":"codex","from":"configured-awaiting-proof","to":"active","receipt_id":"01M6A6FT000000000000000001","worker_key_fingerprint":"sha256:0123456789abcdef0123456789abcdef","version":3,"markers":["a","b","c"],"owned_files":[{"path":".codex/hooks.json","sha256":"00ff"},{"path":"AGENTS.md","sha256":"ff00"}]}`)

// BenchmarkSmallStruct decodes one payload-sized document into a struct;
// the baseline is encoding/json (case-insensitive, unknown keys and
// duplicates let through).
func BenchmarkSmallStruct(b *testing.B) {
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(smallJSON)))
		for b.Loop() {
			var v smallDoc
			if err := json.Unmarshal(smallJSON, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strictjson", func(b *testing.B) {
		b.SetBytes(int64(len(smallJSON)))
		for b.Loop() {
			var v smallDoc
			if err := Unmarshal(smallJSON, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
