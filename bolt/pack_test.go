package bolt

import (
	"bytes"
	"compress/flate"
	"errors"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// memoryEnvelope is a memory.captured event as `tree-ring import` stores
// it (BenchmarkLedgerSize's dataset): the envelope most of a big ledger is.
const memoryEnvelope = `{"id":"01M8TJQZRTFSAFFG6EVTDNG5JH","stream":"memory/mem_20260901_000000_000000000001","version":1,"position":3,"type":"memory.captured","schema_version":1,"recorded_at":"2026-12-02T05:13:25.53052069Z","actor":"cli","payload":{"memory_id":"mem_20260901_000000_000000000001","body_sha256":"4d0e6cc260e10ca17f661ef53b3ec914bc75feb50d84a2a19a54a0d587c206df","created_at":"2026-09-01T00:00:01.000000Z","updated_at":"2026-09-01T00:00:01.000000Z","project":"bench","scope":"global","ring":"cambium","event_type":"lesson","source_type":"manual","salience":0.5,"confidence":0.5,"sensitivity":"normal","retention":"normal","origin":"import"},"prev_hash":"a89bf96dcd3448c922a98d505c65cbcc466a29faaf403a2dd1110f75e46ee304","hash":"87faf3e143cfebcf69bfcdadb0be67de012c97a20335390ee96b39b1c1799a86"}`

// packCases are inputs every code path of packEvent meets: each must come
// back byte for byte.
var packCases = []string{
	memoryEnvelope,
	`{}`, `{`, `{"`, `{"id":`, `{"id":"`, `{"a\"b":"c\\","d":"\\\""}`,
	`{"unknown_key":"unknown value","id":1}`,
	`{"hash":"4D0E6CC260E10CA17F661EF53B3EC914BC75FEB50D84A2A19A54A0D587C206DF"}`, // upper-case hex: literal
	`{"h":"4d0e6cc260e10ca17f661ef53b3ec914bc75feb50d84a2a19a54a0d587c206dg"}`,    // 66 bytes, not hex
	`{"id":"01m8tjqzrtfsaffg6evtdng5jh"}`,                                         // lower-case ULID: literal
	`{"id":"81M8TJQZRTFSAFFG6EVTDNG5JH"}`,                                         // overflows 128 bits
	`{"t":"2026-12-02T05:13:25Z","u":"2026-12-02T05:13:25.5Z","v":"2026-12-02T05:13:25.123456789Z"}`,
	`{"t":"2026-12-02T05:13:25.Z","u":"2026-12-02T05:13:25.1234567890Z","v":"2026-12-02 05:13:25Z"}`,
	`{"t":"2026-12-02T05:13:25+01:00","u":"2026-12-02T05:13:2aZ","v":"x026-12-02T05:13:25Z"}`,
	`{"a":"normal","b":"normal":,"c":"cli"}`, // a word followed by a colon stays a value
	"{\"x\":\"a\tb\"}",                       // a control byte: stored as it is
	"{\"x\":1}\n",
	`not an object`, "\x01 starts like a packed value", "",
}

func TestPackRoundTrip(t *testing.T) {
	for _, c := range packCases {
		p := packEvent(nil, []byte(c))
		if len(p) > len(c)+1 {
			t.Errorf("%q: packed to %d bytes from %d", c, len(p), len(c))
		}
		if len(c) > 0 && c[0] == packedTag {
			continue // not an Encode output: stored as it is, read as packed
		}
		got, err := unpackEvent(nil, p)
		if err != nil || string(got) != c {
			t.Errorf("%q: packed %x, unpacked %q, %v", c, p, got, err)
		}
	}
	// A value holding a control byte, or not an object, is stored as it is.
	for _, c := range []string{"{\"x\":\"a\tb\"}", "{\"x\":1}\n", `not an object`} {
		if p := packEvent(nil, []byte(c)); string(p) != c {
			t.Errorf("%q: packed to %q, want it as it is", c, p)
		}
	}
}

func TestPackShrinksAMemoryEnvelope(t *testing.T) {
	p := packEvent(nil, []byte(memoryEnvelope))
	// 786 bytes of JSON: the field names, hashes, ULID and times packed.
	if len(p) > 330 {
		t.Errorf("memory envelope packs to %d bytes (from %d), want ≤ 330", len(p), len(memoryEnvelope))
	}
	t.Logf("%d -> %d bytes", len(memoryEnvelope), len(p))
}

func TestUnpackRejectsMalformedValues(t *testing.T) {
	valid := packEvent(nil, []byte(`{"t":"2026-12-02T05:13:25.5Z","h":"4d0e6cc260e10ca17f661ef53b3ec914bc75feb50d84a2a19a54a0d587c206df"}`))
	timeAt := bytes.IndexByte(valid, codeTime)
	cases := map[string][]byte{
		"truncated hex":     {packedTag, codeHex, 1, 2, 3},
		"truncated ULID":    {packedTag, codeULID, 1, 2, 3},
		"truncated time":    {packedTag, codeTime, 2, 0x20, 0x26},
		"time fraction 10":  {packedTag, codeTime, 10},
		"time digit 0xa":    append([]byte{packedTag, codeTime, 0}, bytes.Repeat([]byte{0xa0}, 7)...),
		"time padding":      append(append([]byte(nil), valid[:timeAt+2+7]...), valid[timeAt+2+7]|1),
		"word past the end": {packedTag, codeWord, 255},
		"word missing":      {packedTag, codeWord},
	}
	for name, v := range cases {
		if _, err := unpackEvent(nil, v); !errors.Is(err, errPacked) {
			t.Errorf("%s: %v, want errPacked", name, err)
		}
	}
	if _, err := unpackEvent(nil, valid); err != nil {
		t.Fatalf("the valid value: %v", err)
	}
}

// TestPackWordsAreFrozen pins the codes on disk: a word may be appended,
// never moved or changed.
func TestPackWordsAreFrozen(t *testing.T) {
	pinned := map[int]string{0: `"id":`, 10: `"hash":`, 24: `"origin":`, 27: `"memory.captured"`, 28: `"harness_id":`}
	for i, w := range pinned {
		if packWords[i] != w {
			t.Errorf("packWords[%d] = %s, want %s", i, packWords[i], w)
		}
	}
	if n := len(packWords); n != 212 {
		t.Errorf("%d packWords: a change must keep every existing code (then update this count)", n)
	}
	for _, w := range packWords {
		if !strings.HasPrefix(w, `"`) || strings.ContainsAny(w, "\\\x00") {
			t.Errorf("word %q: every word is a quoted string, with or without its colon", w)
		}
	}
}

// TestFormat2LedgerReadsAndBecomesFormat3: a ledger a format-2 build wrote
// (every value JSON) reads, verifies and takes appends as format 2 (JSON
// values: the older program its hooks run still reads it) until a write
// open with Migrate (`tree-ring init`) makes it format 3; from then on
// appends are packed, and it verifies with both kinds of values.
func TestFormat2LedgerReadsAndBecomesFormat3(t *testing.T) {
	f := newFactory()
	st, path := openTest(t, Options{Projections: nil})
	mustAppend(t, st, "run/a", 0, f.run("a", 1), f.run("a", 2))
	want := readAll(t, st)
	st.Close()
	toFormat2(t, path)

	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, ro); !sameEvents(got, want) {
		t.Error("a format-2 ledger reads other events")
	}
	if _, err := ro.Verify(bg); err != nil {
		t.Fatalf("verify the format-2 ledger: %v", err)
	}
	ro.Close()

	st, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st, "run/a", 2, f.run("a", 3))
	st.Close()
	if got, kinds := formatOf(t, path), valueKinds(t, path); got != formatV2 || kinds != "{{{" {
		t.Fatalf("after an append without Migrate: format %q, value kinds %q; want format 2 and JSON values", got, kinds)
	}

	st, err = Open(path, Options{Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if got := formatOf(t, path); got != FormatVersion {
		t.Errorf("format after a Migrate open: %q, want %q", got, FormatVersion)
	}
	if st, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st, "run/a", 3, f.run("a", 4))
	if _, err := st.Verify(bg); err != nil {
		t.Fatalf("verify after the first packed append: %v", err)
	}
	all := readAll(t, st)
	if len(all) != 4 || !sameEvents(all[:2], want) {
		t.Errorf("after the appends: %d events, the first two the same: %v", len(all), sameEvents(all[:2], want))
	}
	st.Close()
	if kinds := valueKinds(t, path); kinds != "{{{\x01" {
		t.Errorf("value kinds %q, want the three JSON values kept and the new one packed", kinds)
	}
}

// toFormat2 rewrites a closed ledger as a format-2 build leaves it: every
// event value its JSON, meta.format "2".
func toFormat2(t *testing.T, path string) {
	t.Helper()
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		if err := unpackAll(tx); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, []byte(formatV2))
	})
	delete(damaged, path) // a format-2 ledger, not a damaged one
}

// valueKinds is the first byte of every events value: '{' JSON, 0x01 packed.
func valueKinds(t *testing.T, path string) string {
	var kinds []byte
	readRaw(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketEvents).ForEach(func(_, v []byte) error { kinds = append(kinds, v[0]); return nil })
	})
	return string(kinds)
}

func formatOf(t *testing.T, path string) (f string) {
	t.Helper()
	readRaw(t, path, func(tx *bbolt.Tx) error { f = string(tx.Bucket(bucketMeta).Get(keyFormat)); return nil })
	return f
}

// FuzzPackEvent: any input comes back from pack and unpack as it was
// (unless it starts like a packed value, which no Encode output does), and
// unpacking any bytes fails or succeeds without a panic, its output
// bounded by the input.
func FuzzPackEvent(f *testing.F) {
	for _, c := range packCases {
		f.Add([]byte(c))
		f.Add(packEvent(nil, []byte(c)))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != packedTag {
			p := packEvent(nil, b)
			if len(p) > len(b)+1 {
				t.Fatalf("packed %d bytes to %d", len(b), len(p))
			}
			got, err := unpackEvent(nil, p)
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("round trip: %q -> %x -> %q, %v", b, p, got, err)
			}
		}
		got, err := unpackEvent(nil, b)
		if err == nil && len(got) > 40*len(b) {
			t.Fatalf("unpacked %d bytes to %d", len(b), len(got))
		}
	})
}

func readRaw(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(fn); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkPackEvent: packing and unpacking a memory's envelope, the cost
// format 3 adds to every append and every read of an event.
func BenchmarkPackEvent(b *testing.B) {
	enc := []byte(memoryEnvelope)
	p := packEvent(nil, enc)
	b.Run("pack", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		var dst []byte
		for b.Loop() {
			dst = packEvent(dst[:0], enc)
		}
	})
	b.Run("unpack", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		var dst []byte
		for b.Loop() {
			dst, _ = unpackEvent(dst[:0], p)
		}
	})
}

// flateDict is compress/flate's preset dictionary for the comparison with
// packEvent: the same words.
var flateDict = []byte(strings.Join(packWords[:], ""))

// BenchmarkPackVsFlate: the standard library's compressor with the same
// words as its preset dictionary (docs/replacements.md), on the same
// envelope: bytes stored and the time to write and read one value.
func BenchmarkPackVsFlate(b *testing.B) {
	enc := []byte(memoryEnvelope)
	b.Run("pack", func(b *testing.B) {
		var p, u []byte
		for b.Loop() {
			p = packEvent(p[:0], enc)
			u, _ = unpackEvent(u[:0], p)
		}
		b.ReportMetric(float64(len(p)), "stored-B")
	})
	b.Run("flate", func(b *testing.B) {
		var buf bytes.Buffer
		w, _ := flate.NewWriterDict(&buf, flate.BestSpeed, flateDict)
		var out bytes.Buffer
		for b.Loop() {
			buf.Reset()
			w.Reset(&buf)
			w.Write(enc)
			w.Close()
			r := flate.NewReaderDict(bytes.NewReader(buf.Bytes()), flateDict)
			out.Reset()
			out.ReadFrom(r)
		}
		if !bytes.Equal(out.Bytes(), enc) {
			b.Fatal("flate round trip")
		}
		b.ReportMetric(float64(buf.Len()), "stored-B")
	})
}

// TestPackAgainstFlate is the differential test against the library
// packing replaces (docs/replacements.md): on every case both give back
// the input, and on an envelope packing stores fewer bytes than
// compress/flate with the same words as its dictionary.
func TestPackAgainstFlate(t *testing.T) {
	for _, c := range packCases {
		var buf bytes.Buffer
		w, _ := flate.NewWriterDict(&buf, flate.BestSpeed, flateDict)
		w.Write([]byte(c))
		w.Close()
		var out bytes.Buffer
		if _, err := out.ReadFrom(flate.NewReaderDict(bytes.NewReader(buf.Bytes()), flateDict)); err != nil || out.String() != c {
			t.Fatalf("%q: flate gave back %q, %v", c, out.String(), err)
		}
		p := packEvent(nil, []byte(c))
		if got, err := unpackEvent(nil, p); len(c) > 0 && c[0] != packedTag && (err != nil || string(got) != c) {
			t.Errorf("%q: pack gave back %q, %v", c, got, err)
		}
		if c == memoryEnvelope && len(p) >= buf.Len() {
			t.Errorf("memory envelope: packed %d bytes, flate %d", len(p), buf.Len())
		}
	}
}
