package memory

import (
	"encoding/binary"
	"errors"
)

// The stored form of a Body: "TRB1", then the fields memory_id,
// nonce, summary, details, source_ref, source_quote, review_reason and
// reviewed_by, each as uvarint length + UTF-8 bytes, then the tags (uvarint
// count, then each as length + bytes) and the links (count, then type and
// target). It is internal to the ledger (bodies are never exported as is),
// deterministic, and decodes without a JSON parser: recall reads a body
// per scored candidate.

var bodyMagic = []byte("TRB1")

// MarshalBody encodes a body deterministically.
func MarshalBody(b *Body) []byte {
	n := len(bodyMagic) + 16
	for _, s := range []string{b.MemoryID, b.Nonce, b.Summary, b.Details, b.SourceRef, b.SourceQuote, b.ReviewReason, b.ReviewedBy} {
		n += len(s) + binary.MaxVarintLen32
	}
	for _, t := range b.Tags {
		n += len(t) + binary.MaxVarintLen32
	}
	for _, l := range b.Links {
		n += len(l.Type) + len(l.Target) + 2*binary.MaxVarintLen32
	}
	out := make([]byte, 0, n)
	out = append(out, bodyMagic...)
	str := func(s string) {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	for _, s := range []string{b.MemoryID, b.Nonce, b.Summary, b.Details, b.SourceRef, b.SourceQuote, b.ReviewReason, b.ReviewedBy} {
		str(s)
	}
	out = binary.AppendUvarint(out, uint64(len(b.Tags)))
	for _, t := range b.Tags {
		str(t)
	}
	out = binary.AppendUvarint(out, uint64(len(b.Links)))
	for _, l := range b.Links {
		str(l.Type)
		str(l.Target)
	}
	return out
}

var errBadBody = errors.New("memory body: malformed")

// BodyView is a stored body decoded in place: every field aliases the
// bytes it was parsed from and is valid as long as they are.
type BodyView struct {
	MemoryID, Nonce, Summary, Details, SourceRef, SourceQuote, ReviewReason, ReviewedBy []byte
	tags, links                                                                         []byte
	nTags, nLinks                                                                       int
}

type bodyReader struct {
	b   []byte
	err bool
}

func (r *bodyReader) uvarint() int {
	v, n := binary.Uvarint(r.b)
	if n <= 0 || n != uvarintLen(v) || v > uint64(len(r.b)-n) { // canonical, in bounds
		r.err = true
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *bodyReader) bytes() []byte {
	n := r.uvarint()
	if r.err {
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

// ParseBody decodes a stored body without copying.
func ParseBody(raw []byte) (BodyView, error) {
	if len(raw) < len(bodyMagic) || string(raw[:len(bodyMagic)]) != string(bodyMagic) {
		return BodyView{}, errBadBody
	}
	r := bodyReader{b: raw[len(bodyMagic):]}
	var v BodyView
	for _, f := range []*[]byte{&v.MemoryID, &v.Nonce, &v.Summary, &v.Details, &v.SourceRef, &v.SourceQuote, &v.ReviewReason, &v.ReviewedBy} {
		*f = r.bytes()
	}
	v.nTags = r.uvarint()
	start := r.b
	for i := 0; i < v.nTags && !r.err; i++ {
		r.bytes()
	}
	v.tags = start[:len(start)-len(r.b)]
	v.nLinks = r.uvarint()
	start = r.b
	for i := 0; i < 2*v.nLinks && !r.err; i++ {
		r.bytes()
	}
	v.links = start[:len(start)-len(r.b)]
	if r.err || len(r.b) != 0 {
		return BodyView{}, errBadBody
	}
	return v, nil
}

// EachTag calls fn with every tag, in order.
func (v *BodyView) EachTag(fn func(tag []byte)) {
	r := bodyReader{b: v.tags}
	for i := 0; i < v.nTags; i++ {
		fn(r.bytes())
	}
}

// Body copies the view into a Body.
func (v *BodyView) Body() Body {
	b := Body{
		MemoryID: string(v.MemoryID), Nonce: string(v.Nonce), Summary: string(v.Summary), Details: string(v.Details),
		SourceRef: string(v.SourceRef), SourceQuote: string(v.SourceQuote), ReviewReason: string(v.ReviewReason),
		ReviewedBy: string(v.ReviewedBy), Tags: make([]string, 0, v.nTags), Links: make([]Link, 0, v.nLinks),
	}
	v.EachTag(func(t []byte) { b.Tags = append(b.Tags, string(t)) })
	r := bodyReader{b: v.links}
	for i := 0; i < v.nLinks; i++ {
		b.Links = append(b.Links, Link{Type: string(r.bytes()), Target: string(r.bytes())})
	}
	return b
}

// UnmarshalBody decodes a stored body into a Body.
func UnmarshalBody(raw []byte) (Body, error) {
	v, err := ParseBody(raw)
	if err != nil {
		return Body{}, err
	}
	return v.Body(), nil
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
