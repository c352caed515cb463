package projections

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/tree-ring/tree-ring/events/strictjson"
)

// recordCodec is one projection record's hand-written codec against
// encoding/json: enc is nil for a record the hook only reads.
type recordCodec struct {
	name string
	zero func() any                   // a pointer to a zero record
	enc  func(b []byte, v any) []byte // appends *v's JSON
	fast func(raw []byte) (any, bool) // the decoder without its fallback
	dec  func(raw []byte) (any, error)
}

func codecOf[T any](name string, enc func([]byte, *T) []byte, fields func(*T) func([]byte) func(*strictjson.Reader) error, dec func([]byte) (T, error)) recordCodec {
	c := recordCodec{name: name, zero: func() any { return new(T) },
		fast: func(raw []byte) (any, bool) { v, ok := fastRecord(raw, fields); return &v, ok },
		dec:  func(raw []byte) (any, error) { v, err := dec(raw); return &v, err }}
	if enc != nil {
		c.enc = func(b []byte, v any) []byte { return enc(b, v.(*T)) }
	}
	return c
}

var recordCodecs = []recordCodec{
	codecOf("ReceiptEntry", appendReceiptEntry, receiptEntryFields, decodeReceiptEntry),
	codecOf("ReceiptProof", appendReceiptProof, receiptProofFields, decodeReceiptProof),
	codecOf("Harness", appendHarness, harnessFields, decodeHarness),
	codecOf[Program]("Program", nil, programFields, decodeProgram),
	codecOf[ManifestStore]("ManifestStore", nil, manifestStoreFields, decodeManifestStore),
}

var pieces = []string{"", "a", "receipt-1", `"`, `\`, "\n", "\x00", "<", ">", "&", "\u2028", "\xff", "é", "日本", "\U0001f600"}

// fill sets v to random values; empty strings, zero numbers, false and
// empty or nil slices are frequent, so omitempty members drop out.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		var s string
		for n := r.IntN(4); n > 0; n-- {
			s += pieces[r.IntN(len(pieces))]
		}
		v.SetString(s)
	case reflect.Int64:
		v.SetInt([]int64{0, -1, 1 << 40, r.Int64() - r.Int64()}[r.IntN(4)])
	case reflect.Uint64:
		v.SetUint([]uint64{0, 1, r.Uint64()}[r.IntN(3)])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Slice:
		switch r.IntN(3) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			n := 1 + r.IntN(3)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				fill(r, s.Index(i))
			}
			v.Set(s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(r, v.Field(i))
		}
	default:
		panic("fill: unhandled kind " + v.Kind().String())
	}
}

// TestRecordCodecsMatchEncodingJSON: the encoders write json.Marshal's
// bytes, and the decoders read them (valid UTF-8) without falling back,
// to json.Unmarshal's value.
func TestRecordCodecsMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 2000 {
		for _, c := range recordCodecs {
			v := c.zero()
			fill(r, reflect.ValueOf(v).Elem())
			raw, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if c.enc != nil {
				if got := c.enc([]byte("x"), v); !bytes.Equal(got[1:], raw) {
					t.Fatalf("%s %+v:\n got %s\nwant %s", c.name, v, got[1:], raw)
				}
			}
			if _, ok := c.fast(raw); !ok && utf8.Valid(raw) {
				t.Fatalf("%s %s: not read by the fast path", c.name, raw)
			}
			checkRecordDecode(t, c, raw)
		}
	}
	for _, in := range []string{`null`, `{"state":null}`, `{"STATE":"x"}`, `{"position":-1}`, `{"epoch":1.5}`, `{"markers":["a",1]}`, `{"x":1}`, `{"state":"\xff"}`, `{}{}`} {
		for _, c := range recordCodecs {
			checkRecordDecode(t, c, []byte(in))
		}
	}
}

// checkRecordDecode: whatever the fast path reads, json.Unmarshal reads
// to the same value, and the decoder with its fallback agrees with
// json.Unmarshal on everything: the same verdict and value.
func checkRecordDecode(t *testing.T, c recordCodec, raw []byte) {
	t.Helper()
	want := c.zero()
	wantErr := json.Unmarshal(raw, want)
	if got, ok := c.fast(raw); ok && (wantErr != nil || !reflect.DeepEqual(got, want)) {
		t.Fatalf("%s %q: fast path %+v, encoding/json %+v %v", c.name, raw, got, want, wantErr)
	}
	got, err := c.dec(raw)
	if (err == nil) != (wantErr == nil) || err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %q: %+v %v, encoding/json %+v %v", c.name, raw, got, err, want, wantErr)
	}
}

func FuzzRecordDecoders(f *testing.F) {
	for _, s := range []string{`{"receipt_id":"r","position":3,"adopted":true}`, `{"epoch":2,"newest_id":"x"}`, `{"state":"active","markers":["a"],"paths":[]}`,
		`{"path":"p","size":-1,"inode":7}`, `{"store_id":"s","project_root_fingerprint":"\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, c := range recordCodecs {
			checkRecordDecode(t, c, raw)
		}
	})
}
