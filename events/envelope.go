package events

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/tree-ring/tree-ring/events/strictjson"
)

// GenesisHash is the prev_hash of the first event of every ledger.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// MaxEnvelopeBytes bounds one encoded envelope (and one import line).
const MaxEnvelopeBytes = 256 << 10

// MaxPayloadBytes bounds the payload of one event. Memory text lives outside
// the envelope (see the bodies bucket), so payloads stay small.
const MaxPayloadBytes = 64 << 10

// Envelope wraps every fact in the ledger. The store assigns Version,
// Position, PrevHash and Hash inside the append transaction; callers fill the
// rest. An Envelope is a value: copying it is safe, and the Payload slice is
// never modified after creation.
type Envelope struct {
	ID            ulid.ULID       `json:"id"`
	Stream        string          `json:"stream"`
	Version       uint64          `json:"version"`
	Position      uint64          `json:"position"`
	Type          string          `json:"type"`
	SchemaVersion int             `json:"schema_version"`
	RecordedAt    time.Time       `json:"recorded_at"`
	Actor         string          `json:"actor"`
	Payload       json.RawMessage `json:"payload"`
	PrevHash      string          `json:"prev_hash"`
	Hash          string          `json:"hash"`

	// verified is what DecodeEnvelope checked (see CarriesSeal and
	// VerifiedPayload); nil for an envelope built any other way.
	verified *verifiedEnvelope
}

// verifiedEnvelope is an envelope as DecodeEnvelope checked it and the
// payload value its check decoded.
type verifiedEnvelope struct {
	e       Envelope
	payload any
	// stored is the input line when it was e's stored form (Encode's
	// bytes: the canonical path checked it), else nil. Never modified.
	stored []byte
}

// canonicalTag versions the canonical encoding itself.
const canonicalTag = "tree-ring.event.v1"

// CanonicalBytes returns the bytes the hash chain is computed over. It is the
// one definition used by the store, verify and import:
//
//	field(tag) field(id) field(stream) u64(version) u64(position) field(type)
//	u64(schema_version) field(recorded_at RFC3339Nano UTC) field(actor)
//	field(payload, compact JSON) field(prev_hash)
//
// where field(x) is the unsigned 64-bit big-endian length of x followed by x,
// and u64(n) is field() of the 8-byte big-endian encoding of n. Length
// delimiting makes the encoding unambiguous without escaping. The hash field
// itself is excluded.
func (e *Envelope) CanonicalBytes() []byte {
	return e.appendCanonical(make([]byte, 0, e.canonicalSize()))
}

func (e *Envelope) canonicalSize() int {
	// 11 length prefixes, 3 u64 values, the fixed-width fields, the rest.
	return 11*8 + 3*8 + len(canonicalTag) + 26 + len(e.Stream) + len(e.Type) + 8 +
		len(time.RFC3339Nano) + len(e.Actor) + len(e.Payload) + len(e.PrevHash)
}

func (e *Envelope) appendCanonical(b []byte) []byte { return e.appendCanonicalFrom(b, nil, nil) }

// appendCanonicalFrom is appendCanonical with the id's and recorded_at's
// text given (a stored line's, which are e's), or formatted when nil.
func (e *Envelope) appendCanonicalFrom(b, idText, atText []byte) []byte {
	b = appendField(b, canonicalTag)
	b = binary.BigEndian.AppendUint64(b, 26)
	if idText != nil {
		b = append(b, idText...)
	} else {
		b = appendID(b, e.ID)
	}
	b = appendField(b, e.Stream)
	b = appendU64(b, e.Version)
	b = appendU64(b, e.Position)
	b = appendField(b, e.Type)
	b = appendU64(b, uint64(e.SchemaVersion))
	// The timestamp's length is only known after formatting: reserve it.
	at := len(b)
	b = binary.BigEndian.AppendUint64(b, 0)
	if atText != nil {
		b = append(b, atText...)
	} else {
		b = appendUTC(b, e.RecordedAt)
	}
	binary.BigEndian.PutUint64(b[at:], uint64(len(b)-at-8))
	b = appendField(b, e.Actor)
	b = binary.BigEndian.AppendUint64(b, uint64(len(e.Payload)))
	b = append(b, e.Payload...)
	b = appendField(b, e.PrevHash)
	return b
}

// appendUTC appends t in UTC as time.RFC3339Nano formats it (the
// canonical and the stored form of recorded_at), by hand for the years
// Validate allows (the hash and every append format one): time's layout
// interpreter cost more than the rest of an envelope's encoding.
func appendUTC(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 1 || year > 9999 {
		return t.AppendFormat(b, time.RFC3339Nano)
	}
	hour, minute, sec := t.Clock()
	b = append(b, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+month/10), byte('0'+month%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10))
	if ns := t.Nanosecond(); ns != 0 {
		var f [10]byte
		f[0] = '.'
		for i := 9; i >= 1; i-- {
			f[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for f[n-1] == '0' {
			n--
		}
		b = append(b, f[:n]...)
	}
	return append(b, 'Z')
}

func appendID(b []byte, id ulid.ULID) []byte {
	var t [ulid.EncodedSize]byte
	_ = id.MarshalTextTo(t[:]) // cannot fail: t has the encoded size
	return append(b, t[:]...)
}

func appendField(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

func appendU64(b []byte, v uint64) []byte {
	b = binary.BigEndian.AppendUint64(b, 8)
	return binary.BigEndian.AppendUint64(b, v)
}

// ComputeHash returns the lowercase hex SHA-256 of the canonical bytes.
func (e *Envelope) ComputeHash() string {
	var buf [512]byte // most envelopes fit: no heap allocation for the bytes
	h, _ := e.hashWith(buf[:0])
	return h
}

// hashWith is ComputeHash building the canonical bytes in scratch; it
// returns scratch, grown if it had to be, for the next call.
func (e *Envelope) hashWith(scratch []byte) (string, []byte) {
	h, scratch := e.hexHash(scratch)
	return string(h[:]), scratch
}

// hexHash is hashWith without the string.
func (e *Envelope) hexHash(scratch []byte) ([64]byte, []byte) {
	scratch = e.appendCanonical(scratch[:0])
	return hexSum(scratch), scratch
}

// hexSum is the hex SHA-256 of canonical bytes: an envelope's hash.
func hexSum(canon []byte) (h [64]byte) {
	sum := sha256.Sum256(canon)
	hex.Encode(h[:], sum[:])
	return h
}

// Seal sets PrevHash and Hash. The store calls it with the chain head.
func (e *Envelope) Seal(prev string) {
	e.PrevHash = prev
	e.Hash = e.ComputeHash()
}

// SealWith is Seal building the canonical bytes in scratch, which it
// returns (grown if needed) for the next call: a bulk append reuses one
// buffer instead of allocating for every envelope past 512 bytes.
func (e *Envelope) SealWith(prev string, scratch []byte) []byte {
	e.PrevHash = prev
	e.Hash, scratch = e.hashWith(scratch)
	return scratch
}

// CarriesSeal reports whether e's hash is known to be right for version,
// position and prev without computing it again: DecodeEnvelope verified
// e's hash, e still holds exactly the fields it verified (the same
// strings and payload, which are never modified in place), and those are
// the chain values the caller is about to assign. Import uses it: an
// exported ledger imported in order into an empty one keeps every chain
// value, so each event is hashed once, when its line is checked.
func (e *Envelope) CarriesSeal(version, position uint64, prev string) bool {
	// The chain values first: a Factory's envelope, verified at version 0,
	// fails there, before the field by field comparison.
	v := e.verified
	return v != nil && v.e.Version == version && v.e.Position == position && v.e.PrevHash == prev &&
		e.asVerified() != nil
}

// asVerified returns what DecodeEnvelope verified of e if e still holds
// exactly that (the same strings and payload, which are never modified in
// place), else nil.
func (e *Envelope) asVerified() *verifiedEnvelope {
	if e.verified == nil {
		return nil
	}
	v := &e.verified.e
	if e.Version == v.Version && e.Position == v.Position && e.PrevHash == v.PrevHash && e.Hash == v.Hash &&
		v.ID == e.ID && v.Stream == e.Stream && v.Type == e.Type && v.SchemaVersion == e.SchemaVersion &&
		v.RecordedAt.Equal(e.RecordedAt) && v.Actor == e.Actor && samePayload(v.Payload, e.Payload) {
		return e.verified
	}
	return nil
}

// ResealStored gives e other chain values and appends its stored form to
// dst, as
//
//	e.Version, e.Position = version, position
//	scratch = e.SealWith(prev, scratch)
//	dst = e.AppendEncode(dst)
//
// would, for an envelope DecodeEnvelope read from its stored form and
// unchanged since: the id, the time and the line from the type to the end
// of the payload come from that line instead of being formatted again (an
// import into a ledger with history moves every event). ok is false, and
// e unchanged, for any other envelope.
func (e *Envelope) ResealStored(version, position uint64, prev string, scratch, dst []byte) (out, newScratch []byte, ok bool) {
	if e.verified == nil || e.verified.stored == nil || e.asVerified() == nil {
		return dst, scratch, false
	}
	line := e.verified.stored
	// Offsets in Encode's layout (see AppendEncode).
	const idStart, versionKey = len(`{"id":"`), len(`","stream":"`) + len(`","version":`)
	versionStart := idStart + 26 + versionKey + len(e.Stream)
	typeStart := versionStart + digits(e.Version) + len(`,"position":`) + digits(e.Position)
	payloadEnd := len(line) - storedSuffixLen
	atEnd := payloadEnd - len(e.Payload) - len(`","payload":`) - len(e.Actor) - len(`","actor":"`)
	atStart := typeStart + len(`,"type":"`) + len(e.Type) + len(`","schema_version":`) +
		digits(uint64(e.SchemaVersion)) + len(`,"recorded_at":"`)

	e.Version, e.Position, e.PrevHash = version, position, prev
	scratch = e.appendCanonicalFrom(scratch[:0], line[idStart:idStart+26], line[atStart:atEnd])
	h := hexSum(scratch)
	e.Hash = string(h[:])

	dst = append(dst, line[:versionStart]...)
	dst = strconv.AppendUint(dst, version, 10)
	dst = append(dst, `,"position":`...)
	dst = strconv.AppendUint(dst, position, 10)
	dst = append(dst, line[typeStart:payloadEnd]...)
	dst = append(dst, `,"prev_hash":"`...)
	dst = append(dst, prev...)
	dst = append(dst, `","hash":"`...)
	dst = append(dst, h[:]...)
	dst = append(dst, `"}`...)
	return dst, scratch, true
}

// digits is len(strconv.FormatUint(n, 10)).
func digits(n uint64) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// CarriedStored is CarriesSeal that also returns, when DecodeEnvelope
// read e from its stored form, those bytes: what Encode would return for
// e (nil when e came through the strict decoder). They are shared and must
// not be modified. An import puts them as they are instead of encoding
// the envelope again.
func (e *Envelope) CarriedStored(version, position uint64, prev string) ([]byte, bool) {
	if !e.CarriesSeal(version, position, prev) {
		return nil, false
	}
	return e.verified.stored, true
}

// VerifiedPayload returns the payload value DecodeEnvelope or Factory.New
// decoded when it checked e (DecodePayload's), if e still holds the type,
// schema version, stream and payload bytes it checked. The value is shared:
// the caller must not modify it. Validate and the folds use it instead of
// decoding each payload a second time.
func VerifiedPayload(e *Envelope) (any, bool) {
	if e.verified == nil || e.verified.payload == nil {
		return nil, false
	}
	v := &e.verified.e
	if e.Type != v.Type || e.SchemaVersion != v.SchemaVersion || e.Stream != v.Stream || !samePayload(e.Payload, v.Payload) {
		return nil, false
	}
	return e.verified.payload, true
}

// samePayload reports whether a and b are the same bytes in memory.
func samePayload(a, b json.RawMessage) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// SameContent reports whether two envelopes carry the same fact, ignoring what
// a ledger assigns on append (version, position, hashes). Import uses it to
// tell a harmless duplicate from a conflicting id.
func SameContent(a, b *Envelope) bool {
	return a.ID == b.ID && a.Stream == b.Stream && a.Type == b.Type &&
		a.SchemaVersion == b.SchemaVersion && a.RecordedAt.Equal(b.RecordedAt) &&
		a.Actor == b.Actor && string(a.Payload) == string(b.Payload)
}

// Encode returns the stored form: one line of compact JSON with a fixed field
// order and no trailing newline. Identifier fields are validated on intake
// (see Validate) to need no escaping; the payload is already compact JSON.
func (e *Envelope) Encode() []byte {
	return e.AppendEncode(make([]byte, 0, e.EncodedSizeBound()))
}

// EncodedSizeBound is at least len(e.Encode()) for an envelope that
// Validate accepts.
func (e *Envelope) EncodedSizeBound() int {
	// The fixed keys, id, numbers, timestamp and both hashes take < 400.
	return 400 + len(e.Stream) + len(e.Type) + len(e.Actor) + len(e.Payload)
}

// AppendEncode appends Encode's bytes to b.
func (e *Envelope) AppendEncode(b []byte) []byte {
	b = append(b, `{"id":"`...)
	b = appendID(b, e.ID)
	b = append(b, `","stream":"`...)
	b = append(b, e.Stream...)
	b = append(b, `","version":`...)
	b = strconv.AppendUint(b, e.Version, 10)
	b = append(b, `,"position":`...)
	b = strconv.AppendUint(b, e.Position, 10)
	b = append(b, `,"type":"`...)
	b = append(b, e.Type...)
	b = append(b, `","schema_version":`...)
	b = strconv.AppendInt(b, int64(e.SchemaVersion), 10)
	b = append(b, `,"recorded_at":"`...)
	b = appendUTC(b, e.RecordedAt)
	b = append(b, `","actor":"`...)
	b = append(b, e.Actor...)
	b = append(b, `","payload":`...)
	b = append(b, e.Payload...)
	b = append(b, `,"prev_hash":"`...)
	b = append(b, e.PrevHash...)
	b = append(b, `","hash":"`...)
	b = append(b, e.Hash...)
	b = append(b, `"}`...)
	return b
}

// DecodeEnvelope strictly decodes one envelope from outside input: at most
// MaxEnvelopeBytes, no unknown or duplicate keys at any level, every field
// present, identifiers valid, payload compact and decodable into its
// registered type, and the hash consistent with the content. The result
// does not alias data.
func DecodeEnvelope(data []byte) (Envelope, error) { return decodeEnvelope(data, false) }

// DecodeEnvelopeOwned is DecodeEnvelope for a caller that hands data over:
// the envelope may alias it (its payload and its stored form, see
// CarriedStored), so data must not be modified afterwards. An import that
// holds its lines anyway spares a copy of each.
func DecodeEnvelopeOwned(data []byte) (Envelope, error) { return decodeEnvelope(data, true) }

func decodeEnvelope(data []byte, owned bool) (Envelope, error) {
	if len(data) > MaxEnvelopeBytes {
		return Envelope{}, fmt.Errorf("envelope is %d bytes, limit %d", len(data), MaxEnvelopeBytes)
	}
	if e, ok := decodeCanonical(data, owned); ok {
		return e, nil
	}
	return decodeStrict(data)
}

// decodeCanonical is DecodeEnvelope's fast path for a line in the stored
// form (Encode's bytes, as every export writes them): the fixed-layout
// scan of DecodeStored, then the bytes re-encoded must be the input and
// every check of decodeStrict after its JSON layer must pass. What it
// accepts, decodeStrict accepts and reads identically (FuzzDecodeStored);
// anything else (ok false) goes through decodeStrict, which gives the
// error. The envelope keeps the line (copied unless owned) as its stored
// form, its payload aliasing it.
func decodeCanonical(data []byte, owned bool) (e Envelope, ok bool) {
	e, err := DecodeStoredRef(data)
	if err != nil {
		return Envelope{}, false
	}
	if !owned {
		data = append([]byte(nil), data...)
		end := len(data) - storedSuffixLen // where parseStored's payload ends
		e.Payload = json.RawMessage(data[end-len(e.Payload) : end : end])
	}
	data = data[:len(data):len(data)]
	var buf [1024]byte
	if !bytes.Equal(e.AppendEncode(buf[:0]), data) || e.Version == 0 || e.Position == 0 ||
		!isHex64(e.PrevHash) || !isHex64(e.Hash) {
		return Envelope{}, false
	}
	payload, err := e.validate(false)
	if err != nil {
		return Envelope{}, false
	}
	if h, _ := e.hexHash(buf[:0]); string(h[:]) != e.Hash {
		return Envelope{}, false
	}
	e.verified = &verifiedEnvelope{e: e, payload: payload, stored: data}
	return e, true
}

// decodeStrict is DecodeEnvelope through strictjson's Reader, for any
// input.
func decodeStrict(data []byte) (Envelope, error) {
	e, err := decodeEnvelopeJSON(data)
	if err != nil {
		return Envelope{}, fmt.Errorf("envelope: %w", err)
	}
	if e.Version == 0 || e.Position == 0 {
		return Envelope{}, fmt.Errorf("envelope %s: version and position start at 1", e.ID)
	}
	payload, err := e.validate(true)
	if err != nil {
		return Envelope{}, err
	}
	if !isHex64(e.PrevHash) {
		return Envelope{}, fmt.Errorf("envelope %s: prev_hash is not 64 lowercase hex", e.ID)
	}
	if !isHex64(e.Hash) {
		return Envelope{}, fmt.Errorf("envelope %s: hash is not 64 lowercase hex", e.ID)
	}
	if got := e.ComputeHash(); got != e.Hash {
		return Envelope{}, &HashMismatchError{Position: e.Position, Want: e.Hash, Got: got}
	}
	e.verified = &verifiedEnvelope{e: e, payload: payload}
	return e, nil
}

// envelopeKeys are the keys of an encoded envelope, in Encode's order.
var envelopeKeys = [...]string{"id", "stream", "version", "position", "type", "schema_version", "recorded_at", "actor", "payload", "prev_hash", "hash"}

const (
	kID = iota
	kStream
	kVersion
	kPosition
	kType
	kSchemaVersion
	kRecordedAt
	kActor
	kPayload
	kPrevHash
	kHash
)

// decodeEnvelopeJSON is the strict JSON layer of DecodeEnvelope, written
// for the one type it decodes on strictjson's Reader (import reads
// millions of lines; the reflective decoder would cost several times
// more): any key order and whitespace, every key exactly once, values of
// the right kind. The payload is checked structurally here and against its
// type by Validate. The result does not alias data.
func decodeEnvelopeJSON(data []byte) (Envelope, error) {
	var e Envelope
	var seen uint16
	r := strictjson.NewReader(data, strictjson.Limits{MaxBytes: MaxEnvelopeBytes})
	err := r.Object(func(key []byte) error {
		k := -1
		for i, name := range envelopeKeys {
			if string(key) == name {
				k = i
				break
			}
		}
		if k < 0 {
			return &strictjson.UnknownKeyError{Key: string(key)}
		}
		seen |= 1 << k
		return envelopeField(&r, &e, k)
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return e, err
	}
	for k, name := range envelopeKeys {
		if seen&(1<<k) == 0 {
			return e, fmt.Errorf("missing key %q", name)
		}
	}
	return e, nil
}

// envelopeField decodes the value of envelope key k at r into e.
func envelopeField(r *strictjson.Reader, e *Envelope, k int) error {
	switch k {
	case kVersion, kPosition, kSchemaVersion:
		n, err := r.Uint()
		if err != nil {
			return err
		}
		switch k {
		case kVersion:
			e.Version = n
		case kPosition:
			e.Position = n
		default:
			if n > 1<<16 {
				return &strictjson.TypeError{Path: r.Path(), Want: "non-negative integer", Got: "number " + strconv.FormatUint(n, 10)}
			}
			e.SchemaVersion = int(n)
		}
		return nil
	case kPayload:
		if kind := r.Kind(); kind != "object" {
			if err := r.Skip(); err != nil {
				return err
			}
			return &strictjson.TypeError{Path: "payload", Want: "object", Got: kind}
		}
		raw, err := r.Raw()
		if err != nil {
			return err
		}
		e.Payload = append(json.RawMessage(nil), strictjson.Compact(raw)...)
		return nil
	}
	b, err := r.String()
	if err != nil {
		return err
	}
	switch k {
	case kID:
		id, err := ulid.ParseStrict(string(b))
		if err != nil {
			return fmt.Errorf("id %q: %w", b, err)
		}
		e.ID = id
	case kRecordedAt:
		t, err := parseUTC(b)
		if err != nil {
			return fmt.Errorf("recorded_at %q: want RFC 3339 UTC (suffix Z): %w", b, err)
		}
		e.RecordedAt = t
	case kStream:
		e.Stream = string(b)
	case kType:
		e.Type = string(b)
	case kActor:
		e.Actor = string(b)
	case kPrevHash:
		e.PrevHash = string(b)
	case kHash:
		e.Hash = string(b)
	}
	return nil
}

// HashMismatchError reports an envelope whose content does not hash to the
// hash it carries.
type HashMismatchError struct {
	Position  uint64
	Want, Got string
}

func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("envelope at position %d: bad hash: recorded %s, content hashes to %s", e.Position, short(e.Want), short(e.Got))
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Validate checks the fields a caller supplies (not the ones the store
// assigns): identifier syntax, a registered type and schema version, a UTC
// timestamp and a payload that strictly decodes into its registered type.
func (e *Envelope) Validate() error {
	_, err := e.validate(true)
	return err
}

// validate is Validate returning the decoded payload; checkCompact false
// skips the payload's whitespace scan for a caller that compared the
// payload with Encode's bytes already.
func (e *Envelope) validate(checkCompact bool) (any, error) {
	if e.ID == (ulid.ULID{}) {
		return nil, errors.New("envelope: zero id")
	}
	if err := ValidStream(e.Stream); err != nil {
		return nil, fmt.Errorf("envelope %s: %w", e.ID, err)
	}
	if err := validIdent("actor", e.Actor, true); err != nil {
		return nil, fmt.Errorf("envelope %s: %w", e.ID, err)
	}
	if e.RecordedAt.IsZero() {
		return nil, fmt.Errorf("envelope %s: zero recorded_at", e.ID)
	}
	if y := e.RecordedAt.UTC().Year(); y < 1 || y > 9999 {
		return nil, fmt.Errorf("envelope %s: recorded_at year %d outside 1..9999", e.ID, y)
	}
	if len(e.Payload) > MaxPayloadBytes {
		return nil, fmt.Errorf("envelope %s: payload is %d bytes, limit %d", e.ID, len(e.Payload), MaxPayloadBytes)
	}
	// The stored form embeds the payload verbatim and the hash covers it:
	// only a compact object round-trips through export and import.
	if len(e.Payload) < 2 || e.Payload[0] != '{' {
		return nil, fmt.Errorf("envelope %s: payload must be a JSON object", e.ID)
	}
	// A payload checked already (the same type, stream and bytes) was
	// compact and decoded then.
	if v, ok := VerifiedPayload(e); ok {
		return v, nil
	}
	if checkCompact && !strictjson.IsCompact(e.Payload) {
		return nil, fmt.Errorf("envelope %s: payload must be compact JSON", e.ID)
	}
	v, err := DecodePayload(e)
	if err != nil {
		return nil, fmt.Errorf("envelope %s: %w", e.ID, err)
	}
	return v, nil
}

// ValidStream checks a stream id: 1..200 bytes of [A-Za-z0-9._:/@-], so it
// needs no escaping in JSON and never contains the 0x00 key separator.
func ValidStream(s string) error { return validIdent("stream", s, false) }

func validIdent(what, s string, emptyOK bool) error {
	if s == "" {
		if emptyOK {
			return nil
		}
		return fmt.Errorf("empty %s", what)
	}
	if len(s) > 200 {
		return fmt.Errorf("%s is %d bytes, limit 200", what, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '/' || c == '@' || c == '-') {
			return fmt.Errorf("%s %q: byte %d (%q) not allowed", what, s, i, c)
		}
	}
	return nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !lowerHex[s[i]] {
			return false
		}
	}
	return true
}

var lowerHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdef" {
		t[c] = true
	}
	return t
}()
