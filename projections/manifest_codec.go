package projections

import (
	"fmt"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/strictjson"
)

// decodeStoredRecord reads a record as Apply stores it (json.Marshal of a
// storedRecord) without reflection: the hook reads one record per
// preflight, and encoding/json's first use of the type (its field cache)
// cost more than the rest of the ledger check. It is stricter than
// json.Unmarshal (exact keys, no duplicates, no nulls, valid UTF-8), and
// every value it accepts decodes the same under json.Unmarshal (a test and
// a fuzz target hold the two to that).
func decodeStoredRecord(raw []byte) (storedRecord, error) {
	var s storedRecord
	r := strictjson.NewReader(raw, strictjson.Limits{MaxDepth: 4})
	str := func(dst *string) error {
		b, err := r.String()
		*dst = string(b)
		return err
	}
	err := r.Object(func(key []byte) error {
		switch string(key) {
		case "published":
			var err error
			s.Published, err = r.Bool()
			return err
		case "record":
			return r.Object(func(key []byte) error {
				rec := &s.Record
				switch string(key) {
				case "state":
					return str(&rec.State)
				case "adapter_version":
					return str(&rec.AdapterVersion)
				case "adapter_capability":
					return str(&rec.AdapterCapability)
				case "bridge_fingerprint":
					return str(&rec.BridgeFingerprint)
				case "bridge_path":
					return str(&rec.BridgePath)
				case "owned_files":
					rec.OwnedFiles = []events.FileDigest{}
					return r.Array(func(int) error {
						var f events.FileDigest
						err := r.Object(func(key []byte) error {
							switch string(key) {
							case "path":
								return str(&f.Path)
							case "sha256":
								return str(&f.SHA256)
							}
							return fmt.Errorf("unknown key %q at %s", key, r.Path())
						})
						rec.OwnedFiles = append(rec.OwnedFiles, f)
						return err
					})
				case "managed_blocks":
					rec.ManagedBlocks = []events.BlockDigest{}
					return r.Array(func(int) error {
						var b events.BlockDigest
						err := r.Object(func(key []byte) error {
							switch string(key) {
							case "path":
								return str(&b.Path)
							case "block_id":
								return str(&b.BlockID)
							case "sha256":
								return str(&b.SHA256)
							case "leading_separator":
								return str(&b.LeadingSeparator)
							}
							return fmt.Errorf("unknown key %q at %s", key, r.Path())
						})
						rec.ManagedBlocks = append(rec.ManagedBlocks, b)
						return err
					})
				}
				return fmt.Errorf("unknown key %q at %s", key, r.Path())
			})
		}
		return fmt.Errorf("unknown key %q at %s", key, r.Path())
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return storedRecord{}, err
	}
	return s, nil
}
