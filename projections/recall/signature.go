package recall

// A memory's text signature is a 1,024-bit Bloom filter (two bits per
// trigram) of the byte trigrams of its lowercased text (the text the
// textual factor searches: summary, details and tags, see lowerText). A query term can be a
// substring of the text only if every trigram of the term is in the set,
// so the signature bounds the textual factor from above without reading
// the body: ranking reads a body only when even that bound can still
// enter the results. Terms shorter than three bytes are always possible.
// Like the token hashes, it is a lossy hash of the text, never the text;
// a long text fills it, and then it bounds nothing (every term possible).
const sigBytes = 128

type signature [sigBytes]byte

// trigramBits are a trigram's two bits: the top 10 bits of two
// multiplicative hashes.
func trigramBits(a, b, c byte) (uint32, uint32) {
	x := uint32(a)<<16 | uint32(b)<<8 | uint32(c)
	return x * 0x9E3779B1 >> 22, x * 0x85EBCA77 >> 22
}

func textSignature(text []byte) signature {
	var s signature
	for i := 0; i+3 <= len(text); i++ {
		b1, b2 := trigramBits(text[i], text[i+1], text[i+2])
		s[b1>>3] |= 1 << (b1 & 7)
		s[b2>>3] |= 1 << (b2 & 7)
	}
	return s
}

// mayContain reports whether term can be a substring of the text signed
// by s (stored form; all zero bytes, as stored for a memory without
// indexed text, exclude every term of three bytes or more).
func mayContain(s []byte, term string) bool {
	if len(s) != sigBytes {
		return true
	}
	for i := 0; i+3 <= len(term); i++ {
		b1, b2 := trigramBits(term[i], term[i+1], term[i+2])
		if s[b1>>3]&(1<<(b1&7)) == 0 || s[b2>>3]&(1<<(b2&7)) == 0 {
			return false
		}
	}
	return true
}

// textualBound is the textual factor's upper bound from the signature.
func textualBound(terms []string, s []byte) float64 {
	return termShare(terms, func(t string) bool { return mayContain(s, t) })
}
