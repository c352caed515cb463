package recall

import (
	"encoding/binary"
	"fmt"

	"github.com/tree-ring/tree-ring/events/memory"
)

// State is the lifecycle of a stored memory.
type State struct {
	Superseded bool // superseded_by is set
	Redacted   bool // a tombstone: the text was replaced by "[REDACTED]"
}

// Lookup returns the memory id as recorded (payload, state and body), ok
// false when the index does not hold it (never captured, or deleted).
func Lookup(kv KV, bodies Bodies, id string) (memory.Record, State, bool, error) {
	if err := checkLayout(kv); err != nil {
		return memory.Record{}, State{}, false, err
	}
	_, _, c, ok, err := load(kv, id)
	if err != nil || !ok {
		return memory.Record{}, State{}, false, err
	}
	rec, err := join(bodies, &c)
	return rec, State{Superseded: c.SupersededBy != "", Redacted: c.Redacted}, err == nil, err
}

func join(bodies Bodies, c *cold) (memory.Record, error) {
	raw := bodies.Body(c.BodySHA256)
	if raw == nil {
		return memory.Record{}, fmt.Errorf("memory %s: body %.12s is missing", c.MemoryID, c.BodySHA256)
	}
	b, err := memory.UnmarshalBody(raw)
	if err != nil {
		return memory.Record{}, fmt.Errorf("memory %s: %w", c.MemoryID, err)
	}
	return memory.Join(&c.MemoryCaptured, c.SupersededBy, &b), nil
}

// BodyDigest returns the digest of the current body of id ("" if unknown).
func BodyDigest(kv KV, id string) string {
	_, _, c, ok, err := load(kv, id)
	if err != nil || !ok {
		return ""
	}
	return c.BodySHA256
}

// Claimed returns the memory that holds an operation claim, if any.
func Claimed(kv KV, claim [32]byte) (string, bool) {
	v := kv.Get(key(pClaim, claim[:]))
	return string(v), v != nil
}

// Each calls fn with every memory the index holds (not deleted), in
// capture order.
func Each(kv KV, bodies Bodies, fn func(rec memory.Record, st State) error) error {
	if err := checkLayout(kv); err != nil {
		return err
	}
	return kv.ForEach([]byte{pHot}, func(k, v []byte) error {
		if len(k) != 5 {
			return fmt.Errorf("recall: malformed key")
		}
		h, ok := decodeHot(v)
		if !ok {
			return fmt.Errorf("recall: doc %d: malformed record", binary.BigEndian.Uint32(k[1:]))
		}
		cv, err := parseCold(h.cold, &h)
		if err != nil {
			return fmt.Errorf("recall: doc %d: %w", binary.BigEndian.Uint32(k[1:]), err)
		}
		c := cv.cold()
		rec, err := join(bodies, &c)
		if err != nil {
			return err
		}
		return fn(rec, State{Superseded: c.SupersededBy != "", Redacted: c.Redacted})
	})
}
