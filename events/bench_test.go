package events

import "testing"

func BenchmarkDecodeEnvelope(b *testing.B) {
	ref := sealed(b)
	enc := ref.Encode()
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEnvelope(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	e := sealed(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeStoredRef(b *testing.B) {
	ref := sealed(b)
	enc := ref.Encode()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeStoredRef(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	e := sealed(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = e.Encode()
	}
}

func BenchmarkComputeHash(b *testing.B) {
	e := sealed(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = e.ComputeHash()
	}
}

func BenchmarkDecodeStoredFold(b *testing.B) {
	ref := sealed(b)
	enc := ref.Encode()
	var c StringCache
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeStoredFold(enc, ref.Type, &c); err != nil {
			b.Fatal(err)
		}
	}
}
