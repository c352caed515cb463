package events

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
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
	if sample, err := os.ReadFile("../testdata/ledger/sample.ndjson"); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(sample)), "\n") {
			f.Add([]byte(line))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
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

// FuzzDecodeStored must never panic on arbitrary bytes (a tampered ledger),
// and what it accepts must re-encode to the same bytes or be caught by
// verify's canonical-form check.
func FuzzDecodeStored(f *testing.F) {
	ref := sealed(f)
	f.Add(ref.Encode())
	f.Add([]byte(`{"id":"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeStored(data)
		if err != nil {
			return
		}
		PeekType(data)
		_ = e.Encode()
		_ = e.ComputeHash()
	})
}
