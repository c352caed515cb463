package memory

import (
	"testing"

	"github.com/tree-ring/tree-ring/events"
)

func TestNormalizeSummary(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"Run make before pushing", "run make before pushing"},
		{"  Run\tmake\n before  pushing ", "RUN MAKE BEFORE PUSHING"},
		{"no-break\u00a0space", "no-break space"},
		{"ideographic\u3000space", "ideographic space"},
		{"Kelvin \u212a", "kelvin k"},
		{"long \u017f", "long S"},
		{"ΣΊΣΥΦΟΣ", "σίσυφος"},
		{"final ς", "final Σ"},
		{"ÉCOLE", "école"},
	} {
		if x, y := NormalizeSummary(tc.a), NormalizeSummary(tc.b); x != y {
			t.Errorf("%q -> %q, %q -> %q: want equal", tc.a, x, tc.b, y)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"run make", "run-make"},
		{"runmake", "run make"},
		{"e\u0301cole", "école"}, // no normalization form: decomposed differs
		{"use pnpm.", "use pnpm"},
	} {
		if NormalizeSummary(tc.a) == NormalizeSummary(tc.b) {
			t.Errorf("%q and %q normalize equal", tc.a, tc.b)
		}
	}
	if got := NormalizeSummary(" \t A  B \n"); got != "a b" {
		t.Fatalf("got %q", got)
	}
}

func TestDuplicateKeyScope(t *testing.T) {
	base := DuplicateKey("p", "agent", "coder", "wf", "s1", "Run make")
	for _, tc := range []struct {
		name string
		key  [32]byte
		same bool
	}{
		{"case and space", DuplicateKey("p", "agent", "coder", "wf", "s1", " run  MAKE"), true},
		{"other workflow and session: agent scope keeps them as provenance", DuplicateKey("p", "agent", "coder", "wf2", "s2", "Run make"), true},
		{"other agent", DuplicateKey("p", "agent", "reviewer", "wf", "s1", "Run make"), false},
		{"other project", DuplicateKey("q", "agent", "coder", "wf", "s1", "Run make"), false},
		{"other scope", DuplicateKey("p", "project", "coder", "wf", "s1", "Run make"), false},
	} {
		if (tc.key == base) != tc.same {
			t.Errorf("%s: same=%v", tc.name, tc.key == base)
		}
	}
	if DuplicateKey("p", "project", "a", "w", "s", "x") != DuplicateKey("p", "project", "b", "v", "t", "x") {
		t.Error("a shared scope's identities are provenance, not part of the key")
	}
	if DuplicateKey("p", "session", "a", "w", "s", "x") == DuplicateKey("p", "session", "a", "w", "t", "x") {
		t.Error("session scope is owned by its session")
	}
}

func TestPlanRememberDuplicate(t *testing.T) {
	mk := func(id, summary string) Record {
		r := validRecord()
		r.ID, r.Summary, r.Scope, r.AgentProfile = id, summary, "agent", Str("coder")
		return r
	}
	active := mk("mem_20261101_110000_000000000001", "Run make before pushing")
	superseded := mk("mem_20261101_100000_000000000002", "Prefer tabs")
	superseded.SupersededBy = Str("mem_x")
	expired := mk("mem_20261101_100000_000000000003", "Cache is warm")
	expired.ExpiresAt = Str("2026-11-01T11:59:59.000000Z")
	tomb := mk("mem_20261101_100000_000000000004", "Old secret place")
	idx := newFakeIndex(active, superseded, expired, tomb)
	idx.redacted[tomb.ID] = true

	for _, tc := range []struct {
		name    string
		edit    func(*Record)
		opts    func(*WriteOptions)
		dupOf   string // "" = a new memory is written
		retryOf string
	}{
		{"same words, case and space", func(r *Record) { r.Summary = "  run MAKE before\tpushing " }, nil, active.ID, ""},
		{"another session of the same agent", func(r *Record) { r.Summary = active.Summary; r.SessionID = Str("s9") }, nil, active.ID, ""},
		{"--allow-duplicate", func(r *Record) { r.Summary = active.Summary }, func(o *WriteOptions) { o.AllowDuplicate = true }, "", ""},
		{"another agent", func(r *Record) { r.Summary = active.Summary; r.AgentProfile = Str("reviewer") }, nil, "", ""},
		{"another scope", func(r *Record) { r.Summary = active.Summary; r.Scope = "project" }, nil, "", ""},
		{"other words", func(r *Record) { r.Summary = "Run make after pushing" }, nil, "", ""},
		{"superseded is not active", func(r *Record) { r.Summary = superseded.Summary }, nil, "", ""},
		{"expired is not active", func(r *Record) { r.Summary = expired.Summary }, nil, "", ""},
		{"a tombstone is not active", func(r *Record) { r.Summary = tomb.Summary }, nil, "", ""},
		{"replacing it by the same words", func(r *Record) { r.Summary = active.Summary; r.Supersedes = []string{active.ID} }, nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mk("mem_20261101_120000_a1b2c3d4e5f6", "")
			tc.edit(&r)
			o := WriteOptions{Origin: events.OriginCapture, Nonce: counter(), Now: t0}
			if tc.opts != nil {
				tc.opts(&o)
			}
			p, err := PlanRemember(idx, &r, o)
			if err != nil {
				t.Fatal(err)
			}
			if tc.dupOf == "" {
				if p.Existing != nil || p.Duplicate || p.Write.Body == nil {
					t.Fatalf("want a new memory, got %+v", p)
				}
				return
			}
			if p.Existing == nil || !p.Duplicate || p.Existing.ID != tc.dupOf || p.Write.Body != nil || p.Supersede != nil {
				t.Fatalf("want duplicate of %s, got %+v", tc.dupOf, p)
			}
		})
	}

	t.Run("the oldest active one is returned", func(t *testing.T) {
		newer := mk("mem_20261101_115000_000000000009", active.Summary)
		idx := newFakeIndex(newer, active)
		r := mk("mem_20261101_120000_a1b2c3d4e5f6", active.Summary)
		p, err := PlanRemember(idx, &r, WriteOptions{Nonce: counter(), Now: t0})
		if err != nil || p.Existing == nil || p.Existing.ID != active.ID {
			t.Fatalf("%+v %v", p, err)
		}
	})
	t.Run("an operation retry is a retry, not a duplicate", func(t *testing.T) {
		held := mk("mem_20261101_110000_00000000000a", "Use the vendored toolchain")
		held.OperationID = Str("op-7")
		idx := newFakeIndex(held)
		r := held
		r.ID = "mem_20261101_120000_a1b2c3d4e5f6"
		p, err := PlanRemember(idx, &r, WriteOptions{Nonce: counter(), Now: t0})
		if err != nil || p.Existing == nil || p.Duplicate || p.Existing.ID != held.ID {
			t.Fatalf("%+v %v", p, err)
		}
	})
}
