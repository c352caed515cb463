package events

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeEnvelope feeds outside input to the envelope decoder. Whatever
// it accepts must be valid, hash-consistent, and reach a fixpoint: its
// stored form decodes (both ways) to the same envelope and encodes to the
// same bytes.
func FuzzDecodeEnvelope(f *testing.F) {
	ref := sealed(f)
	good := ref.Encode()
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"payload":{`), []byte(`"payload":{"x":1,`), 1))
	f.Add(bytes.Replace(good, []byte(`{"id"`), []byte(`{"id":"x","id"`), 1))
	f.Add([]byte(`{"id":"01M6A6FT000000000000000001"}`))
	f.Add([]byte(`[]`))
	moved := rootMoved(f)
	f.Add(moved.Encode())
	if sample, err := os.ReadFile("../testdata/ledger/sample.ndjson"); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(sample)), "\n") {
			f.Add([]byte(line))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastPath(t, data)
		e, err := DecodeEnvelope(data)
		// Re-seal mutated input so the fuzzer explores past the hash check.
		var hm *HashMismatchError
		if errors.As(err, &hm) && bytes.Count(data, []byte(hm.Want)) == 1 {
			data = bytes.Replace(data, []byte(hm.Want), []byte(hm.Got), 1)
			e, err = DecodeEnvelope(data)
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("accepted an invalid envelope: %v", err)
		}
		if e.ComputeHash() != e.Hash {
			t.Fatal("accepted a bad hash")
		}
		enc := e.Encode()
		again, err := DecodeEnvelope(enc)
		if err != nil {
			t.Fatalf("stored form does not decode: %v\n%s", err, enc)
		}
		stored, err := DecodeStored(enc)
		if err != nil {
			t.Fatalf("DecodeStored: %v\n%s", err, enc)
		}
		if !sameEnvelope(again, e) || !sameEnvelope(stored, e) || !bytes.Equal(again.Encode(), enc) {
			t.Fatalf("no fixpoint:\n%s\n%s", enc, again.Encode())
		}
	})
}

// FuzzDecodeStored is the differential target of the stored-bytes decoder
// (the fast path of replay, rebuild and verify) against the strict
// envelope decoder. Whatever DecodeStored accepts and verify would pass
// (canonical form, hash, Validate), the strict decoder must accept and
// read identically; whatever both accept must agree field by field. The
// fuzzer mutates raw bytes and, to get past the fixed layout, the fields
// of an envelope that is then encoded and sealed (a structure-aware
// generator: most random bytes are not an envelope at all).
func FuzzDecodeStored(f *testing.F) {
	ref := sealed(f)
	f.Add(ref.Encode(), ref.Stream, ref.Type, ref.Actor, ref.Version, ref.Position, int64(0), []byte(ref.Payload))
	f.Add([]byte(`{"id":"`), "harness/codex", TypeBridgePlanned, "", uint64(1), uint64(1), int64(1), []byte(`{"harness_id":"codex","changed_paths":[]}`))
	f.Add([]byte{}, "harness/codex", TypeReceiptPruned, "t", uint64(2), uint64(9), int64(-5),
		[]byte(`{"harness_id":"codex","worker_key_fingerprint":"`+strings.Repeat("a", 64)+`","\u0072eceipt_id":"r","reason":"over_limit"}`))
	f.Add([]byte{}, `harness/co"dex`, TypeHarnessDetected, `a\nb`, uint64(1), uint64(1), int64(0), []byte(`{ "x" : 1 }`))
	f.Fuzz(func(t *testing.T, data []byte, stream, typ, actor string, version, position uint64, nanos int64, payload []byte) {
		checkStored(t, data)
		e := ref
		e.Stream, e.Type, e.Actor, e.Version, e.Position, e.Payload = stream, typ, actor, version, position, payload
		e.RecordedAt = ref.RecordedAt.Add(time.Duration(nanos))
		e.Seal(ref.PrevHash)
		checkStored(t, e.Encode())
	})
}

func checkStored(t *testing.T, data []byte) {
	t.Helper()
	checkFastPath(t, data)
	st, err := DecodeStored(data)
	if err != nil {
		return
	}
	PeekType(data)
	var c StringCache
	fe, ferr := DecodeStoredFold(data, "", &c)
	if ferr != nil || fe.PrevHash != "" || fe.Hash != "" || fe.Version != st.Version || fe.Position != st.Position || !SameContent(&fe, &st) {
		t.Fatalf("DecodeStoredFold disagrees with DecodeStored on %q (%v):\nfold   %+v\nstored %+v", data, ferr, fe, st)
	}
	if again, _ := DecodeStoredFold(data, st.Type, &c); again.Stream != fe.Stream || again.Actor != fe.Actor || again.Type != st.Type {
		t.Fatalf("cached strings differ on %q", data)
	}
	if !bytes.Equal(st.Encode(), data) {
		return // verify: not in canonical form
	}
	strict, serr := decodeStrict(data)
	if serr == nil {
		if !sameEnvelope(strict, st) {
			t.Fatalf("decoders disagree on %q:\nstored %+v\nstrict %+v", data, st, strict)
		}
		return
	}
	if st.ComputeHash() == st.Hash && st.Validate() == nil && st.Version > 0 && st.Position > 0 && isHex64(st.PrevHash) {
		t.Fatalf("verify passes what the strict decoder refuses (%v): %q", serr, data)
	}
}

// checkFastPath: DecodeEnvelope (its canonical fast path, then the strict
// decoder) gives exactly what the strict decoder alone gives: the same
// envelope, or the same error.
func checkFastPath(t *testing.T, data []byte) {
	t.Helper()
	if len(data) > MaxEnvelopeBytes {
		return
	}
	got, gerr := DecodeEnvelope(data)
	want, werr := decodeStrict(data)
	switch {
	case (gerr == nil) != (werr == nil):
		t.Fatalf("DecodeEnvelope: %v, the strict decoder: %v, on %q", gerr, werr, data)
	case gerr != nil && gerr.Error() != werr.Error():
		t.Fatalf("errors differ on %q:\n%v\n%v", data, gerr, werr)
	case gerr == nil && (!sameEnvelope(got, want) || !got.CarriesSeal(want.Version, want.Position, want.PrevHash)):
		t.Fatalf("decoders disagree on %q:\nfast   %+v\nstrict %+v", data, got, want)
	}
	owned, oerr := DecodeEnvelopeOwned(bytes.Clone(data))
	if (oerr == nil) != (gerr == nil) || gerr == nil && !sameEnvelope(owned, got) {
		t.Fatalf("DecodeEnvelopeOwned: %v, DecodeEnvelope: %v, on %q", oerr, gerr, data)
	}
	if gerr != nil {
		return
	}
	// The stored form an import puts as it is: the input, and Encode's.
	stored, _ := got.CarriedStored(got.Version, got.Position, got.PrevHash)
	if stored != nil && (!bytes.Equal(stored, data) || !bytes.Equal(stored, got.Encode())) {
		t.Fatalf("stored form %q of %q is not Encode's %q", stored, data, got.Encode())
	}
	checkReseal(t, got, stored != nil)
}

// checkReseal: an envelope moved to other chain values by ResealStored is
// the one a seal and an encoding give, byte for byte; it refuses an
// envelope that was not read from its stored form.
func checkReseal(t *testing.T, got Envelope, fromStored bool) {
	t.Helper()
	for _, to := range []struct{ v, p uint64 }{{got.Version, got.Position + 1}, {got.Version + 9, got.Position*10 + 3}, {1, 1}} {
		e, want := got, got
		want.Version, want.Position = to.v, to.p
		want.Seal(got.Hash)
		out, _, ok := e.ResealStored(to.v, to.p, got.Hash, nil, []byte("x"))
		switch {
		case ok != fromStored:
			t.Fatalf("ResealStored ok %v for an envelope read from its stored form: %v", ok, fromStored)
		case !ok && !sameEnvelope(e, got):
			t.Fatal("a refused ResealStored changed the envelope")
		case ok && (!sameEnvelope(e, want) || string(out) != "x"+string(want.Encode())):
			t.Fatalf("ResealStored to %d@%d:\n%s %s\nwant\n%s %s", to.v, to.p, out, e.Hash, want.Encode(), want.Hash)
		}
	}
}

// FuzzParseRunTime: the hand-parsed run time layout is time.Parse of
// RunTimeLayout with its Format round trip: the same time or an error.
func FuzzParseRunTime(f *testing.F) {
	for _, s := range []string{"2026-11-01T12:00:00.000Z", "2024-02-29T23:59:59.999Z", "2023-02-29T00:00:00.000Z",
		"0000-01-01T00:00:00.000Z", "2026-11-01T12:00:60.000Z", "2026-11-01T12:00:00.00Z", "2026-11-01T12:00:00.0000Z",
		"2026-11-01t12:00:00.000Z", "2026-11-01T12:00:00,000Z", "+026-11-01T12:00:00.000Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, gerr := ParseRunTime(s)
		want, werr := time.Parse(RunTimeLayout, s)
		if werr == nil && want.Format(RunTimeLayout) != s {
			werr = errors.New("not canonical")
		}
		if (gerr == nil) != (werr == nil) || gerr == nil && (!got.Equal(want) || got.Location() != time.UTC) {
			t.Fatalf("ParseRunTime(%q) = %v, %v; time.Parse: %v, %v", s, got, gerr, want, werr)
		}
	})
}
