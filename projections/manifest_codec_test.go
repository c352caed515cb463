package projections

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tree-ring/tree-ring/events"
)

// The records a manifest stores, from the smallest to one with every
// field and characters json.Marshal escapes.
func storedRecordCases() []events.BridgeRecord {
	return []events.BridgeRecord{
		{},
		{Published: true, Contract: events.BridgeContract{RecordState: "active", AdapterVersion: "1", Capability: "native"}},
		{Published: true, Contract: events.BridgeContract{
			RecordState: "active", AdapterVersion: "3", Capability: "native",
			BridgeFingerprint: "sha256:ab", BridgePath: ".codex/hooks.json",
			OwnedFiles: []events.FileDigest{{Path: "b/<x>&\"y\"", SHA256: "00"}, {Path: "a/é\u2028", SHA256: "ff"}},
			ManagedBlocks: []events.BlockDigest{
				{Path: "AGENTS.md", BlockID: "tree-ring", SHA256: "11", LeadingSeparator: "\n\n"},
				{Path: "AGENTS.md", BlockID: "a", SHA256: "22"},
			},
		}},
		{Contract: events.BridgeContract{RecordState: "review-required", AdapterVersion: "2", Capability: "guidance",
			ManagedBlocks: []events.BlockDigest{{Path: "GEMINI.md", BlockID: "b\t", SHA256: "33"}}}},
	}
}

// decodeStoredRecord reads what Apply stores exactly as json.Unmarshal did.
func TestDecodeStoredRecordMatchesEncodingJSON(t *testing.T) {
	for i, rec := range storedRecordCases() {
		raw, err := json.Marshal(storeRecord(rec))
		if err != nil {
			t.Fatal(err)
		}
		var want storedRecord
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		got, err := decodeStoredRecord(raw)
		if err != nil {
			t.Fatalf("case %d: %v on %s", i, err, raw)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: got %+v, want %+v", i, got, want)
		}
		if again, _ := json.Marshal(got); string(again) != string(raw) {
			t.Fatalf("case %d: re-encoded %s, stored %s", i, again, raw)
		}
	}
}

func TestDecodeStoredRecordRefuses(t *testing.T) {
	for _, in := range []string{
		``, `null`, `[]`, `{"published":true}x`,
		`{"published":"true"}`, `{"published":null}`, `{"Published":true}`, `{"extra":1}`,
		`{"published":true,"published":false}`,
		`{"record":{"state":1}}`, `{"record":{"unknown":""}}`, `{"record":{"owned_files":{}}}`,
		`{"record":{"owned_files":[{"path":"a","size":1}]}}`, `{"record":{"owned_files":null}}`,
		`{"record":{"managed_blocks":[{"block_id":"a","bid":"b"}]}}`,
		`{"record":{"managed_blocks":[[]]}}`, `{"record":{"state":"\xff"}}`,
		`{"record":{"owned_files":[{"path":[[[[[]]]]]}]}}`,
	} {
		if r, err := decodeStoredRecord([]byte(in)); err == nil {
			t.Errorf("%q decoded as %+v", in, r)
		}
	}
}

// FuzzDecodeStoredRecord: whatever decodeStoredRecord accepts,
// json.Unmarshal accepts with the same value.
func FuzzDecodeStoredRecord(f *testing.F) {
	for _, rec := range storedRecordCases() {
		raw, _ := json.Marshal(storeRecord(rec))
		f.Add(raw)
	}
	f.Add([]byte(`{"record":{"owned_files":[],"managed_blocks":[]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := decodeStoredRecord(raw)
		if err != nil {
			return
		}
		var want storedRecord
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("accepted %q, which json.Unmarshal refuses: %v", raw, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %+v, json.Unmarshal %+v", raw, got, want)
		}
	})
}
