//go:build goexperiment.jsonv2

package strictjson

import (
	jsonv2 "encoding/json/v2"
	"strconv"
	"testing"
)

// The encoding/json/v2 figures beside the strict decoder's, in the same
// run (GOEXPERIMENT=jsonv2 go test -bench . ./events/strictjson):
// v2 rejects duplicate names by default and, with RejectUnknownMembers,
// unknown keys; it is the migration path (docs/ledger.md).

func BenchmarkWideObjectJSONv2(b *testing.B) {
	for _, n := range wideSizes {
		data := wideObject(n, false)
		dup := wideObject(n, true)
		name := "keys=" + strconv.Itoa(n)
		b.Run(name+"/json-v2-map-any", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var m map[string]any
				if err := jsonv2.Unmarshal(data, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/json-v2-refuse-duplicate", func(b *testing.B) {
			b.SetBytes(int64(len(dup)))
			for b.Loop() {
				var m map[string]any
				if err := jsonv2.Unmarshal(dup, &m); err == nil {
					b.Fatal("duplicate accepted")
				}
			}
		})
	}
}

func BenchmarkSmallStructJSONv2(b *testing.B) {
	b.SetBytes(int64(len(smallJSON)))
	for b.Loop() {
		var v smallDoc
		if err := jsonv2.Unmarshal(smallJSON, &v, jsonv2.RejectUnknownMembers(true)); err != nil {
			b.Fatal(err)
		}
	}
}
