package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/tree-ring/tree-ring/events/strictjson"
)

// testFactory mints envelopes with a fixed clock and sequential ids: the
// same instants and ids as eventstest.Factory, which this package's own
// tests cannot import (eventstest imports events).
func testFactory() *Factory {
	t := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var n byte
	return &Factory{
		Now: func() time.Time { t = t.Add(time.Second); return t },
		NewID: func() ulid.ULID {
			n++
			var id ulid.ULID
			_ = id.SetTime(ulid.Timestamp(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)))
			id[15] = n
			return id
		},
		Actor: "test",
	}
}

func detected(f *Factory) Envelope {
	return f.Must(HarnessStream("claude-code"), TypeHarnessDetected, &HarnessDetected{
		Transition: Transition{From: "unsupported", To: "unsupported"}, HarnessID: "claude-code",
		AdapterVersion: "4", Capability: "native-preflight", Markers: []string{".claude", "CLAUDE.md"},
	})
}

// sealed returns an envelope as a ledger stores it at version 1, position 1.
func sealed(t testing.TB) Envelope {
	t.Helper()
	e := detected(testFactory())
	e.Version, e.Position = 1, 1
	e.Seal(GenesisHash)
	return e
}

func TestEnvelopeRoundTrip(t *testing.T) {
	e := sealed(t)
	enc := e.Encode()
	got, err := DecodeEnvelope(enc)
	if err != nil {
		t.Fatalf("DecodeEnvelope: %v\n%s", err, enc)
	}
	if !sameEnvelope(got, e) {
		t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, e)
	}
	stored, err := DecodeStored(enc)
	if err != nil {
		t.Fatalf("DecodeStored: %v", err)
	}
	if !sameEnvelope(stored, e) || !bytes.Equal(stored.Encode(), enc) {
		t.Fatalf("stored round trip differs:\n got %+v\nwant %+v", stored, e)
	}
	p, err := Payload[HarnessDetected](&got)
	if err != nil || p.HarnessID != "claude-code" || len(p.Markers) != 2 || p.To != "unsupported" {
		t.Fatalf("payload: %+v %v", p, err)
	}
	if typ, ok := PeekType(enc); !ok || typ != TypeHarnessDetected {
		t.Fatalf("PeekType = %q %v", typ, ok)
	}
}

func sameEnvelope(a, b Envelope) bool {
	return SameContent(&a, &b) && a.Version == b.Version && a.Position == b.Position &&
		a.PrevHash == b.PrevHash && a.Hash == b.Hash
}

// TestCanonicalHashPinned pins the canonical bytes: changing their
// definition breaks every existing ledger, so it must be deliberate.
func TestCanonicalHashPinned(t *testing.T) {
	e := sealed(t)
	const want = "5086fb337e774a7fbbaac2b12009a52353934a5a3c4a38a3213ff1c73babdbeb" // independently computed from docs/ledger.md
	if e.Hash != want {
		t.Fatalf("hash of the reference envelope is %s, pinned %s\ncanonical bytes: %q", e.Hash, want, e.CanonicalBytes())
	}
	// Each field is length-prefixed: moving a byte between stream and type
	// must change the hash.
	a, b := e, e
	a.Stream, a.Type = "harness/ab", "c"
	b.Stream, b.Type = "harness/a", "bc"
	if a.ComputeHash() == b.ComputeHash() {
		t.Fatal("canonical bytes are ambiguous")
	}
	if len(e.CanonicalBytes()) != len(e.appendCanonical(nil)) {
		t.Fatal("canonical size")
	}
}

// TestHashCoversEveryField changes each field in turn.
func TestHashCoversEveryField(t *testing.T) {
	base := sealed(t)
	muts := map[string]func(*Envelope){
		"id":             func(e *Envelope) { e.ID[15]++ },
		"stream":         func(e *Envelope) { e.Stream += "x" },
		"version":        func(e *Envelope) { e.Version++ },
		"position":       func(e *Envelope) { e.Position++ },
		"type":           func(e *Envelope) { e.Type = TypeTrustRequired },
		"schema_version": func(e *Envelope) { e.SchemaVersion++ },
		"recorded_at":    func(e *Envelope) { e.RecordedAt = e.RecordedAt.Add(time.Nanosecond) },
		"actor":          func(e *Envelope) { e.Actor = "other" },
		"payload":        func(e *Envelope) { e.Payload = json.RawMessage(`{}`) },
		"prev_hash":      func(e *Envelope) { e.PrevHash = strings.Repeat("1", 64) },
	}
	for name, mut := range muts {
		e := base
		mut(&e)
		if e.ComputeHash() == base.Hash {
			t.Errorf("changing %s does not change the hash", name)
		}
	}
}

func TestDecodeEnvelopeRejects(t *testing.T) {
	ref := sealed(t)
	good := string(ref.Encode())
	cases := []struct {
		name, in string
		want     string // substring of the error
		is       any
	}{
		{"unknown top-level key", strings.Replace(good, `{"id"`, `{"extra":1,"id"`, 1), `unknown key "extra"`, new(*strictjson.UnknownKeyError)},
		{"case variant of a key", strings.Replace(good, `"stream"`, `"Stream"`, 1), `unknown key "Stream"`, new(*strictjson.UnknownKeyError)},
		{"duplicate key", strings.Replace(good, `{"id"`, `{"actor":"x","id"`, 1), `duplicate key "actor"`, new(*strictjson.DuplicateKeyError)},
		{"duplicate key by escape", strings.Replace(good, `{"id"`, `{"act\u006fr":"x","id"`, 1), `duplicate key "actor"`, new(*strictjson.DuplicateKeyError)},
		{"unknown payload key", strings.Replace(good, `"payload":{`, `"payload":{"prompt":"secret",`, 1), `payload: unknown key "prompt"`, new(*strictjson.UnknownKeyError)},
		{"duplicate payload key", strings.Replace(good, `"payload":{`, `"payload":{"harness_id":"x",`, 1), `duplicate key "harness_id" in payload`, new(*strictjson.DuplicateKeyError)},
		{"missing key", strings.Replace(good, `"actor":"test",`, ``, 1), `missing key "actor"`, nil},
		{"bad hash", strings.Replace(good, `"actor":"test"`, `"actor":"tesu"`, 1), `bad hash`, new(*HashMismatchError)},
		{"hash not hex", good[:len(good)-66] + strings.ToUpper(ref.Hash) + `"}`, `hash is not 64 lowercase hex`, nil},
		{"not UTC", strings.Replace(good, `12:00:01Z`, `12:00:01+00:00`, 1), `UTC`, nil},
		{"bad id", strings.Replace(good, `"id":"0`, `"id":"U`, 1), `id`, nil},
		{"unknown type", strings.Replace(good, `"harness.detected"`, `"harness.exploded"`, 1), `unknown event type "harness.exploded"`, new(*UnknownTypeError)},
		{"wrong stream family", strings.Replace(good, `"harness/claude-code"`, `"memory/claude-code"`, 1), `does not belong on stream`, nil},
		{"position zero", strings.Replace(good, `"position":1`, `"position":0`, 1), `start at 1`, nil},
		{"trailing data", good + `{}`, `trailing data`, new(*strictjson.SyntaxError)},
		{"not JSON", `hello`, `invalid JSON`, new(*strictjson.SyntaxError)},
		{"empty", ``, `empty input`, new(*strictjson.SyntaxError)},
		{"array", `[]`, `want object, got array`, new(*strictjson.TypeError)},
		{"payload not object", strings.Replace(good, good[strings.Index(good, `"payload":`):strings.Index(good, `,"prev_hash"`)], `"payload":[1]`, 1), `payload`, nil},
		{"invalid UTF-8", strings.Replace(good, `"actor":"test"`, "\"actor\":\"t\xffst\"", 1), `invalid UTF-8`, new(*strictjson.SyntaxError)},
		{"deep nesting", strings.Replace(good, `"payload":{`, `"payload":{"markers":`+strings.Repeat("[", 40)+strings.Repeat("]", 40)+`,`, 1), `nesting deeper`, new(*strictjson.DepthError)},
		{"too large", `{"id":"` + strings.Repeat("a", MaxEnvelopeBytes) + `"}`, `limit`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeEnvelope([]byte(c.in))
			if err == nil {
				t.Fatalf("accepted %s", c.in)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
			if c.is != nil && !errors.As(err, c.is) {
				t.Fatalf("error %q (%T) is not a %T", err, err, c.is)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
}

// TestDecodeEnvelopeNormalizes accepts insignificant whitespace, key order
// and escapes, and produces the canonical stored form.
func TestDecodeEnvelopeNormalizes(t *testing.T) {
	e := sealed(t)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(e.Encode(), &m); err != nil {
		t.Fatal(err)
	}
	pretty, err := json.MarshalIndent(m, "", "  ") // keys sorted, payload re-indented
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEnvelope(pretty)
	if err != nil {
		t.Fatalf("DecodeEnvelope(indented): %v", err)
	}
	if !bytes.Equal(got.Encode(), e.Encode()) {
		t.Fatalf("not normalized:\n%s\n%s", got.Encode(), e.Encode())
	}
}

func TestValidateRejects(t *testing.T) {
	f := testFactory()
	cases := map[string]func(*Envelope){
		"zero id":            func(e *Envelope) { e.ID = ulid.ULID{} },
		"bad stream":         func(e *Envelope) { e.Stream = "harness/a b" },
		"empty stream id":    func(e *Envelope) { e.Stream = "harness/" },
		"quote in actor":     func(e *Envelope) { e.Actor = `a"b` },
		"zero time":          func(e *Envelope) { e.RecordedAt = time.Time{} },
		"far future":         func(e *Envelope) { e.RecordedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		"non-compact":        func(e *Envelope) { e.Payload = json.RawMessage(`{"harness_id": "x"}`) },
		"payload null":       func(e *Envelope) { e.Payload = json.RawMessage(`null`) },
		"schema too new":     func(e *Envelope) { e.SchemaVersion = 2 },
		"schema zero":        func(e *Envelope) { e.SchemaVersion = 0 },
		"missing transition": func(e *Envelope) { e.Payload = json.RawMessage(`{"harness_id":"x"}`) },
		"payload too large": func(e *Envelope) {
			e.Payload = json.RawMessage(`{"harness_id":"` + strings.Repeat("x", MaxPayloadBytes) + `"}`)
		},
	}
	for name, mut := range cases {
		e := detected(f)
		mut(&e)
		if err := e.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if e := detected(f); e.Validate() != nil {
		t.Fatal(e.Validate())
	}
}

func TestDecodeStoredRejectsForeignLayout(t *testing.T) {
	ref := sealed(t)
	enc := string(ref.Encode())
	for _, bad := range []string{
		"",
		enc[:len(enc)-1],
		strings.Replace(enc, `"version":1`, `"version":01`, 1),
		strings.Replace(enc, `"version":1`, `"version":-1`, 1),
		strings.Replace(enc, `"position":1`, `"position":99999999999999999999`, 1),
		strings.Replace(enc, `12:00:01Z`, `12:00:01+01:00`, 1),
		strings.Replace(enc, `{"id"`, `{ "id"`, 1),
	} {
		if _, err := DecodeStored([]byte(bad)); err == nil {
			t.Errorf("DecodeStored accepted %q", bad)
		}
	}
}

func TestDecodeStoredOwnsPayload(t *testing.T) {
	ref := sealed(t)
	enc := ref.Encode()
	e, err := DecodeStored(enc)
	if err != nil {
		t.Fatal(err)
	}
	want := string(e.Payload)
	for i := range enc {
		enc[i] = 'x'
	}
	if string(e.Payload) != want {
		t.Fatal("DecodeStored payload aliases its input")
	}
}

func TestFactoryRejectsWrongPayload(t *testing.T) {
	f := testFactory()
	if _, err := f.New(HarnessStream("x"), TypeHarnessDetected, &TrustRequired{}); err == nil {
		t.Fatal("accepted a payload of another type")
	}
	if _, err := f.New(HarnessStream("x"), "no.such", &TrustRequired{}); err == nil {
		t.Fatal("accepted an unknown type")
	}
}

func TestDecodeEnvelopeKinds(t *testing.T) {
	ref := sealed(t)
	good := string(ref.Encode())
	for in, want := range map[string]string{
		` "x"`: "want object, got string",
		strings.Replace(good, `"version":1`, `"version":{}`, 1):                                       "version: want integer, got object",
		strings.Replace(good, `"version":1`, `"version":1.5`, 1):                                      "version: want non-negative integer, got number 1.5",
		strings.Replace(good, `"stream":"harness/claude-code"`, `"stream":null`, 1):                   "stream: want string, got null",
		strings.Replace(good, `"recorded_at":"2026-11-01T12:00:01Z"`, `"recorded_at":"yesterday"`, 1): `recorded_at "yesterday"`,
	} {
		_, err := DecodeEnvelope([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40s: error %v, want %q", in, err, want)
		}
	}
}

// TestParseUTC compares the hand-written timestamp parser with time's.
func TestParseUTC(t *testing.T) {
	for _, s := range []string{
		"2026-11-01T12:00:01Z", "2026-11-01T12:00:01.5Z", "2026-11-01T12:00:01.123456789Z",
		"2024-02-29T23:59:59.000000001Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z",
	} {
		got, err := parseUTC([]byte(s))
		want, werr := time.Parse(time.RFC3339Nano, s)
		if err != nil || werr != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("%s: got %v %v, want %v %v", s, got, err, want, werr)
		}
	}
	for _, s := range []string{
		"2023-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-01T24:00:00Z", "2026-11-01T12:00:60Z",
		"2026-11-01T12:00:01.Z", "2026-11-01 12:00:01Z", "2026-11-01T12:00:01+00:00",
		"2026-11-01T12:00:01z", "26-11-01T12:00:01Z",
	} {
		if _, err := parseUTC([]byte(s)); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}

// TestCarriesSeal: only an envelope DecodeEnvelope verified, unchanged,
// at the chain values it was verified with, skips its second hash.
func TestCarriesSeal(t *testing.T) {
	ref := sealed(t)
	dec, err := DecodeEnvelope(ref.Encode())
	if err != nil {
		t.Fatal(err)
	}
	other := sealed(t)
	other.Stream = "harness/other"
	cases := []struct {
		name   string
		e      func() Envelope
		v, pos uint64
		prev   string
		want   bool
	}{
		{"decoded, same chain", func() Envelope { return dec }, 1, 1, GenesisHash, true},
		{"built, not decoded", func() Envelope { return ref }, 1, 1, GenesisHash, false},
		{"other version", func() Envelope { return dec }, 2, 1, GenesisHash, false},
		{"other position", func() Envelope { return dec }, 1, 2, GenesisHash, false},
		{"other prev", func() Envelope { return dec }, 1, 1, ref.Hash, false},
		{"stream changed", func() Envelope { e := dec; e.Stream = other.Stream; return e }, 1, 1, GenesisHash, false},
		{"type changed", func() Envelope { e := dec; e.Type = TypeHarnessDeactivated; return e }, 1, 1, GenesisHash, false},
		{"actor changed", func() Envelope { e := dec; e.Actor = "x"; return e }, 1, 1, GenesisHash, false},
		{"schema changed", func() Envelope { e := dec; e.SchemaVersion++; return e }, 1, 1, GenesisHash, false},
		{"time changed", func() Envelope { e := dec; e.RecordedAt = e.RecordedAt.Add(1); return e }, 1, 1, GenesisHash, false},
		{"id changed", func() Envelope { e := dec; e.ID[15]++; return e }, 1, 1, GenesisHash, false},
		{"hash changed", func() Envelope { e := dec; e.Hash = strings.Repeat("b", 64); return e }, 1, 1, GenesisHash, false},
		{"payload replaced by equal bytes", func() Envelope { e := dec; e.Payload = append([]byte(nil), e.Payload...); return e }, 1, 1, GenesisHash, false},
		{"resealed elsewhere", func() Envelope { e := dec; e.Version, e.Position = 2, 5; e.Seal(ref.Hash); return e }, 2, 5, ref.Hash, false},
	}
	for _, c := range cases {
		e := c.e()
		if got := e.CarriesSeal(c.v, c.pos, c.prev); got != c.want {
			t.Errorf("%s: CarriesSeal = %v, want %v", c.name, got, c.want)
		}
		if c.want && e.ComputeHash() != e.Hash {
			t.Errorf("%s: carries a seal its content does not hash to", c.name)
		}
		// Only the decoded envelope, unchanged, can be moved from its line.
		unchanged := c.name == "decoded, same chain" || strings.HasPrefix(c.name, "other ")
		moved, want := e, e
		want.Version, want.Position = c.v+1, c.pos+1
		want.Seal(c.prev)
		out, _, ok := moved.ResealStored(c.v+1, c.pos+1, c.prev, nil, nil)
		if ok != unchanged || ok && (!sameEnvelope(moved, want) || !bytes.Equal(out, want.Encode())) {
			t.Errorf("%s: ResealStored = %q, %v", c.name, out, ok)
		}
		stored, ok := e.CarriedStored(c.v, c.pos, c.prev)
		if ok != c.want || ok && !bytes.Equal(stored, e.Encode()) || !ok && stored != nil {
			t.Errorf("%s: CarriedStored = %q, %v; want the stored form when it carries its seal", c.name, stored, ok)
		}
	}
}

// TestDecodeEnvelopeAliasing: DecodeEnvelope's envelope owns its memory
// (the input may be reused); DecodeEnvelopeOwned's aliases the line it was
// handed, and both keep that line as the stored form.
func TestDecodeEnvelopeAliasing(t *testing.T) {
	ref := sealed(t)
	line := ref.Encode()
	e, err := DecodeEnvelope(line)
	if err != nil {
		t.Fatal(err)
	}
	owned, err := DecodeEnvelopeOwned(bytes.Clone(line))
	if err != nil {
		t.Fatal(err)
	}
	clear(line)
	if !sameEnvelope(e, ref) || !sameEnvelope(owned, ref) {
		t.Fatalf("decoded envelopes differ:\n%+v\n%+v\n%+v", e, owned, ref)
	}
	for _, d := range []*Envelope{&e, &owned} {
		if stored, ok := d.CarriedStored(1, 1, GenesisHash); !ok || !bytes.Equal(stored, ref.Encode()) {
			t.Fatalf("stored form %q, %v", stored, ok)
		}
	}
}

// TestSealWith: the scratch-buffer seal is Seal, for payloads below and
// above the stack buffer's size, with the scratch reused.
func TestSealWith(t *testing.T) {
	var scratch []byte
	for _, n := range []int{0, 100, 600, 5000} {
		e := sealed(t)
		e.Payload = json.RawMessage(`{"x":"` + strings.Repeat("a", n) + `"}`)
		want := e
		want.Seal(GenesisHash)
		scratch = e.SealWith(GenesisHash, scratch)
		if e.Hash != want.Hash || e.PrevHash != GenesisHash {
			t.Fatalf("payload of %d bytes: SealWith %s, Seal %s", n, e.Hash, want.Hash)
		}
		if got := e.AppendEncode([]byte("x")); string(got) != "x"+string(want.Encode()) || len(want.Encode()) > e.EncodedSizeBound() {
			t.Fatalf("AppendEncode differs from Encode or exceeds its bound")
		}
	}
}

// FuzzAppendUTC: the hand-written timestamp is time's RFC3339Nano, byte
// for byte, at any instant (the hash covers it).
func FuzzAppendUTC(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Add(int64(1798804800), int64(123456789))
	f.Add(int64(-62135596800), int64(1))         // year 1
	f.Add(int64(253402300799), int64(999999999)) // year 9999
	f.Add(int64(253402300800), int64(0))         // year 10000: time's own format
	f.Add(int64(1798804800), int64(100))
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		at := time.Unix(sec, nsec).In(time.FixedZone("x", 3600))
		want := at.UTC().Format(time.RFC3339Nano)
		if got := string(appendUTC([]byte("p"), at)); got != "p"+want {
			t.Fatalf("appendUTC(%v) = %q, want %q", at, got[1:], want)
		}
	})
}

// TestDecodeEnvelopePaths: a line in the stored form takes the canonical
// fast path; the same envelope written another way (spaces, key order)
// decodes through the strict decoder to the same envelope, and a stored
// line with a bad hash is refused with the strict decoder's error.
func TestDecodeEnvelopePaths(t *testing.T) {
	ref := sealed(t)
	enc := ref.Encode()
	if _, ok := decodeCanonical(enc, false); !ok {
		t.Fatal("the stored form missed the fast path")
	}
	spaced := bytes.Replace(enc, []byte(`,"type":`), []byte(`, "type" : `), 1)
	reordered := append([]byte(`{"hash":"`+ref.Hash+`",`), bytes.Replace(enc[1:], []byte(`,"hash":"`+ref.Hash+`"`), nil, 1)...)
	for _, in := range [][]byte{spaced, reordered} {
		if _, ok := decodeCanonical(in, false); ok {
			t.Fatalf("fast path took %s", in)
		}
		got, err := DecodeEnvelope(in)
		if err != nil || !sameEnvelope(got, ref) || !got.CarriesSeal(1, 1, GenesisHash) {
			t.Fatalf("%s: %+v %v", in, got, err)
		}
	}
	bad := bytes.Replace(enc, []byte(ref.Hash), []byte(strings.Repeat("0", 64)), 1)
	_, err := DecodeEnvelope(bad)
	var hm *HashMismatchError
	if !errors.As(err, &hm) || hm.Got != ref.Hash {
		t.Fatalf("bad hash: %v", err)
	}
}

// TestVerifiedPayload: a decoded envelope, or one a Factory built, hands
// its folds the payload value its check decoded, equal to a fresh decode,
// until the fields it depends on change; an envelope built any other way
// carries none.
func TestVerifiedPayload(t *testing.T) {
	ref := sealed(t)
	dec, err := DecodeEnvelope(ref.Encode())
	if err != nil {
		t.Fatal(err)
	}
	want, err := DecodePayload(&ref)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		e    func() Envelope
		ok   bool
	}{
		{"decoded", func() Envelope { return dec }, true},
		{"decoded, moved elsewhere in the chain", func() Envelope { e := dec; e.Version, e.Position = 7, 9; e.Seal(ref.Hash); return e }, true},
		{"built by a factory", func() Envelope { return ref }, true},
		{"built by a factory, payload replaced", func() Envelope { e := ref; e.Payload = append([]byte(nil), e.Payload...); return e }, false},
		{"built as a literal", func() Envelope {
			return Envelope{ID: ref.ID, Stream: ref.Stream, Type: ref.Type, SchemaVersion: ref.SchemaVersion, RecordedAt: ref.RecordedAt, Actor: ref.Actor, Payload: ref.Payload}
		}, false},
		{"type changed", func() Envelope { e := dec; e.Type = TypeHarnessDeactivated; return e }, false},
		{"stream changed", func() Envelope { e := dec; e.Stream = "harness/other"; return e }, false},
		{"schema changed", func() Envelope { e := dec; e.SchemaVersion++; return e }, false},
		{"payload replaced", func() Envelope { e := dec; e.Payload = append([]byte(nil), e.Payload...); return e }, false},
	}
	for _, c := range cases {
		e := c.e()
		v, ok := VerifiedPayload(&e)
		if ok != c.ok {
			t.Errorf("%s: ok = %v, want %v", c.name, ok, c.ok)
		}
		if ok && !reflect.DeepEqual(v, want) {
			t.Errorf("%s: payload %+v, decoded %+v", c.name, v, want)
		}
	}
}
