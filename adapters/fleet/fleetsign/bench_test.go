package fleetsign

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// What signing costs per event: publish signs each message, collect
// verifies each (docs/fleet.md, "Signed histories").
func BenchmarkSign(b *testing.B) {
	_, priv, _ := ed25519.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	for i := range b.N {
		Sign(priv, store, uint64(i), hash)
	}
}

func BenchmarkVerify(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
	sig := Sign(priv, store, 5, hash)
	for range b.N {
		if err := Verify(pub, store, 5, hash, sig); err != nil {
			b.Fatal(err)
		}
	}
}
