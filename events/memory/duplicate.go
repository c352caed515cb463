package memory

import (
	"crypto/sha256"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tree-ring/tree-ring/events"
)

// De-duplication: a remember or capture whose summary equals, once
// normalized, the summary of an active memory in the same scope returns
// that memory instead of writing a new one (docs/memory.md).

// NormalizeSummary returns the form in which two summaries are compared:
// runs of Unicode white space become one space, leading and trailing ones
// go, and every rune is replaced by one canonical member of its Unicode
// simple case-folding orbit (so "Run  make", "run make" and "RUN MAKE" are
// one summary, and so are K, k and the Kelvin sign). No normalization form
// is applied: a precomposed and a decomposed accent differ. Linear in s.
func NormalizeSummary(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// foldRune returns the lowercase form of the smallest rune of r's simple
// folding orbit: the same rune for every member of the orbit.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return unicode.ToLower(least)
}

// scopeOwner is the identity that makes a memory of scope visible (the
// protocol's scope table): the agent profile, workflow or session of a
// private scope, none for a shared one.
func scopeOwner(scope, agent, workflow, session string) string {
	switch scope {
	case "agent":
		return agent
	case "workflow":
		return workflow
	case "session":
		return session
	}
	return ""
}

// duplicateDomain separates duplicate keys from every other digest.
const duplicateDomain = "tree-ring.memory-duplicate.v1\x00"

// DuplicateKey is the key under which memories count as duplicates: the
// project, the scope, the scope's owner and the normalized summary. The
// dedupe projection indexes live memories by it; it is a digest, so the
// index holds no text (and it goes with the memory when it is forgotten).
func DuplicateKey(project, scope, agent, workflow, session, summary string) [32]byte {
	h := sha256.New()
	h.Write([]byte(duplicateDomain))
	for _, p := range []string{project, scope, scopeOwner(scope, agent, workflow, session), NormalizeSummary(summary)} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// DuplicateKeyOf is rec's DuplicateKey.
func DuplicateKeyOf(rec *Record) [32]byte {
	return DuplicateKey(Deref(rec.Project), rec.Scope, Deref(rec.AgentProfile), Deref(rec.WorkflowID), Deref(rec.SessionID), rec.Summary)
}

// Active reports whether rec counts for de-duplication at now: recalled
// (not superseded, not a redaction tombstone) and not expired.
func Active(rec *Record, redacted bool, now time.Time) bool {
	if redacted || rec.SupersededBy != nil {
		return false
	}
	if rec.ExpiresAt != nil {
		if t, err := events.ParseMemoryTime(*rec.ExpiresAt); err == nil && !t.After(now) {
			return false
		}
	}
	return true
}

// Duplicate returns the oldest active memory that rec duplicates: same
// project, scope and scope owner, and an equal normalized summary. A
// record that supersedes memories is never a duplicate: it states a
// deliberate change, which returning another memory would drop.
func Duplicate(idx Index, rec *Record, now time.Time) (Record, bool, error) {
	if len(rec.Supersedes) > 0 {
		return Record{}, false, nil
	}
	key := DuplicateKeyOf(rec)
	ids, err := idx.SameSummary(key)
	if err != nil {
		return Record{}, false, err
	}
	want := NormalizeSummary(rec.Summary)
	for _, id := range ids {
		if id == rec.ID {
			continue
		}
		cur, redacted, found, err := idx.Lookup(id)
		if err != nil {
			return Record{}, false, err
		}
		// The key is a digest: compare what it stands for.
		if found && Active(&cur, redacted, now) && DuplicateKeyOf(&cur) == key && NormalizeSummary(cur.Summary) == want {
			return cur, true, nil
		}
	}
	return Record{}, false, nil
}

// DuplicateGroups collects the active memories that share a duplicate key,
// for a report of existing duplicates (memories stored before
// de-duplication, or with --allow-duplicate). Not safe for concurrent use.
type DuplicateGroups struct {
	now   time.Time
	byKey map[[32]byte][]Record
	keys  [][32]byte // first-seen order
}

// NewDuplicateGroups returns an empty collection judging expiry at now.
func NewDuplicateGroups(now time.Time) *DuplicateGroups {
	return &DuplicateGroups{now: now, byKey: map[[32]byte][]Record{}}
}

// Add considers one stored memory.
func (d *DuplicateGroups) Add(rec *Record, redacted bool) {
	if !Active(rec, redacted, d.now) {
		return
	}
	k := DuplicateKeyOf(rec)
	if _, seen := d.byKey[k]; !seen {
		d.keys = append(d.keys, k)
	}
	d.byKey[k] = append(d.byKey[k], *rec)
}

// Groups returns each key's memories, oldest first (created_at, then id),
// for the keys holding more than one, ordered by their oldest memory.
func (d *DuplicateGroups) Groups() [][]Record {
	var out [][]Record
	for _, k := range d.keys {
		if g := d.byKey[k]; len(g) > 1 {
			SortForExport(g)
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b []Record) int {
		if c := strings.Compare(a[0].CreatedAt, b[0].CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a[0].ID, b[0].ID)
	})
	return out
}
