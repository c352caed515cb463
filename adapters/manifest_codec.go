package adapters

import "github.com/tree-ring/tree-ring/events/strictjson"

// decodeRawManifest is strictjson.Unmarshal of activation.json into a
// rawManifest, read by hand first: every hook decodes the manifest, and
// strictjson's reflective schema of its nested types cost more than the
// rest of the contract check. Whatever the hand-written walk does not
// read (a null, a number out of range, an unknown key, a syntax error),
// strictjson.Unmarshal decodes, for the exact result or error; whatever
// it reads, strictjson.Unmarshal reads the same (FuzzDecodeRawManifest).
func decodeRawManifest(data []byte) (rawManifest, error) {
	if raw, ok := fastRawManifest(data); ok {
		return raw, nil
	}
	var raw rawManifest
	err := strictjson.Unmarshal(data, &raw)
	return raw, err
}

func fastRawManifest(data []byte) (raw rawManifest, ok bool) {
	r := strictjson.NewReader(data, strictjson.Limits{})
	err := r.Fields(func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
		case "schema_version":
			return intPtrTo(&raw.SchemaVersion)
		case "protocol_version":
			return intPtrTo(&raw.ProtocolVersion)
		case "store_id":
			return strPtrTo(&raw.StoreID)
		case "project_root_fingerprint":
			return strPtrTo(&raw.ProjectRootFingerprint)
		case "cli_version":
			return strPtrTo(&raw.CLIVersion)
		case "harnesses":
			return func(r *strictjson.Reader) error {
				hs := map[string]rawRecord{}
				raw.Harnesses = &hs
				return r.Object(func(id []byte) error {
					var rr rawRecord
					err := r.Fields(rawRecordFields(&rr))
					hs[string(id)] = rr
					return err
				})
			}
		}
		return nil
	})
	if err == nil {
		err = r.End()
	}
	return raw, err == nil
}

func rawRecordFields(rr *rawRecord) func([]byte) func(*strictjson.Reader) error {
	return func(k []byte) func(*strictjson.Reader) error {
		switch string(k) {
		case "state":
			return strPtrTo(&rr.State)
		case "adapter_version":
			return strPtrTo(&rr.AdapterVersion)
		case "adapter_capability":
			return strPtrTo(&rr.AdapterCapability)
		case "bridge_fingerprint":
			return strPtrTo(&rr.BridgeFingerprint)
		case "bridge_path":
			return strPtrTo(&rr.BridgePath)
		case "owned_files":
			return func(r *strictjson.Reader) error {
				rr.OwnedFiles = []rawOwnedFile{}
				return r.Array(func(int) error {
					var f rawOwnedFile
					err := r.Fields(func(k []byte) func(*strictjson.Reader) error {
						switch string(k) {
						case "path":
							return strPtrTo(&f.Path)
						case "sha256":
							return strPtrTo(&f.SHA256)
						}
						return nil
					})
					rr.OwnedFiles = append(rr.OwnedFiles, f)
					return err
				})
			}
		case "managed_blocks":
			return func(r *strictjson.Reader) error {
				rr.ManagedBlocks = []rawManagedBlk{}
				return r.Array(func(int) error {
					var b rawManagedBlk
					err := r.Fields(func(k []byte) func(*strictjson.Reader) error {
						switch string(k) {
						case "path":
							return strPtrTo(&b.Path)
						case "block_id":
							return strPtrTo(&b.BlockID)
						case "sha256":
							return strPtrTo(&b.SHA256)
						case "leading_separator":
							return strPtrTo(&b.LeadingSeparator)
						}
						return nil
					})
					rr.ManagedBlocks = append(rr.ManagedBlocks, b)
					return err
				})
			}
		}
		return nil
	}
}

// strPtrTo and intPtrTo read a present member into a new value (a null is
// left to the fallback).
func strPtrTo(dst **string) func(*strictjson.Reader) error {
	return func(r *strictjson.Reader) error {
		*dst = new(string)
		return strictjson.StringTo(*dst)(r)
	}
}

func intPtrTo(dst **int) func(*strictjson.Reader) error {
	return func(r *strictjson.Reader) error {
		*dst = new(int)
		return strictjson.IntTo(*dst)(r)
	}
}
