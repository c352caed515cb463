package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
)

// storedSuffixLen is len(`,"prev_hash":"` + 64 hex + `","hash":"` + 64 hex + `"}`).
const storedSuffixLen = 14 + 64 + 10 + 64 + 2

// DecodeStored decodes bytes this package's Encode produced. It is the fast
// path for reading our own ledger (replay, rebuild, verify): a fixed-order
// scan with no reflection. Anything that does not have the exact layout is an
// error; verify then reports the position. It does not validate the payload
// nor recompute the hash: verify does that explicitly. The result owns its
// memory (b may be reused or unmapped afterwards).
func DecodeStored(b []byte) (Envelope, error) {
	e, err := DecodeStoredRef(b)
	if err != nil {
		return e, err
	}
	e.Payload = append(json.RawMessage(nil), e.Payload...)
	return e, nil
}

// DecodeStoredRef is DecodeStored without copying the payload: e.Payload
// aliases b, so the envelope is valid only as long as b is (inside the bbolt
// transaction that produced b). Folds use it to avoid a copy per event.
func DecodeStoredRef(b []byte) (Envelope, error) {
	var e Envelope
	bad := func(what string) (Envelope, error) {
		return Envelope{}, fmt.Errorf("stored envelope: malformed %s", what)
	}
	p, ok := cut(b, `{"id":"`)
	if !ok || len(p) < 26 {
		return bad("id")
	}
	if err := e.ID.UnmarshalText(p[:26]); err != nil {
		return bad("id")
	}
	p = p[26:]
	if p, ok = cut(p, `","stream":"`); !ok {
		return bad("stream")
	}
	// One string allocation backs stream, type, actor and both hashes.
	if len(p) < storedSuffixLen {
		return bad("stream")
	}
	var stream, typ, at, actor []byte
	if stream, p, ok = until(p, '"'); !ok {
		return bad("stream")
	}
	if p, ok = cut(p, `","version":`); !ok {
		return bad("version")
	}
	if e.Version, p, ok = uintUntil(p, ','); !ok {
		return bad("version")
	}
	if p, ok = cut(p, `,"position":`); !ok {
		return bad("position")
	}
	if e.Position, p, ok = uintUntil(p, ','); !ok {
		return bad("position")
	}
	if p, ok = cut(p, `,"type":"`); !ok {
		return bad("type")
	}
	if typ, p, ok = until(p, '"'); !ok {
		return bad("type")
	}
	if p, ok = cut(p, `","schema_version":`); !ok {
		return bad("schema_version")
	}
	var sv uint64
	if sv, p, ok = uintUntil(p, ','); !ok || sv > 1<<16 {
		return bad("schema_version")
	}
	e.SchemaVersion = int(sv)
	if p, ok = cut(p, `,"recorded_at":"`); !ok {
		return bad("recorded_at")
	}
	if at, p, ok = until(p, '"'); !ok {
		return bad("recorded_at")
	}
	if p, ok = cut(p, `","actor":"`); !ok {
		return bad("actor")
	}
	if actor, p, ok = until(p, '"'); !ok {
		return bad("actor")
	}
	if p, ok = cut(p, `","payload":`); !ok || len(p) < storedSuffixLen+2 {
		return bad("payload")
	}
	tail := p[len(p)-storedSuffixLen:]
	e.Payload = json.RawMessage(p[:len(p)-storedSuffixLen])
	if tail, ok = cut(tail, `,"prev_hash":"`); !ok {
		return bad("prev_hash")
	}
	prev := tail[:64]
	if tail, ok = cut(tail[64:], `","hash":"`); !ok {
		return bad("hash")
	}
	hash := tail[:64]
	if string(tail[64:]) != `"}` {
		return bad("end")
	}
	t, err := parseUTC(at)
	if err != nil {
		return bad("recorded_at")
	}
	e.RecordedAt = t
	buf := make([]byte, 0, len(stream)+len(typ)+len(actor)+128)
	buf = append(buf, stream...)
	buf = append(buf, typ...)
	buf = append(buf, actor...)
	buf = append(buf, prev...)
	buf = append(buf, hash...)
	s := string(buf)
	n := 0
	take := func(k int) string { v := s[n : n+k]; n += k; return v }
	e.Stream = take(len(stream))
	e.Type = take(len(typ))
	e.Actor = take(len(actor))
	e.PrevHash = take(64)
	e.Hash = take(64)
	return e, nil
}

// parseUTC parses the RFC 3339 UTC timestamp our Encode writes.
func parseUTC(b []byte) (time.Time, error) {
	if len(b) == 0 || b[len(b)-1] != 'Z' {
		return time.Time{}, errors.New("not UTC")
	}
	var t time.Time
	if err := t.UnmarshalText(b); err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

func cut(p []byte, prefix string) ([]byte, bool) {
	if len(p) < len(prefix) || string(p[:len(prefix)]) != prefix {
		return p, false
	}
	return p[len(prefix):], true
}

func until(p []byte, c byte) ([]byte, []byte, bool) {
	i := bytes.IndexByte(p, c)
	if i < 0 {
		return nil, p, false
	}
	return p[:i], p[i:], true
}

func uintUntil(p []byte, c byte) (uint64, []byte, bool) {
	i := bytes.IndexByte(p, c)
	if i <= 0 || i > 20 {
		return 0, p, false
	}
	var v uint64
	for _, d := range p[:i] {
		if d < '0' || d > '9' {
			return 0, p, false
		}
		nv := v*10 + uint64(d-'0')
		if nv/10 != v {
			return 0, p, false // overflow
		}
		v = nv
	}
	if i > 1 && p[0] == '0' {
		return 0, p, false // not canonical
	}
	return v, p[i:], true
}

var typeMarker = []byte(`,"type":"`)

// PeekType returns the type of a stored envelope without decoding it, so a
// fold can skip events it does not handle. ok is false for bytes that do not
// have the stored layout. The type is the first `,"type":"` field: the id,
// stream, version and position before it cannot contain that sequence.
func PeekType(b []byte) (string, bool) {
	t, ok := PeekTypeBytes(b)
	return string(t), ok
}

// PeekTypeBytes is PeekType without the string allocation; the result
// aliases b.
func PeekTypeBytes(b []byte) ([]byte, bool) {
	i := bytes.Index(b, typeMarker)
	if i < 0 {
		return nil, false
	}
	rest := b[i+len(typeMarker):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return nil, false
	}
	return rest[:j], true
}

// ParseID is ulid.ParseStrict with a message that names the input.
func ParseID(s string) (ulid.ULID, error) {
	id, err := ulid.ParseStrict(s)
	if err != nil {
		return ulid.ULID{}, fmt.Errorf("invalid event id %q: %w", s, err)
	}
	return id, nil
}
