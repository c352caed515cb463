package projections

import "encoding/json"

// The projections store their records as json.Marshal writes them and read
// them back with json.Unmarshal: the bytes are each projection's own
// encoding, versioned by its Version().

// decodeJSON decodes a stored record.
func decodeJSON[T any](raw []byte) (T, error) {
	var v T
	err := json.Unmarshal(raw, &v)
	return v, err
}

// putJSON stores v's JSON at key.
func putJSON(kv KV, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return kv.Put(key, raw)
}
