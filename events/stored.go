package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	f, err := parseStored(b)
	if err != nil {
		return Envelope{}, err
	}
	e := f.e
	// One string allocation backs stream, type, actor and both hashes.
	var sb strings.Builder
	sb.Grow(len(f.stream) + len(f.typ) + len(f.actor) + 128)
	sb.Write(f.stream)
	sb.Write(f.typ)
	sb.Write(f.actor)
	sb.Write(f.prev)
	sb.Write(f.hash)
	s := sb.String()
	n := 0
	take := func(k int) string { v := s[n : n+k]; n += k; return v }
	e.Stream = take(len(f.stream))
	e.Type = take(len(f.typ))
	e.Actor = take(len(f.actor))
	e.PrevHash = take(64)
	e.Hash = take(64)
	return e, nil
}

// DecodeStoredFold is DecodeStoredRef for a fold, which reads neither
// hash (fold.Projection): PrevHash and Hash are left empty, and the
// stream, type and actor strings come from c, so that a fold over many
// events of the same streams allocates nothing per event. c is not safe
// for concurrent use.
//
// typ is the type the caller already read (PeekTypeBytes, TypeName), or
// "": it is used when the envelope's type is exactly that.
func DecodeStoredFold(b []byte, typ string, c *StringCache) (Envelope, error) {
	f, err := parseStored(b)
	if err != nil {
		return Envelope{}, err
	}
	e := f.e
	if string(f.typ) == typ {
		e.Type = typ
	} else if t, ok := TypeName(f.typ); ok {
		e.Type = t
	} else {
		e.Type = c.String(f.typ)
	}
	e.Stream = c.String(f.stream)
	if len(f.actor) > 0 {
		e.Actor = c.String(f.actor)
	}
	return e, nil
}

// DecodeFoldPayload decodes e's payload (DecodePayload: strictly, with
// its checks) and keeps the value on e, where VerifiedPayload finds it, so
// that the several folds of one stored event (the recall and duplicate
// indexes each read a memory's payload) share one decode, as they share
// the value Factory.New checked on append. It carries no seal: CarriesSeal
// and CarriedStored stay false for e.
func DecodeFoldPayload(e *Envelope) error {
	v, err := DecodePayload(e)
	if err != nil {
		return err
	}
	// Version 0: no chain values, like a Factory's envelope before append.
	e.verified = &verifiedEnvelope{
		e:       Envelope{Stream: e.Stream, Type: e.Type, SchemaVersion: e.SchemaVersion, Payload: e.Payload},
		payload: v,
	}
	return nil
}

// StringCache hands out one shared string per distinct byte sequence, up
// to a bound (past it, each call allocates as string(b) would). The zero
// value is ready to use; it lives as long as one fold.
type StringCache struct{ m map[string]string }

// stringCacheMax bounds a cache's entries: streams repeat (a run's, a
// harness's), but a fold over a million single-event streams must not keep
// them all.
const stringCacheMax = 4096

// String returns string(b), shared with earlier calls for the same bytes.
func (c *StringCache) String(b []byte) string {
	if s, ok := c.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if c.m == nil {
		c.m = make(map[string]string, 64)
	}
	if len(c.m) < stringCacheMax {
		c.m[s] = s
	}
	return s
}

// storedFields are the parts of a stored envelope, aliasing its bytes.
type storedFields struct {
	e                              Envelope // ID, Version, Position, SchemaVersion, RecordedAt, Payload
	stream, typ, actor, prev, hash []byte
}

// parseStored splits bytes this package's Encode produced into their
// fields, checking the exact layout.
func parseStored(b []byte) (storedFields, error) {
	var f storedFields
	e := &f.e
	bad := func(what string) (storedFields, error) {
		return storedFields{}, fmt.Errorf("stored envelope: malformed %s", what)
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
	if len(p) < storedSuffixLen {
		return bad("stream")
	}
	var at []byte
	if f.stream, p, ok = until(p, '"'); !ok {
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
	if f.typ, p, ok = until(p, '"'); !ok {
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
	if f.actor, p, ok = until(p, '"'); !ok {
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
	f.prev = tail[:64]
	if tail, ok = cut(tail[64:], `","hash":"`); !ok {
		return bad("hash")
	}
	f.hash = tail[:64]
	if string(tail[64:]) != `"}` {
		return bad("end")
	}
	t, err := parseUTC(at)
	if err != nil {
		return bad("recorded_at")
	}
	e.RecordedAt = t
	return f, nil
}

// parseUTC parses an RFC 3339 UTC timestamp (suffix Z), as Encode writes
// it. The layout Encode produces is parsed by hand (replay decodes one per
// event); anything else goes through time's parser.
func parseUTC(b []byte) (time.Time, error) {
	if len(b) == 0 || b[len(b)-1] != 'Z' {
		return time.Time{}, errors.New("not UTC")
	}
	if t, ok := parseCanonicalUTC(b); ok {
		return t, nil
	}
	var t time.Time
	if err := t.UnmarshalText(b); err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// parseCanonicalUTC parses "YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z" with fields in
// range; ok is false for anything else (the caller falls back).
func parseCanonicalUTC(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(b[0:4])
	month, ok2 := num(b[5:7])
	day, ok3 := num(b[8:10])
	hour, ok4 := num(b[11:13])
	minute, ok5 := num(b[14:16])
	sec, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(year, month) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	rest := b[19 : len(b)-1]
	if len(rest) > 0 {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
			return time.Time{}, false
		}
		f, ok := num(rest[1:])
		if !ok {
			return time.Time{}, false
		}
		for i := len(rest) - 1; i < 9; i++ {
			f *= 10
		}
		nsec = f
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	default:
		return 31
	}
}

func cut(p []byte, prefix string) ([]byte, bool) {
	if len(p) < len(prefix) || string(p[:len(prefix)]) != prefix {
		return p, false
	}
	return p[len(prefix):], true
}

// until splits p at its first c. The fields it finds are short (at most
// 200 bytes): a plain loop beats bytes.IndexByte's set-up per call.
func until(p []byte, c byte) ([]byte, []byte, bool) {
	for i, d := range p {
		if d == c {
			return p[:i], p[i:], true
		}
	}
	return nil, p, false
}

func uintUntil(p []byte, c byte) (uint64, []byte, bool) {
	// A uint64 has at most 20 digits: look for c no further than that.
	i := -1
	for j, d := range p[:min(len(p), 21)] {
		if d == c {
			i = j
			break
		}
	}
	if i <= 0 {
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
