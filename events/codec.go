package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// MaxDepth bounds the nesting of any JSON document we accept from outside.
const MaxDepth = 32

// UnknownKeyError names a key that the target type does not declare.
type UnknownKeyError struct{ Key string }

func (e *UnknownKeyError) Error() string { return fmt.Sprintf("unknown key %q", e.Key) }

// DuplicateKeyError names a key that appears twice in one object.
type DuplicateKeyError struct{ Key string }

func (e *DuplicateKeyError) Error() string { return fmt.Sprintf("duplicate key %q", e.Key) }

// StrictUnmarshal decodes one JSON value into v and rejects what
// encoding/json lets through silently: unknown keys at any level (named),
// duplicate keys (named), nesting deeper than MaxDepth and trailing data.
// Callers bound the size of data before calling.
func StrictUnmarshal(data []byte, v any) error {
	if err := checkStructure(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		const prefix = "json: unknown field "
		if msg := err.Error(); strings.HasPrefix(msg, prefix) {
			if k, uerr := strconv.Unquote(msg[len(prefix):]); uerr == nil {
				return &UnknownKeyError{Key: k}
			}
		}
		return fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("decode: trailing data after JSON value")
	}
	return nil
}

// checkStructure walks the tokens once to reject duplicate keys and deep
// nesting before any typed decoding happens.
func checkStructure(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		obj    bool
		keys   map[string]struct{}
		expKey bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if len(stack) != 0 {
				return errors.New("decode: unexpected end of JSON")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		top := len(stack) - 1
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= MaxDepth {
					return fmt.Errorf("decode: nesting deeper than %d", MaxDepth)
				}
				if top >= 0 && stack[top].obj {
					stack[top].expKey = true
				}
				stack = append(stack, frame{obj: t == '{', expKey: t == '{'})
			default:
				stack = stack[:top]
			}
		case string:
			if top >= 0 && stack[top].obj && stack[top].expKey {
				if stack[top].keys == nil {
					stack[top].keys = map[string]struct{}{}
				}
				if _, dup := stack[top].keys[t]; dup {
					return &DuplicateKeyError{Key: t}
				}
				stack[top].keys[t] = struct{}{}
				stack[top].expKey = false
				continue
			}
			if top >= 0 && stack[top].obj {
				stack[top].expKey = true
			}
		default:
			if top >= 0 && stack[top].obj {
				stack[top].expKey = true
			}
		}
	}
}

func compact(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw // invalid JSON is reported by the payload decoder
	}
	return buf.Bytes()
}

// storedSuffixLen is len(`,"prev_hash":"` + 64 hex + `","hash":"` + 64 hex + `"}`).
const storedSuffixLen = 14 + 64 + 10 + 64 + 2

// DecodeStored decodes bytes this package's Encode produced. It is the fast
// path for reading our own ledger (replay, rebuild, verify): a fixed-order
// scan with no reflection. Anything that does not have the exact layout is an
// error; verify then reports the position. It does not validate the payload
// nor recompute the hash: verify does that explicitly.
func DecodeStored(b []byte) (Envelope, error) {
	var e Envelope
	p := b
	var ok bool
	var s string
	bad := func(what string) (Envelope, error) {
		return Envelope{}, fmt.Errorf("stored envelope: malformed %s", what)
	}
	if p, ok = cut(p, `{"id":"`); !ok || len(p) < 26 {
		return bad("id")
	}
	if err := e.ID.UnmarshalText(p[:26]); err != nil {
		return bad("id")
	}
	p = p[26:]
	if p, ok = cut(p, `","stream":"`); !ok {
		return bad("stream")
	}
	if s, p, ok = until(p, '"'); !ok {
		return bad("stream")
	}
	e.Stream = s
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
	if e.Type, p, ok = until(p, '"'); !ok {
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
	if s, p, ok = until(p, '"'); !ok {
		return bad("recorded_at")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return bad("recorded_at")
	}
	e.RecordedAt = t.UTC()
	if p, ok = cut(p, `","actor":"`); !ok {
		return bad("actor")
	}
	if e.Actor, p, ok = until(p, '"'); !ok {
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
	e.PrevHash = string(tail[:64])
	if tail, ok = cut(tail[64:], `","hash":"`); !ok {
		return bad("hash")
	}
	e.Hash = string(tail[:64])
	if string(tail[64:]) != `"}` {
		return bad("end")
	}
	return e, nil
}

func cut(p []byte, prefix string) ([]byte, bool) {
	if len(p) < len(prefix) || string(p[:len(prefix)]) != prefix {
		return p, false
	}
	return p[len(prefix):], true
}

func until(p []byte, c byte) (string, []byte, bool) {
	i := bytes.IndexByte(p, c)
	if i < 0 {
		return "", p, false
	}
	return string(p[:i]), p[i:], true
}

func uintUntil(p []byte, c byte) (uint64, []byte, bool) {
	i := bytes.IndexByte(p, c)
	if i <= 0 || i > 20 {
		return 0, p, false
	}
	v, err := strconv.ParseUint(string(p[:i]), 10, 64)
	if err != nil {
		return 0, p, false
	}
	return v, p[i:], true
}

// PeekType returns the type of a stored envelope without decoding it, so a
// fold can skip events it does not handle. ok is false for bytes that do not
// have the stored layout.
func PeekType(b []byte) (string, bool) {
	i := bytes.Index(b, []byte(`,"type":"`))
	if i < 0 {
		return "", false
	}
	rest := b[i+9:]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return string(rest[:j]), true
}

// ParseID is ulid.ParseStrict with a message that names the input.
func ParseID(s string) (ulid.ULID, error) {
	id, err := ulid.ParseStrict(s)
	if err != nil {
		return ulid.ULID{}, fmt.Errorf("invalid event id %q: %w", s, err)
	}
	return id, nil
}
