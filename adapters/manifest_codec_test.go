package adapters

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tree-ring/tree-ring/events/strictjson"
)

// checkRawManifest: whatever the hand-written walk reads, strictjson reads
// to the same value.
func checkRawManifest(t *testing.T, data []byte) bool {
	t.Helper()
	fast, ok := fastRawManifest(data)
	if !ok {
		return false
	}
	var want rawManifest
	if err := strictjson.Unmarshal(data, &want); err != nil || !reflect.DeepEqual(fast, want) {
		t.Fatalf("%q: fast %+v, strictjson %+v %v", data, fast, want, err)
	}
	return true
}

// TestRawManifestFastPath: the manifests Encode writes (the sample and the
// golden file) take the hand-written walk; shapes it does not read fall
// back to strictjson.
func TestRawManifestFastPath(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join(repo, "testdata", "adapters", "manifest.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{sampleManifest().Encode(), golden, []byte(`{}`), []byte(`{"harnesses":{"codex":{"owned_files":[],"managed_blocks":[]}}}`)} {
		if !checkRawManifest(t, data) {
			t.Errorf("not read by the fast path:\n%s", data)
		}
	}
	for _, in := range []string{`null`, `{"store_id":null}`, `{"harnesses":null}`, `{"schema_version":1.0}`, `{"x":1}`, `{"harnesses":{"a":{"y":1}}}`,
		`{"harnesses":{"a":{},"a":{}}}`, `{"harnesses":{"a":{"owned_files":[{"path":1}]}}}`, `{} {}`, `{"cli_version":"\xff"}`} {
		if checkRawManifest(t, []byte(in)) {
			t.Errorf("%s: read by the fast path", in)
		}
		if _, err := DecodeManifest([]byte(in)); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
}

func FuzzDecodeRawManifest(f *testing.F) {
	f.Add(sampleManifest().Encode())
	f.Add([]byte(`{"harnesses":{"codex":{"state":"x","owned_files":[{"path":"p","sha256":"s"}],"managed_blocks":[{"block_id":"b","leading_separator":"\n"}]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) { checkRawManifest(t, data) })
}
