package recall

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/tree-ring/tree-ring/events"
)

// The cold record (the rest of the 'd' doc value, after the hot record) is a memory's full state minus its text and
// minus what its hot record holds (memory id, body digest, salience and
// confidence), in a binary form that queries read in place beside the hot
// record: flags(1) (1 needs_review, 2 redacted, 4 << j: time field j of
// coldTimes is stored as unix µs), then the strings from cCreatedAt on and
// the supersedes ids, each as uvarint length and bytes (the supersedes ids
// preceded by their uvarint count), but a time field in its canonical form
// (events.FormatMemoryTime: 27 bytes) as 8 bytes of unix µs.
const (
	cMemoryID   = iota // from the hot record
	cBodySHA256        // from the hot record
	cCreatedAt         // the first string stored
	cUpdatedAt
	cProject
	cAgentProfile
	cWorkflowID
	cSessionID
	cOperationID
	cScope
	cRing
	cEventType
	cSourceType
	cSensitivity
	cRetention
	cExpiresAt
	cReviewedAt
	cOrigin
	cSupersededBy
	cClaim
	nColdStrings
)

const (
	coldNeedsReview = 1 << 0
	coldRedacted    = 1 << 1
	coldTimeBit     = 1 << 2 // << j for coldTimes[j]
	coldFlags       = coldNeedsReview | coldRedacted | 0xf<<2
	coldFixed       = 1
)

// coldTimes are the time fields, stored as unix µs when canonical.
var coldTimes = [4]int{cCreatedAt, cUpdatedAt, cExpiresAt, cReviewedAt}

// timeSlot is i's place in coldTimes, -1 if it is not a time field.
func timeSlot(i int) int {
	for j, t := range coldTimes {
		if t == i {
			return j
		}
	}
	return -1
}

// canonicalTime reports whether s is a time that FormatMemoryTime writes
// back byte for byte, and its unix µs.
func canonicalTime(s string) (int64, bool) {
	t, err := events.ParseMemoryTime(s)
	if err != nil || events.FormatMemoryTime(t) != s {
		return 0, false
	}
	return t.UnixMicro(), true
}

var errBadCold = errors.New("recall: malformed cold record")

// strings returns c's strings in coldStrings order.
func (c *cold) strings() [nColdStrings]string {
	p := &c.MemoryCaptured
	return [nColdStrings]string{
		p.MemoryID, p.BodySHA256, p.CreatedAt, p.UpdatedAt, p.Project, p.AgentProfile, p.WorkflowID, p.SessionID,
		p.OperationID, p.Scope, p.Ring, p.EventType, p.SourceType, p.Sensitivity, p.Retention, p.ExpiresAt,
		p.ReviewedAt, p.Origin, c.SupersededBy, c.Claim,
	}
}

func encodeCold(c *cold) []byte {
	strs := c.strings()
	strs[cMemoryID], strs[cBodySHA256] = "", "" // in the hot record
	n := coldFixed + binary.MaxVarintLen32*(nColdStrings+1+len(c.Supersedes))
	for _, s := range strs {
		n += len(s)
	}
	for _, s := range c.Supersedes {
		n += len(s)
	}
	b := make([]byte, 1, n)
	if c.NeedsReview {
		b[0] |= coldNeedsReview
	}
	if c.Redacted {
		b[0] |= coldRedacted
	}
	for i := cCreatedAt; i < nColdStrings; i++ {
		if j := timeSlot(i); j >= 0 {
			if us, ok := canonicalTime(strs[i]); ok {
				b[0] |= coldTimeBit << j
				b = binary.BigEndian.AppendUint64(b, uint64(us))
				continue
			}
		}
		b = binary.AppendUvarint(b, uint64(len(strs[i])))
		b = append(b, strs[i]...)
	}
	b = binary.AppendUvarint(b, uint64(len(c.Supersedes)))
	for _, s := range c.Supersedes {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// span is a field's place in a cold record.
type span struct{ off, n uint32 }

// coldView is a cold record decoded in place with its hot record's
// fields: it aliases the stored values and is valid as long as they are
// (the read transaction).
type coldView struct {
	raw       []byte
	str       [nColdStrings]span
	id        []byte
	digest    [64]byte // hex
	sal, conf float64
	micros    [len(coldTimes)]int64 // the time fields stored as unix µs (flags)
	flags     byte
	nSup      int
	sup       uint32 // offset of the first supersedes id
}

// parseCold decodes a cold record, with the fields it takes from the
// memory's hot record h, without copying or allocating.
func parseCold(raw []byte, h *hot) (coldView, error) {
	if len(raw) < coldFixed || len(h.body) != 32 {
		return coldView{}, errBadCold
	}
	v := coldView{raw: raw, flags: raw[0], id: h.id, sal: h.sal, conf: h.conf}
	hex.Encode(v.digest[:], h.body)
	// The encoder writes only these flags and finite numbers (memory
	// validation bounds salience and confidence); anything else is not a
	// record of ours, and a NaN would not even equal itself.
	if v.flags&^coldFlags != 0 || !finite(v.sal) || !finite(v.conf) {
		return coldView{}, errBadCold
	}
	off, ok := v.fields(coldFixed)
	if !ok {
		return coldView{}, errBadCold
	}
	n, w := binary.Uvarint(raw[off:])
	if w <= 0 || n > events.MaxMemorySupersedes {
		return coldView{}, errBadCold
	}
	off += w
	v.nSup, v.sup = int(n), uint32(off)
	for range v.nSup {
		if _, off, ok = next(raw, off); !ok {
			return coldView{}, errBadCold
		}
	}
	if off != len(raw) {
		return coldView{}, errBadCold
	}
	return v, nil
}

// fields reads the string and time fields from off, and returns where
// they end.
func (v *coldView) fields(off int) (int, bool) {
	for i := cCreatedAt; i < nColdStrings; i++ {
		if j := timeSlot(i); j >= 0 && v.flags&(coldTimeBit<<j) != 0 {
			if len(v.raw)-off < 8 {
				return 0, false
			}
			v.micros[j] = int64(binary.BigEndian.Uint64(v.raw[off:]))
			off += 8
			continue
		}
		var ok bool
		if v.str[i], off, ok = next(v.raw, off); !ok {
			return 0, false
		}
	}
	return off, true
}

// next reads the uvarint-prefixed string at off.
func next(raw []byte, off int) (span, int, bool) {
	n, w := binary.Uvarint(raw[off:])
	if w <= 0 || n > uint64(len(raw)-off-w) {
		return span{}, 0, false
	}
	return span{uint32(off + w), uint32(n)}, off + w + int(n), true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// bytes returns string field i in place; not a time field (cold formats
// those).
func (v *coldView) bytes(i int) []byte {
	switch i {
	case cMemoryID:
		return v.id
	case cBodySHA256:
		return v.digest[:]
	}
	s := v.str[i]
	return v.raw[s.off : s.off+s.n]
}

// cold copies the view out: every string shares one allocation (the
// record, then the id, the digest and the times stored as µs, formatted).
func (v *coldView) cold() cold {
	var sb strings.Builder
	sb.Grow(len(v.raw) + len(v.id) + len(v.digest) + len(coldTimes)*len(events.MemoryTimeLayout))
	sb.Write(v.raw)
	sb.Write(v.id)
	sb.Write(v.digest[:])
	str := v.str
	for j, i := range coldTimes {
		if v.flags&(coldTimeBit<<j) != 0 {
			var buf [40]byte // events.FormatMemoryTime without its string
			t := time.UnixMicro(v.micros[j]).UTC().AppendFormat(buf[:0], events.MemoryTimeLayout)
			str[i] = span{uint32(sb.Len()), uint32(len(t))}
			sb.Write(t)
		}
	}
	all := sb.String()
	s := func(i int) string {
		sp := str[i]
		return all[sp.off : sp.off+sp.n]
	}
	id := all[len(v.raw) : len(v.raw)+len(v.id)]
	digest := all[len(v.raw)+len(v.id) : len(v.raw)+len(v.id)+len(v.digest)]
	c := cold{
		MemoryCaptured: events.MemoryCaptured{
			MemoryID: id, BodySHA256: digest, CreatedAt: s(cCreatedAt), UpdatedAt: s(cUpdatedAt),
			Project: s(cProject), AgentProfile: s(cAgentProfile), WorkflowID: s(cWorkflowID), SessionID: s(cSessionID),
			OperationID: s(cOperationID), Scope: s(cScope), Ring: s(cRing), EventType: s(cEventType),
			SourceType: s(cSourceType), Salience: v.sal, Confidence: v.conf, Sensitivity: s(cSensitivity),
			Retention: s(cRetention), ExpiresAt: s(cExpiresAt), NeedsReview: v.flags&coldNeedsReview != 0,
			ReviewedAt: s(cReviewedAt), Redacted: v.flags&coldRedacted != 0, Origin: s(cOrigin),
		},
		SupersededBy: s(cSupersededBy), Claim: s(cClaim),
	}
	if v.nSup > 0 {
		c.Supersedes = make([]string, v.nSup)
		off := int(v.sup)
		for i := range c.Supersedes {
			n, w := binary.Uvarint(v.raw[off:]) // checked by parseCold
			c.Supersedes[i] = all[off+w : off+w+int(n)]
			off += w + int(n)
		}
	}
	return c
}
