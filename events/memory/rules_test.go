package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
)

// fakeIndex is a ledger as the write rules see it.
type fakeIndex struct {
	streams  map[string]bool     // ids with a stream (deleted ones too)
	memories map[string]Record   // recalled memories
	redacted map[string]bool     // tombstones
	claims   map[[32]byte]string // operation claims
}

func newFakeIndex(recs ...Record) *fakeIndex {
	x := &fakeIndex{streams: map[string]bool{}, memories: map[string]Record{}, redacted: map[string]bool{}, claims: map[[32]byte]string{}}
	for _, r := range recs {
		x.streams[r.ID] = true
		x.memories[r.ID] = r
		if c, ok := claimOf(&r); ok {
			x.claims[c] = r.ID
		}
	}
	return x
}

func (x *fakeIndex) Exists(id string) bool             { return x.streams[id] }
func (x *fakeIndex) Claimed(c [32]byte) (string, bool) { id, ok := x.claims[c]; return id, ok }
func (x *fakeIndex) Lookup(id string) (Record, bool, bool, error) {
	r, ok := x.memories[id]
	return r, x.redacted[id], ok, nil
}

// SameSummary is the duplicate index: every memory held, live or not (the
// rule must itself skip what is not active).
func (x *fakeIndex) SameSummary(key [32]byte) ([]string, error) {
	var ids []string
	for id, r := range x.memories {
		if DuplicateKeyOf(&r) == key {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

var random6 = [6]byte{0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6}

func counter() func() string {
	n := 0
	return func() string { n++; return strings.Repeat("n", n) }
}

// code returns err's diagnostic code, "" when it has none.
func code(err error) string {
	var d interface{ Diagnostic() string }
	if errors.As(err, &d) {
		return d.Diagnostic()
	}
	return ""
}

func TestRemember(t *testing.T) {
	base := RememberRequest{Summary: "Use pnpm, not npm", EventType: "decision", Ring: DefaultRing, Scope: DefaultScope,
		Salience: DefaultSalience, Confidence: DefaultConfidence}
	for _, tc := range []struct {
		name  string
		edit  func(*RememberRequest)
		check func(t *testing.T, r Record)
		err   string
		code  string
	}{
		{"defaults", func(*RememberRequest) {}, func(t *testing.T, r Record) {
			if r.ID != "mem_20261101_120000_a1b2c3d4e5f6" || r.CreatedAt != "2026-11-01T12:00:00.000000Z" || r.Source.Type != DefaultSourceType ||
				r.Project != nil || r.OperationID != nil || r.ExpiresAt != nil || len(r.Tags) != 0 || r.Tags == nil || r.Sensitivity != "normal" {
				t.Fatalf("%+v", r)
			}
		}, "", ""},
		{"flags", func(q *RememberRequest) {
			q.Project, q.AgentProfile, q.Scope, q.OperationID = "tree-ring", "coder", "agent", "op-1"
			q.SourceRef, q.Tags, q.Supersedes = "pr:12", []string{"build"}, []string{"mem_a", "mem_a", "mem_b"}
		}, func(t *testing.T, r Record) {
			if Deref(r.Project) != "tree-ring" || Deref(r.AgentProfile) != "coder" || Deref(r.OperationID) != "op-1" ||
				r.Source != (Source{Type: "agent", Ref: "pr:12"}) || !slices.Equal(r.Supersedes, []string{"mem_a", "mem_b"}) || !slices.Equal(r.Tags, []string{"build"}) {
				t.Fatalf("%+v", r)
			}
		}, "", ""},
		{"category raises sensitivity", func(q *RememberRequest) { q.Summary = "my diagnosis is diabetes" }, func(t *testing.T, r Record) {
			if r.Sensitivity != "health" {
				t.Fatalf("sensitivity %s", r.Sensitivity)
			}
		}, "", ""},
		// The guard runs before validation: a secret in an invalid record is
		// refused as a secret, and the message carries none of it.
		{"secret before validation", func(q *RememberRequest) { q.Summary = "password = hunter2"; q.Ring = "bark" }, nil,
			"secret-like memory is blocked by policy", "secret_blocked"},
		{"invalid ring", func(q *RememberRequest) { q.Ring = "bark" }, nil, "invalid ring", ""},
		{"agent scope needs a profile", func(q *RememberRequest) { q.Scope = "agent" }, nil, "scope agent requires agent_profile", ""},
		{"self supersede", func(q *RememberRequest) { q.Supersedes = []string{"mem_20261101_120000_a1b2c3d4e5f6"} }, nil, "a memory cannot supersede itself", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := base
			tc.edit(&q)
			r, err := Remember(q, t0, random6)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || code(err) != tc.code {
					t.Fatalf("err %v (code %q), want %q (%q)", err, code(err), tc.err, tc.code)
				}
				if !reflect.DeepEqual(r, Record{}) {
					t.Fatal("a refused record is returned")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, r)
		})
	}
}

func placeholders(left string) string {
	return "automatic capture: replace the placeholder " + left + " of the checkpoint line first (SUMMARY: the candidate in double quotes; " +
		"TYPE: preference, decision, lesson, warning, correction or seed; RING: cambium, scar or seed)"
}

func TestCapture(t *testing.T) {
	base := CaptureRequest{Summary: "Run make before pushing", EventType: "lesson", Ring: "cambium", Project: "tree-ring",
		AgentProfile: "coder", WorkflowID: "wf", SessionID: "s1", OperationID: "auto-cp1-2", SourceRef: "agent-checkpoint:cp1"}
	r, err := Capture(base, t0, random6)
	if err != nil {
		t.Fatal(err)
	}
	if r.Scope != "agent" || !slices.Equal(r.Tags, []string{CaptureTag}) || r.Source != (Source{Type: "agent", Ref: "agent-checkpoint:cp1"}) {
		t.Fatalf("%+v", r)
	}
	withTag := base
	withTag.Tags = []string{"x", CaptureTag}
	if r, _ := Capture(withTag, t0, random6); !slices.Equal(r.Tags, []string{"x", CaptureTag}) {
		t.Fatalf("tag added twice: %v", r.Tags)
	}
	for _, tc := range []struct {
		name string
		edit func(*CaptureRequest)
		err  string
	}{
		{"secret first", func(q *CaptureRequest) { q.Summary = "export GITHUB_TOKEN=abc"; q.Ring = "heartwood" }, "secret-like memory is blocked by policy"},
		{"sensitive", func(q *CaptureRequest) { q.Summary = "my diagnosis is diabetes" }, "automatic capture accepts only normal sensitivity"},
		{"ring", func(q *CaptureRequest) { q.Ring = "heartwood" }, "automatic capture accepts only the cambium, scar or seed ring"},
		{"event type", func(q *CaptureRequest) { q.EventType = "note" }, "automatic capture accepts only event types preference, decision, lesson, warning, correction or seed"},
		{"long summary", func(q *CaptureRequest) { q.Summary = strings.Repeat("x", 2001) }, "automatic capture takes one concise line (at most 2000 bytes, no control characters), never a transcript"},
		{"multi-line summary", func(q *CaptureRequest) { q.Summary = "a\nb" }, "automatic capture takes one concise line (at most 2000 bytes, no control characters), never a transcript"},
		{"source ref prefix", func(q *CaptureRequest) { q.SourceRef = "pr:1" }, "automatic capture needs --source-ref agent-checkpoint:<checkpoint id>"},
		{"checkpoint charset", func(q *CaptureRequest) { q.SourceRef = "agent-checkpoint:a/b" }, "automatic capture needs --source-ref agent-checkpoint:<checkpoint id>"},
		{"fourth candidate", func(q *CaptureRequest) { q.OperationID = "auto-cp1-4" }, "automatic capture needs --operation-id auto-<checkpoint id>-<1|2|3> of the same checkpoint (at most three candidates)"},
		{"other checkpoint", func(q *CaptureRequest) { q.OperationID = "auto-cp2-1" }, "automatic capture needs --operation-id auto-<checkpoint id>-<1|2|3> of the same checkpoint (at most three candidates)"},
		{"every placeholder left", func(q *CaptureRequest) { q.Summary, q.EventType, q.Ring = "SUMMARY", "TYPE", "RING" }, placeholders("SUMMARY, TYPE, RING")},
		{"summary placeholder left", func(q *CaptureRequest) { q.Summary = " SUMMARY " }, placeholders("SUMMARY")},
		{"type and ring left", func(q *CaptureRequest) { q.EventType, q.Ring = "TYPE", "RING" }, placeholders("TYPE, RING")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := base
			tc.edit(&q)
			_, err := Capture(q, t0, random6)
			if err == nil || err.Error() != tc.err {
				t.Fatalf("err %v, want %q", err, tc.err)
			}
			if c := code(err); c != "capture_refused" && c != "secret_blocked" {
				t.Fatalf("code %q", c)
			}
		})
	}
}

func TestPlanRemember(t *testing.T) {
	withOp := func(id, op, summary string) Record {
		r := validRecord()
		r.ID, r.OperationID, r.Summary = id, Str(op), summary
		return r
	}
	stored := withOp("mem_stored", "op-1", "Use pnpm, not npm")
	tomb := validRecord()
	tomb.ID = "mem_tomb"
	idx := newFakeIndex(stored, tomb)
	idx.redacted["mem_tomb"] = true
	idx.streams["mem_deleted"] = true // deleted: a stream, no memory

	t.Run("exact retry writes nothing", func(t *testing.T) {
		r := withOp("mem_new", "op-1", "Use pnpm, not npm")
		p, err := PlanRemember(idx, &r, WriteOptions{Origin: events.OriginRemember, Nonce: counter(), Now: t0})
		if err != nil || p.Existing == nil || p.Existing.ID != "mem_stored" || p.Write.Body != nil {
			t.Fatalf("%+v %v", p, err)
		}
	})
	t.Run("another intent conflicts", func(t *testing.T) {
		r := withOp("mem_new", "op-1", "Use yarn")
		_, err := PlanRemember(idx, &r, WriteOptions{Origin: events.OriginRemember, Nonce: counter(), Now: t0})
		var oc *OperationConflictError
		if !errors.As(err, &oc) || oc.OperationID != "op-1" || code(err) != "operation_conflict" ||
			err.Error() != "operation_id op-1 is already bound to a different memory write" {
			t.Fatalf("%v", err)
		}
	})
	for _, tc := range []struct {
		name string
		edit func(*Record)
		err  string
		code string
	}{
		{"id exists", func(r *Record) { r.ID = "mem_deleted" }, "memory id mem_deleted already exists", "memory_exists"},
		{"supersedes a missing memory", func(r *Record) { r.Supersedes = []string{"mem_stored", "mem_gone"} }, "--supersedes: memory mem_gone not found", "memory_not_found"},
		{"supersedes a tombstone", func(r *Record) { r.Supersedes = []string{"mem_tomb"} }, "--supersedes: memory mem_tomb not found", "memory_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := validRecord()
			tc.edit(&r)
			_, err := PlanRemember(idx, &r, WriteOptions{Origin: events.OriginRemember, Nonce: counter(), Now: t0})
			if err == nil || err.Error() != tc.err || code(err) != tc.code {
				t.Fatalf("err %v (%q), want %q (%q)", err, code(err), tc.err, tc.code)
			}
		})
	}
	t.Run("new memory", func(t *testing.T) {
		r := validRecord()
		r.Supersedes = []string{"mem_stored"}
		p, err := PlanRemember(idx, &r, WriteOptions{Origin: events.OriginCapture, Nonce: counter(), Now: t0})
		if err != nil || p.Existing != nil {
			t.Fatal(p, err)
		}
		sum := sha256.Sum256(p.Write.Body)
		if p.Write.Captured.BodySHA256 != hex.EncodeToString(sum[:]) || p.Write.Captured.Origin != events.OriginCapture || p.Write.Captured.MemoryID != r.ID {
			t.Fatalf("captured %+v", p.Write.Captured)
		}
		if b, err := UnmarshalBody(p.Write.Body); err != nil || b.Nonce != "n" || b.Summary != r.Summary {
			t.Fatalf("body %+v %v", b, err)
		}
		if !reflect.DeepEqual(p.Supersede, []events.MemorySuperseded{{MemoryID: "mem_stored", SupersededBy: r.ID}}) || p.Write.SupersededBy != nil {
			t.Fatalf("supersede %+v %+v", p.Supersede, p.Write.SupersededBy)
		}
	})
}

func TestNewWrite(t *testing.T) {
	r := validRecord()
	r.SupersededBy = Str("mem_next")
	w := NewWrite(&r, events.OriginImport, counter())
	if w.SupersededBy == nil || *w.SupersededBy != (events.MemorySuperseded{MemoryID: r.ID, SupersededBy: "mem_next"}) || w.Captured.Redacted {
		t.Fatalf("%+v", w)
	}
	// A tombstone is stored unsalted and never says it was superseded.
	tomb := validRecord()
	tomb.Summary, tomb.SupersededBy = RedactedSummary, Str("mem_next")
	w = NewWrite(&tomb, events.OriginImport, func() string { t.Fatal("nonce drawn for a tombstone"); return "" })
	if b, _ := UnmarshalBody(w.Body); b.Nonce != "" || !w.Captured.Redacted || w.SupersededBy != nil {
		t.Fatalf("%+v %+v", w, b)
	}
}

func TestImportFile(t *testing.T) {
	const now = "2026-11-01T12:00:00.000000Z"
	header := func(n int) string {
		return `{"type":"tree_ring_memory_export","schema_version":1,"plugin_version":"0.15.5","created_at":"` + now + `","memory_count":` + string(rune('0'+n)) + `,"sensitive_included":false}`
	}
	mem := func(id, summary, extra string) string {
		return `{"type":"memory_event","memory":{"id":"` + id + `","summary":"` + summary + `","event_type":"decision"` + extra + `}}`
	}
	for _, tc := range []struct {
		name  string
		lines []string
		err   string // of the failing Add, or of Records
		ids   []string
	}{
		{"export", []string{header(2), mem("m1", "a", ""), mem("m2", "b", "")}, "", []string{"m1", "m2"}},
		{"raw lines", []string{`{"id":"m1","summary":"a","event_type":"decision"}`}, "", []string{"m1"}},
		{"header not first", []string{mem("m1", "a", ""), header(1)}, "the export header must be the first line", nil},
		{"two headers", []string{header(0), header(0)}, "the export header must be the first line", nil},
		{"count mismatch", []string{header(3), mem("m1", "a", "")}, "the header says 3 memories, the file has 1", nil},
		{"secret", []string{mem("m1", "password = hunter2", "")}, "secret-like memory is blocked by policy", nil},
		{"invalid", []string{mem("m1", "a", `,"ring":"bark"`)}, "invalid ring", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f ImportFile
			var err error
			for i, l := range tc.lines {
				if err = f.Add(i+1, []byte(l), now); err != nil {
					break
				}
			}
			var recs []Record
			if err == nil {
				recs, err = f.Records()
			}
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, tc.ids) {
				t.Fatalf("ids %v, want %v", ids, tc.ids)
			}
		})
	}
	// A legacy private-scope row gets its synthesized identity.
	var f ImportFile
	if err := f.Add(1, []byte(mem("m1", "a", `,"scope":"agent"`)), now); err != nil {
		t.Fatal(err)
	}
	recs, _ := f.Records()
	if !strings.HasPrefix(Deref(recs[0].AgentProfile), "legacy-agent-") || !recs[0].Review.NeedsReview {
		t.Fatalf("%+v", recs[0])
	}

	// Every refused line is recorded with its kind, and the lines after it
	// are still read; the header's count covers the refused lines.
	f = ImportFile{}
	for i, l := range []string{header(6), mem("m1", "a", ""), mem("m2", "password = hunter2", ""), mem("m3", "a", `,"ring":"bark"`),
		`{"id":`, header(0), mem("m4", "b", "")} {
		_ = f.Add(i+1, []byte(l), now)
	}
	recs, err := f.Records()
	var got []string
	for _, r := range f.Refused() {
		got = append(got, fmt.Sprintf("%d %s %v", r.Line, r.Kind, r.Err))
	}
	want := []string{"3 secret_blocked secret-like memory is blocked by policy", "4 invalid_memory invalid ring",
		"5 unreadable_line decode: ",
		"6 misplaced_header the export header must be the first line"}
	if len(got) == len(want) && strings.HasPrefix(got[2], want[2]) {
		got[2] = want[2] // the decoder's own message follows
	}
	if err != nil || len(recs) != 2 || recs[1].ID != "m4" || !slices.Equal(got, want) {
		t.Fatalf("%v %d\n%q\nwant %q", err, len(recs), got, want)
	}
}

func TestImportPlanner(t *testing.T) {
	rec := func(id, op, summary string) *Record {
		r := validRecord()
		r.ID, r.Summary = id, summary
		if op != "" {
			r.OperationID = Str(op)
		}
		return &r
	}
	idx := newFakeIndex(*rec("mem_stored", "op-ledger", "stored"))
	idx.streams["mem_deleted"] = true
	p := NewImportPlanner()
	for _, step := range []struct {
		rec    *Record
		insert bool
		err    string
	}{
		{rec("mem_1", "", "one"), true, ""},
		{rec("mem_1", "", "one again"), false, ""},                  // duplicate id in the file
		{rec("mem_stored", "", "x"), false, ""},                     // in the ledger
		{rec("mem_deleted", "", "x"), false, ""},                    // forgotten: never resurrected
		{rec("mem_2", "op-a", "two"), true, ""},                     // claims op-a
		{rec("mem_3", "op-a", "two"), false, ""},                    // same intent in the file: a retry
		{rec("mem_4", "op-a", "other"), false, "operation_id op-a"}, // other intent in the file
		{rec("mem_5", "op-ledger", "stored"), false, ""},            // same intent as the ledger
		{rec("mem_6", "op-ledger", "other"), false, "operation_id op-ledger"},
	} {
		ok, err := p.Decide(idx, step.rec)
		if step.err != "" {
			if !strings.HasPrefix(errString(err), step.err) || code(err) != "operation_conflict" {
				t.Fatalf("%s: err %v, want %q", step.rec.ID, err, step.err)
			}
			continue
		}
		if err != nil || ok != step.insert {
			t.Fatalf("%s: %v %v, want %v", step.rec.ID, ok, err, step.insert)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestImportSupersessions(t *testing.T) {
	old := validRecord()
	old.ID = "mem_old"
	marked := validRecord()
	marked.ID, marked.SupersededBy = "mem_marked", Str("mem_b")
	tomb := validRecord()
	tomb.ID = "mem_tomb"
	idx := newFakeIndex(old, marked, tomb)
	idx.redacted["mem_tomb"] = true
	a, b := validRecord(), validRecord()
	a.ID, a.Supersedes = "mem_a", []string{"mem_old", "mem_old", "mem_missing", "mem_tomb", "mem_marked"}
	b.ID, b.Supersedes = "mem_b", []string{"mem_old", "mem_marked"}
	got, err := ImportSupersessions(idx, []*Record{&a, &b})
	if err != nil {
		t.Fatal(err)
	}
	want := []events.MemorySuperseded{
		{MemoryID: "mem_old", SupersededBy: "mem_a"},    // once, although listed twice
		{MemoryID: "mem_marked", SupersededBy: "mem_a"}, // marked by another row before
		{MemoryID: "mem_old", SupersededBy: "mem_b"},    // a later row marks it again
		{MemoryID: "mem_marked", SupersededBy: "mem_b"}, // no longer by mem_b after mem_a's event
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if got, _ := ImportSupersessions(idx, []*Record{&b}); len(got) != 1 || got[0].MemoryID != "mem_old" {
		t.Fatalf("a target already marked by this row is marked again: %+v", got)
	}
}

func TestPlanForget(t *testing.T) {
	reason := "obsolete: café"
	sum := sha256.Sum256([]byte(reason))
	tombSum := sha256.Sum256(RedactedBody("mem_1"))
	for _, tc := range []struct {
		name   string
		mode   string
		target ForgetTarget
		want   Forget
		err    string
		code   string
	}{
		{"delete", events.ForgetDelete, ForgetTarget{Found: true, Streamed: true},
			Forget{Event: events.MemoryForgotten{MemoryID: "mem_1", Mode: "delete", ReasonSHA256: hex.EncodeToString(sum[:]), ReasonChars: 14}}, "", ""},
		{"delete a tombstone", events.ForgetDelete, ForgetTarget{Found: true, Streamed: true, Redacted: true},
			Forget{Event: events.MemoryForgotten{MemoryID: "mem_1", Mode: "delete", ReasonSHA256: hex.EncodeToString(sum[:]), ReasonChars: 14}}, "", ""},
		{"redact", events.ForgetRedact, ForgetTarget{Found: true, Streamed: true},
			Forget{RedactedBody: RedactedBody("mem_1"), Event: events.MemoryForgotten{MemoryID: "mem_1", Mode: "redact", ReasonSHA256: hex.EncodeToString(sum[:]), ReasonChars: 14, RedactedSHA256: hex.EncodeToString(tombSum[:])}}, "", ""},
		{"redact a tombstone", events.ForgetRedact, ForgetTarget{Found: true, Streamed: true, Redacted: true}, Forget{}, "memory mem_1 is already redacted", "memory_redacted"},
		{"deleted", events.ForgetRedact, ForgetTarget{Streamed: true}, Forget{}, "memory mem_1 was already deleted", "memory_deleted"},
		{"never captured", events.ForgetDelete, ForgetTarget{}, Forget{}, "memory mem_1 not found", "memory_not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PlanForget("mem_1", tc.mode, reason, tc.target)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || code(err) != tc.code {
					t.Fatalf("err %v (%q), want %q (%q)", err, code(err), tc.err, tc.code)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v %v\nwant %+v", got, err, tc.want)
			}
			if err := got.Event.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestExportRules(t *testing.T) {
	for _, tc := range []struct {
		sensitivity                    string
		superseded, inclSens, inclSupd bool
		want                           bool
	}{
		{"normal", false, false, false, true},
		{"normal", true, false, false, false},
		{"normal", true, false, true, true},
		{"private", false, false, false, false},
		{"private", false, true, false, true},
		{"private", true, true, false, false},
		{"private", true, true, true, true},
	} {
		r := Record{Sensitivity: tc.sensitivity}
		if got := Exported(&r, tc.superseded, tc.inclSens, tc.inclSupd); got != tc.want {
			t.Errorf("%+v: %v", tc, got)
		}
	}
	recs := []Record{{ID: "b", CreatedAt: "2"}, {ID: "c", CreatedAt: "1"}, {ID: "a", CreatedAt: "2"}}
	SortForExport(recs)
	if recs[0].ID != "c" || recs[1].ID != "a" || recs[2].ID != "b" {
		t.Fatalf("%+v", recs)
	}
	h := NewExportHeader("0.2.0", t0, 3, true)
	if h != (ExportHeader{Type: ExportHeaderType, SchemaVersion: 1, PluginVersion: "0.2.0", CreatedAt: "2026-11-01T12:00:00.000000Z", MemoryCount: 3, SensitiveIncluded: true}) {
		t.Fatalf("%+v", h)
	}
}
