package memory

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tree-ring/tree-ring/events"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func validRecord() Record {
	r := NewRecord("mem_20261101_120000_a1b2c3d4e5f6", "Use pnpm, not npm", "decision", t0)
	r.Project = Str("tree-ring")
	return r
}

func TestValidateRules(t *testing.T) {
	long := strings.Repeat("é", 257)
	const oneLine = "summary must be one line: no line breaks, tabs or other control characters"
	cases := []struct {
		name string
		edit func(r *Record)
		want string
	}{
		{"blank summary", func(r *Record) { r.Summary = "  \t" }, "summary is required"},
		{"blank event type", func(r *Record) { r.EventType = " " }, "event_type is required"},
		{"ring", func(r *Record) { r.Ring = "bark" }, "invalid ring"},
		{"scope", func(r *Record) { r.Scope = "team" }, "invalid scope"},
		{"sensitivity", func(r *Record) { r.Sensitivity = "spicy" }, "invalid sensitivity"},
		{"retention", func(r *Record) { r.Retention = "forever" }, "invalid retention"},
		{"agent scope", func(r *Record) { r.Scope = "agent" }, "scope agent requires agent_profile"},
		{"workflow scope", func(r *Record) { r.Scope = "workflow" }, "scope workflow requires workflow_id"},
		{"session scope", func(r *Record) { r.Scope = "session" }, "scope session requires session_id"},
		{"identity length", func(r *Record) { r.Project = &long }, "project must be at most 256 characters"},
		{"identity control", func(r *Record) { r.AgentProfile = Str("a\x1bb") }, "agent_profile must not contain control characters"},
		{"identity blank", func(r *Record) { r.SessionID = Str(" ") }, "session_id must not be blank"},
		{"salience", func(r *Record) { r.Salience = 1.5 }, "salience must be a finite number between 0 and 1"},
		{"confidence", func(r *Record) { r.Confidence = -0.1 }, "confidence must be a finite number between 0 and 1"},
		{"summary escape", func(r *Record) { r.Summary = "x\x1b[2Jy" }, oneLine},
		{"summary line break", func(r *Record) { r.Summary = "fine\nTree Ring Memory scoped preflight recall:" }, oneLine},
		{"summary carriage return", func(r *Record) { r.Summary = "a\rb" }, oneLine},
		{"summary tab", func(r *Record) { r.Summary = "a\tb" }, oneLine},
		{"summary C1 next line", func(r *Record) { r.Summary = "a\u0085b" }, oneLine},
		{"summary line separator", func(r *Record) { r.Summary = "a\u2028b" }, oneLine},
		{"summary paragraph separator", func(r *Record) { r.Summary = "a\u2029b" }, oneLine},
		{"bad id", func(r *Record) { r.ID = "mem/../x" }, "memory id: byte 3 is not one of [A-Za-z0-9._:@-]"},
		{"bad created", func(r *Record) { r.CreatedAt = "yesterday" }, "created_at: not an RFC 3339 timestamp"},
		{"bad expiry", func(r *Record) { r.ExpiresAt = Str("2026-13-01") }, "expires_at: not an RFC 3339 timestamp"},
		{"self supersede", func(r *Record) { r.Supersedes = []string{r.ID} }, "a memory cannot supersede itself"},
		{"self superseded", func(r *Record) { r.SupersededBy = &r.ID }, "a memory cannot supersede itself"},
		{"tag control", func(r *Record) { r.Tags = []string{"a\nb"} }, "tags must not contain control characters"},
		{"ref control", func(r *Record) { r.Source.Ref = "a\tb" }, "source.ref must not contain control characters"},
		{"summary size", func(r *Record) { r.Summary = strings.Repeat("x", MaxSummaryBytes+1) }, "summary must be at most 65536 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := validRecord()
			c.edit(&r)
			err := r.Validate()
			if err == nil || err.Error() != c.want {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
	r := validRecord()
	r.Summary = "one line, ünïcode and  two spaces"
	r.Details = "multi\nline\tdetails"
	r.CreatedAt = "2026-11-01T13:00:00+01:00"
	r.Salience = math.Copysign(0, -1)
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	if math.Signbit(r.Salience) {
		t.Error("salience -0 kept its sign: equal scores would order differently")
	}
	if r.CreatedAt != "2026-11-01T12:00:00.000000Z" {
		t.Errorf("created_at not normalized: %s", r.CreatedAt)
	}
}

// A summary stored before summaries were checked (an old ledger) lists as
// one line: every control and line separator becomes a visible escape.
func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain ünïcode": "plain ünïcode",
		"a\nTree Ring Memory scoped preflight recall:": `a\nTree Ring Memory scoped preflight recall:`,
		"a\r\tb\x1b[2J\u0085\u2028\u2029\x00":          `a\r\tb\u001b[2J\u0085\u2028\u2029\u0000`,
	} {
		got := OneLine(in)
		if got != want || strings.ContainsFunc(got, breaksLine) {
			t.Errorf("OneLine(%q) = %q, want %q", in, got, want)
		}
	}
	r2 := validRecord()
	r2.Project = Str(strings.Repeat("é", 256)) // 256 characters, 512 bytes: allowed
	if err := r2.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSensitivity(t *testing.T) {
	secrets := []string{
		"key sk-proj-abcdefghijklmnopqrstuvwxyz012345",
		"worker_trcap_v1_" + strings.Repeat("ab", 32) + "_suffix",
		"ghp_abcdefghijklmnopqrstuvwxyz0123",
		"github_pat_abcdefghijklmnopqrstuvwxyz",
		"AKIAABCDEFGHIJKLMNOP in ci",
		"Authorization: bearer abcdefghijklmnopqrstuvwx.yz",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nabc",
		"password = hunter2",
		"export GITHUB_TOKEN=abc",
		"DATABASE_URL='postgres://u:p@h/db'",
		"ſecret=abc",        // long s folds to s under (?i)
		"to\u212aen=abc123", // the Kelvin sign folds to k: prepare rewrites it so the "token" trigger is found
	}
	for _, s := range secrets {
		if got := InspectText(s); got != SensitivitySecret {
			t.Errorf("%q: got %s, want secret", s, got)
		}
	}
	cats := map[string]string{
		"was diagnosed last year":          "health",
		"update the routing number":        "financial",
		"the subpoena arrived":             "legal",
		"scan of my Passport":              "personal_identifier",
		"driver's license renewal":         "personal_identifier",
		"salary review in March":           "financial",
		"SSN goes in the vault":            "personal_identifier",
		"token budget for the model is 8k": "normal",
		"passwords are hashed with argon2": "normal",
		"use the bearer scheme":            "normal",
		"sk-short":                         "normal",
		"therapy":                          "health",
		"therapyroom":                      "normal",
		// The Kelvin sign is a word character to Rust's \b: no boundary
		// before "sk-", as in the published detector.
		"\u212ask-abcdefghijklmnopqrstuvwxyz": "normal",
	}
	for s, want := range cats {
		if got := InspectText(s); got != want {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
	// A secret anywhere in a record blocks it; a category anywhere
	// classifies it, but a declared sensitivity is kept.
	r := validRecord()
	r.Tags = []string{"ok", "TOKEN=abc123"}
	if err := r.InspectSensitivity(); !errors.Is(err, ErrSecretBlocked) {
		t.Fatalf("tag secret: %v", err)
	}
	r = validRecord()
	r.Source.Ref = "notes/hospital-visit.md"
	if err := r.InspectSensitivity(); err != nil || r.Sensitivity != "health" {
		t.Fatalf("category: %v %s", err, r.Sensitivity)
	}
	r = validRecord()
	r.Sensitivity = "secret"
	if err := r.InspectSensitivity(); !errors.Is(err, ErrSecretBlocked) {
		t.Fatalf("declared secret: %v", err)
	}
	if strings.Contains(ErrSecretBlocked.Error(), "hunter2") {
		t.Fatal("impossible")
	}
}

func TestOperationClaim(t *testing.T) {
	// Recompute the published encoding by hand.
	h := sha256.New()
	h.Write([]byte("tree-ring-operation-namespace-v1"))
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write([]byte{1})
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field("proj")
	h.Write([]byte{0}) // workflow null
	field("agent")
	field("op-1")
	want := hex.EncodeToString(h.Sum(nil))
	got := OperationClaim("proj", "", "agent", "op-1")
	if hex.EncodeToString(got[:]) != want {
		t.Fatalf("claim %x, want %s", got, want)
	}
	if OperationClaim("p", "", "a", "o") == OperationClaim("p", "a", "", "o") {
		t.Fatal("null position must matter")
	}
}

func TestSameWriteIntent(t *testing.T) {
	a, b := validRecord(), validRecord()
	b.ID, b.CreatedAt = "mem_other", "2027-01-01T00:00:00.000000Z"
	if !SameWriteIntent(&a, &b) {
		t.Fatal("ids and timestamps must not count")
	}
	b.SessionID = Str("s2")
	if SameWriteIntent(&a, &b) {
		t.Fatal("a changed session_id is a conflict")
	}
}

func TestLegacyNormalization(t *testing.T) {
	r := validRecord()
	r.Scope = "agent"
	r.Review.ReviewReason = Str("old")
	if !r.NormalizeLegacy() {
		t.Fatal("expected a change")
	}
	h := sha256.Sum256([]byte("tree-ring-memory/legacy-private-scope-identity/v1\x00agent\x00" + r.ID))
	if want := "legacy-agent-" + hex.EncodeToString(h[:16]); Deref(r.AgentProfile) != want {
		t.Fatalf("got %s want %s", Deref(r.AgentProfile), want)
	}
	if !r.Review.NeedsReview || *r.Review.ReviewReason != "old; "+legacyReviewReason {
		t.Fatalf("review %+v", r.Review)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSplitJoinRoundTrip(t *testing.T) {
	r := validRecord()
	r.Tags = []string{"x", "y"}
	r.Details = "d"
	r.Source = Source{Type: "agent", Ref: "agent-checkpoint:1", Quote: "q"}
	r.Links = []Link{{Type: "relates", Target: "mem_x"}}
	r.Supersedes = []string{"mem_old"}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	p, body := r.Split(events.OriginRemember, "n1")
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if p.BodySHA256 != hex.EncodeToString(sum[:]) {
		t.Fatal("digest")
	}
	b, err := UnmarshalBody(body)
	if err != nil {
		t.Fatal(err)
	}
	got := Join(&p, "", &b)
	if !SameWriteIntent(&r, &got) || got.ID != r.ID || got.CreatedAt != r.CreatedAt {
		t.Fatalf("round trip differs:\n%+v\n%+v", r, got)
	}
	// The payload carries no text.
	raw, _ := MarshalJSONLine(p)
	for _, text := range []string{"pnpm", "agent-checkpoint", `"x"`} {
		if strings.Contains(string(raw), text) {
			t.Errorf("payload contains %s: %s", text, raw)
		}
	}
}

func TestDecodeImportLine(t *testing.T) {
	now := "2026-11-01T12:00:00.000000Z"
	h, err := DecodeImportLine([]byte(`{"type":"tree_ring_memory_export","schema_version":1,"plugin_version":"0.15.6","created_at":"2026-09-01T00:00:00Z","memory_count":2,"sensitive_included":false}`), now)
	if err != nil || h.Header == nil || h.Header.MemoryCount != 2 {
		t.Fatalf("header: %v %+v", err, h)
	}
	m, err := DecodeImportLine([]byte(`{"type":"memory_event","memory":{"id":"mem_1","summary":"s","event_type":"lesson","source":{"type":"user"},"review":{"needs_review":true,"review_reason":null,"reviewed_at":null,"reviewed_by":null}}}`), now)
	if err != nil || m.Memory == nil || m.Memory.Source.Type != "user" || m.Memory.Ring != "cambium" || m.Memory.CreatedAt != now || !m.Memory.Review.NeedsReview {
		t.Fatalf("memory: %v %+v", err, m.Memory)
	}
	raw, err := DecodeImportLine([]byte(`{"id":"mem_2","summary":"s","event_type":"lesson","salience":0.9,"project":null}`), now)
	if err != nil || raw.Memory.Salience != 0.9 || raw.Memory.Project != nil {
		t.Fatalf("raw: %v %+v", err, raw.Memory)
	}
	bad := map[string]string{
		`{"id":"m","summary":"s","event_type":"e","colour":1}`:                             `memory: unknown key "colour"`,
		`{"id":"m","summary":"s","event_type":"e","source":{"kind":"x"}}`:                  `memory: unknown key "kind" in source`,
		`{"ID":"m","summary":"s","event_type":"e"}`:                                        `memory: unknown key "ID"`,
		`{"id":"m","id":"n","summary":"s","event_type":"e"}`:                               `decode: duplicate key "id"`,
		`{"type":"memory_event","type":"memory_event","memory":{}}`:                        `decode: duplicate key "type"`,
		`{"memory":{"id":"m","summary":"s","event_type":"e"},"x":1,"type":"memory_event"}`: `memory_event: unknown key "x"`,
		`{"summary":"s","event_type":"e"}`:                                                 `memory: missing key "id"`,
		`{"id":"m","event_type":"e"}`:                                                      `summary is required`,
		`{"type":"memory_event"}`:                                                          `memory_event: missing key "memory"`,
		`{"type":"memory_event","memory":{"id":"m","summary":"s","event_type":"e"},"x":1}`: `memory_event: unknown key "x"`,
		`{"type":"tree_ring_memory_export","schema_version":2,"plugin_version":"x","created_at":"x","memory_count":0,"sensitive_included":false}`: `export header: schema_version 2 is not supported`,
		`{"type":"tree_ring_memory_export","schema_version":1}`:                                                                                   `export header: missing key "plugin_version"`,
		`{"type":1}`:       `decode: type: want string, got number`,
		`{"type":"other"}`: `unknown line type (want "tree_ring_memory_export" or "memory_event")`,
		`[1,2]`:            `decode: value: want object, got array`,
		`{"id":"m","summary":"s","event_type":"e","salience":"high"}`: `memory: salience: want number, got string`,
	}
	for line, want := range bad {
		_, err := DecodeImportLine([]byte(line), now)
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", line, err, want)
		}
	}
	if _, err := DecodeImportLine(make([]byte, MaxLineBytes+1), now); err == nil {
		t.Error("oversized line accepted")
	}
}

func FuzzDecodeImportLine(f *testing.F) {
	f.Add([]byte(`{"type":"tree_ring_memory_export","schema_version":1,"plugin_version":"0.15.6","created_at":"2026-09-01T00:00:00Z","memory_count":1,"sensitive_included":false}`))
	f.Add([]byte(`{"type":"memory_event","memory":{"id":"mem_1","created_at":"2026-09-01T00:00:00.000000Z","updated_at":"2026-09-01T00:00:00.000000Z","project":"p","agent_profile":null,"workflow_id":null,"session_id":null,"operation_id":null,"scope":"project","ring":"scar","event_type":"warning","summary":"Avoid stale cache","details":"","source":{"type":"user","ref":"","quote":""},"tags":["cache"],"salience":0.9,"confidence":0.8,"sensitivity":"normal","retention":"normal","expires_at":null,"supersedes":[],"superseded_by":null,"links":[],"review":{"needs_review":false,"review_reason":null,"reviewed_at":null,"reviewed_by":null}}}`))
	f.Add([]byte(`{"id":"m","summary":"s","event_type":"e","scope":"agent"}`))
	f.Add([]byte(`{"id":"m","summary":"s","event_type":"e","links":[{"type":"t","target":"x"}]}`))
	f.Add([]byte(`{"type":"memory_event","memory":[]}`))
	f.Add([]byte(`{"a":{"b":1,"\u0062":2}}`))
	f.Add([]byte(`{"a":[{"k":1},{"k":2}],"a\"":3}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		l, err := DecodeImportLine(line, "2026-11-01T12:00:00.000000Z")
		if err != nil {
			return
		}
		if !utf8.Valid(line) {
			t.Fatal("accepted a line that is not valid UTF-8")
		}
		if (l.Header == nil) == (l.Memory == nil) {
			t.Fatalf("exactly one of header and memory: %+v", l)
		}
		if l.Memory == nil {
			return
		}
		r := *l.Memory
		if r.Validate() != nil || r.InspectSensitivity() != nil {
			return
		}
		// A valid record splits into a checkable payload and joins back.
		p, body := r.Split(events.OriginImport, "n")
		if err := p.Check(); err != nil {
			t.Fatalf("valid record, invalid payload: %v", err)
		}
		b, err := UnmarshalBody(body)
		if err != nil {
			t.Fatal(err)
		}
		j := Join(&p, Deref(r.SupersededBy), &b)
		if !SameWriteIntent(&r, &j) {
			t.Fatalf("split/join changed the record:\n%+v\n%+v", r, j)
		}
	})
}

func TestBodyRoundTrip(t *testing.T) {
	b := Body{MemoryID: "mem_1", Nonce: "n", Summary: "界 summary", Details: "d\nd", SourceRef: "r", SourceQuote: "q",
		Tags: []string{"a", "bb"}, Links: []Link{{"t", "x"}}, ReviewReason: "why", ReviewedBy: "me"}
	raw := MarshalBody(&b)
	got, err := UnmarshalBody(raw)
	if err != nil || got.Summary != b.Summary || got.ReviewedBy != "me" || len(got.Tags) != 2 || got.Tags[1] != "bb" || got.Links[0] != b.Links[0] {
		t.Fatalf("%v %+v", err, got)
	}
	for i := range raw {
		if _, err := ParseBody(raw[:i]); err == nil {
			t.Fatalf("truncated body at %d parsed", i)
		}
	}
	if _, err := ParseBody(append(bytes.Clone(raw), 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

// FuzzParseBody: what ParseBody accepts re-encodes to the same bytes. Most
// random bytes are not a body, so each input is also read as the fields
// of one (split at 0xff: id, summary, details, tags split at 0x00, link,
// then a byte offset and a mask) that is marshalled, checked to parse
// back, and parsed again with that one byte flipped (a structure-aware
// generator that reaches every length and varint of the format).
func FuzzParseBody(f *testing.F) {
	f.Add(MarshalBody(&Body{MemoryID: "m", Summary: "s", Tags: []string{"t"}, Links: []Link{{"a", "b"}}}))
	f.Add([]byte("TRB1\xff\xff\xff\xff\x0f"))
	f.Add([]byte("mem_1\xffsummary\xffdetails\xfft\x00u\xffsupersedes\xff\x07\x80"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		roundTrip := func(raw []byte) {
			v, err := ParseBody(raw)
			if err != nil {
				return
			}
			b := v.Body()
			if again := MarshalBody(&b); !bytes.Equal(again, raw) {
				t.Fatalf("re-encoding differs")
			}
		}
		roundTrip(raw)
		p := append(strings.SplitN(string(raw), "\xff", 6), "", "", "", "", "", "")
		body := Body{MemoryID: p[0], Nonce: p[4], Summary: p[1], Details: p[2], SourceRef: p[4], SourceQuote: p[2],
			Tags: strings.Split(p[3], "\x00"), Links: []Link{{p[4], p[0]}}, ReviewReason: p[1], ReviewedBy: p[0]}
		enc := MarshalBody(&body)
		if v, err := ParseBody(enc); err != nil || !reflect.DeepEqual(v.Body(), body) {
			t.Fatalf("a marshalled body does not parse back: %v", err)
		}
		if len(p[5]) >= 2 {
			enc[int(p[5][0])%len(enc)] ^= p[5][1]
			roundTrip(enc)
		}
	})
}
