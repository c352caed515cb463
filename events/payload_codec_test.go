package events

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/tree-ring/tree-ring/events/strictjson"
)

// hookPayloads are the payload types a preflight appends; each must have a
// hand-written encoder (payload_codec.go).
var hookPayloads = []string{TypePreflightSucceeded, TypeReceiptRecorded, TypeReceiptPruned, TypeRunStarted, TypeRunFinished}

// decodedPayloads are the payload types with a hand-written decoder: the
// hook's, and memory.captured (memory import and rebuild).
var decodedPayloads = append(slices.Clip(hookPayloads), TypeMemoryCaptured)

// pieces are string fragments that exercise every escape rule of
// json.Marshal.
var pieces = []string{"", "a", "run-1", `"`, `\`, "\n", "\t", "\x00", "\x1f", "<", ">", "&", "\u2028", "\u2029", "\xff", "\xc3", "é", "日本", "\U0001f600", "\x7f"}

// fill sets v (settable) to random values: strings from pieces (empty
// often, so omitempty members drop out), integers of either sign and zero,
// nil or filled pointers, embedded structs field by field.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		var s string
		for n := r.IntN(4); n > 0; n-- {
			s += pieces[r.IntN(len(pieces))]
		}
		v.SetString(s)
	case reflect.Int, reflect.Int64:
		switch r.IntN(3) {
		case 0:
			v.SetInt(0)
		case 1:
			v.SetInt(r.Int64N(2000) - 1000)
		default:
			v.SetInt(r.Int64() - r.Int64())
		}
	case reflect.Float64:
		switch r.IntN(4) {
		case 0:
			v.SetFloat(0)
		case 1:
			v.SetFloat(r.Float64())
		case 2:
			v.SetFloat(float64(r.IntN(5)) / 4)
		default:
			v.SetFloat((r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(600)-300)))
		}
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Slice:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		n := r.IntN(4)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(r, v.Index(i))
		}
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fill(r, p.Elem())
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(r, v.Field(i))
		}
	default:
		panic("fill: unhandled kind " + v.Kind().String())
	}
}

// checkPayloads fills each hook payload from r and compares its encoder
// with json.Marshal.
func checkPayloads(t *testing.T, r *rand.Rand) {
	t.Helper()
	for _, typ := range hookPayloads {
		spec, _ := Lookup(typ)
		p := spec.NewPayload()
		fill(r, reflect.ValueOf(p).Elem())
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendPayload([]byte("x"), p)
		if !ok {
			t.Fatalf("%s has no hand-written encoder", typ)
		}
		if !bytes.Equal(got[1:], want) {
			t.Fatalf("%s %+v:\n got %s\nwant %s", typ, p, got[1:], want)
		}
	}
}

func TestPayloadEncodersMatchEncodingJSON(t *testing.T) {
	// Every other registered type is left to encoding/json, including the
	// ones that embed a hook payload (ReceiptAdopted).
	for _, typ := range Types() {
		spec, _ := Lookup(typ)
		_, enc := appendPayload(nil, spec.NewPayload())
		r := strictjson.NewReader([]byte(`{}`), strictjson.Limits{})
		dec, _ := decodePayload(&r, spec.NewPayload())
		if enc != slices.Contains(hookPayloads, typ) || dec != slices.Contains(decodedPayloads, typ) {
			t.Errorf("%s: hand-written encoder %v, decoder %v", typ, enc, dec)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		checkPayloads(t, r)
	}
	// A nil payload pointer marshals as null, as json.Marshal writes it.
	if got := (*ReceiptPruned)(nil).appendJSON(nil); string(got) != "null" {
		t.Errorf("nil: %s", got)
	}
}

// FuzzPayloadEncoders drives the random fill from the fuzzer's seeds.
func FuzzPayloadEncoders(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Fuzz(func(t *testing.T, a, b uint64) { checkPayloads(t, rand.New(rand.NewPCG(a, b))) })
}

// checkDecoders: for each payload type with a hand-written decoder,
// whatever decodeFast accepts strictjson.Unmarshal and json.Unmarshal
// accept with the same value.
func checkDecoders(t *testing.T, data []byte) (accepted int) {
	t.Helper()
	for _, typ := range decodedPayloads {
		spec, _ := Lookup(typ)
		fast := spec.NewPayload()
		if !decodeFast(data, fast) {
			continue
		}
		accepted++
		strict, loose := spec.NewPayload(), spec.NewPayload()
		if err := strictjson.Unmarshal(data, strict); err != nil || !reflect.DeepEqual(fast, strict) {
			t.Fatalf("%s %q: fast %+v, strictjson %+v %v", typ, data, fast, strict, err)
		}
		if err := json.Unmarshal(data, loose); err != nil || !reflect.DeepEqual(fast, loose) {
			t.Fatalf("%s %q: fast %+v, encoding/json %+v %v", typ, data, fast, loose, err)
		}
	}
	return accepted
}

// TestPayloadDecoders: every encoding of a payload with a hand-written
// decoder, with valid UTF-8 strings, takes the fast path (else it would
// not be fast) and decodes to the value encoded; other shapes fall back.
func TestPayloadDecoders(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		for _, typ := range decodedPayloads {
			spec, _ := Lookup(typ)
			p := spec.NewPayload()
			fill(r, reflect.ValueOf(p).Elem())
			raw, ok := appendPayload(nil, p)
			if !ok {
				raw, _ = json.Marshal(p)
			}
			want := spec.NewPayload()
			if err := json.Unmarshal(raw, want); err != nil {
				t.Fatal(err)
			}
			got := spec.NewPayload()
			if !decodeFast(raw, got) {
				if utf8.Valid(raw) {
					t.Fatalf("%s %s: not decoded by the fast path", typ, raw)
				}
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %s: %+v, want %+v", typ, raw, got, want)
			}
			checkDecoders(t, raw)
		}
	}
	for _, in := range []string{`null`, `{"run_id":null}`, `{"RUN_ID":"x"}`, `{"run_id":"x","run_id":"y"}`, `{"pid":1.0}`, `{"pid":1e3}`,
		`{"telemetry":null}`, `{"session":{"agent_profile":1}}`, `{"x":1}`, `{} x`, `[]`, `{"duration_ms":9223372036854775808}`,
		`{"salience":null}`, `{"salience":1e400}`, `{"salience":"1"}`, `{"supersedes":null}`, `{"supersedes":["a",1]}`, `{"redacted":null}`, `{"redacted":0}`} {
		if n := checkDecoders(t, []byte(in)); n != 0 {
			t.Errorf("%s: taken by the fast path", in)
		}
	}
}

func FuzzPayloadDecoders(f *testing.F) {
	for _, s := range []string{`{}`, `{"run_id":"r","pid":3,"telemetry":{"result_count":0}}`, `{"session":{"agent_profile":"a\u00e9"},"path":"p"}`,
		`{"from":"a","to":"b","task_hint_chars":-1}`, `{"reason":"\ud800"}`,
		`{"memory_id":"m","salience":-0.0,"confidence":1e-320,"supersedes":[],"needs_review":false}`, `{"supersedes":["a","\u0062"],"redacted":true,"salience":2.5E+3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecoders(t, data) })
}

// TestDecodeFastAllocations: the hand-written decoders allocate the
// payload's strings and nested values and nothing else (no Reader, path,
// key set or closure per member), and a payload is built without
// reflection. Counted, not timed.
func TestDecodeFastAllocations(t *testing.T) {
	rc, items := 3, int64(2)
	cases := []struct {
		typ  string
		p    any
		want float64 // strings with a value (of 2 bytes or more: Go shares 1-byte strings), nested structs, pointers
	}{
		{TypeRunStarted, &RunStarted{RunID: "rrr", ScopeKey: "sss", Command: "ccc", Stage: "xxx", PID: 1, StartedAt: "ttt"}, 5},
		{TypeRunFinished, &RunFinished{RunID: "rrr", Status: "sss", Telemetry: &RunTelemetry{QueryClass: "qqq", ResultCount: &rc, Items: &items}}, 6},
		{TypeReceiptRecorded, &ReceiptRecorded{HarnessID: "hhh", ReceiptID: "rrr", AdapterVersion: "aaa", BridgeFingerprint: "bbb", StoreID: "sss",
			ProjectRootFingerprint: "ppp", WorkerKeyFingerprint: "www", State: "sss", QueryClass: "qqq", SelectedMemoryIDsSHA256: "mmm", Status: "sss",
			SHA256: "hhh", RecordedAt: "ttt", Session: &ReceiptSession{AgentProfile: "aaa"}, Path: "ppp"}, 16},
	}
	for _, c := range cases {
		raw, _ := appendPayload(nil, c.p)
		spec, _ := Lookup(c.typ)
		v := spec.NewPayload()
		if !decodeFast(raw, v) {
			t.Fatalf("%s %s: not decoded", c.typ, raw)
		}
		if got := testing.AllocsPerRun(100, func() { decodeFast(raw, spec.NewPayload()) }); got != c.want+1 {
			t.Errorf("%s: %v allocations, want %v (the payload and %v values)", c.typ, got, c.want+1, c.want)
		}
	}
}
