package recall

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/memory"
)

// memKV is a sorted in-memory KV (the package cannot import projections.MemKV:
// projections imports this package).
type memKV struct{ m map[string][]byte }

func newMemKV() *memKV { return &memKV{m: map[string][]byte{}} }

func (k *memKV) Get(key []byte) []byte { return k.m[string(key)] }
func (k *memKV) Put(key, v []byte) error {
	k.m[string(key)] = append([]byte(nil), v...) // as projections.MemKV: empty reads back as nil
	return nil
}
func (k *memKV) Delete(key []byte) error { delete(k.m, string(key)); return nil }
func (k *memKV) ForEach(prefix []byte, fn func(k, v []byte) error) error {
	var keys []string
	for key := range k.m {
		if bytes.HasPrefix([]byte(key), prefix) {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		if err := fn([]byte(key), k.m[key]); err != nil {
			return err
		}
	}
	return nil
}

type bodyMap map[string][]byte

func (b bodyMap) Body(d string) []byte { return b[d] }

// fixture folds memory events built the way the commands build them.
type fixture struct {
	t      *testing.T
	kv     *memKV
	bodies bodyMap
	f      *events.Factory
	log    []events.Envelope
	n      int
}

var now = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func newFixture(t *testing.T) *fixture {
	return &fixture{t: t, kv: newMemKV(), bodies: bodyMap{}, f: &events.Factory{
		Now: func() time.Time { return now }, NewID: eventstest.IDs(0), Actor: "test",
	}}
}

// mem is a shorthand for a record of project p.
type mem struct {
	id, summary, project, scope, ring, agent, workflow, session, ref, sensitivity string
	sal, conf                                                                     float64
	age                                                                           time.Duration
	expires                                                                       *time.Time
	tags                                                                          []string
	// legacy stores the summary as a ledger written before summaries were
	// checked may hold it (a line break), past Validate's one-line rule.
	legacy bool
}

func (fx *fixture) capture(m mem) memory.Record {
	fx.t.Helper()
	fx.n++
	if m.id == "" {
		m.id = fmt.Sprintf("mem_%05d", fx.n)
	}
	if m.summary == "" {
		m.summary = "note " + m.id
	}
	r := memory.NewRecord(m.id, m.summary, "lesson", now.Add(-m.age))
	r.Project = memory.Str(m.project)
	if m.scope != "" {
		r.Scope = m.scope
	}
	if m.ring != "" {
		r.Ring = m.ring
	}
	r.AgentProfile, r.WorkflowID, r.SessionID = memory.Str(m.agent), memory.Str(m.workflow), memory.Str(m.session)
	r.Source.Ref = m.ref
	if m.sensitivity != "" {
		r.Sensitivity = m.sensitivity
	}
	r.Salience, r.Confidence = 0.5, 0.5
	if m.sal != 0 {
		r.Salience = m.sal
	}
	if m.conf != 0 {
		r.Confidence = m.conf
	}
	if m.expires != nil {
		r.ExpiresAt = memory.Str(events.FormatMemoryTime(*m.expires))
	}
	if m.tags != nil {
		r.Tags = m.tags
	}
	if m.legacy {
		r.Summary = "legacy"
	}
	if err := r.Validate(); err != nil {
		fx.t.Fatal(err)
	}
	if m.legacy {
		r.Summary = m.summary
	}
	p, body := r.Split(events.OriginRemember, "nonce")
	fx.bodies[p.BodySHA256] = body
	fx.apply(events.MemoryStream(r.ID), events.TypeMemoryCaptured, &p)
	return r
}

func (fx *fixture) apply(stream, typ string, p any) {
	fx.t.Helper()
	e := fx.f.Must(stream, typ, p)
	fx.log = append(fx.log, e)
	if err := Apply(fx.kv, fx.bodies, &e); err != nil {
		fx.t.Fatal(err)
	}
}

func (fx *fixture) supersede(id, by string) {
	fx.apply(events.MemoryStream(id), events.TypeMemorySuperseded, &events.MemorySuperseded{MemoryID: id, SupersededBy: by})
}

func (fx *fixture) forget(id, mode string) {
	fx.t.Helper()
	d := BodyDigest(fx.kv, id)
	p := events.MemoryForgotten{MemoryID: id, Mode: mode, ReasonSHA256: d, ReasonChars: 3}
	if mode == events.ForgetRedact {
		red := memory.RedactedBody(id)
		p.RedactedSHA256 = digest(red)
		fx.bodies[p.RedactedSHA256] = red
	}
	// As cmd/tree-ring's forget: the body goes after the event is folded
	// (the fold tokenizes it to find the postings).
	fx.apply(events.MemoryStream(id), events.TypeMemoryForgotten, &p)
	delete(fx.bodies, d)
}

func (fx *fixture) brief(q BriefQuery) Context {
	fx.t.Helper()
	c, err := Brief(context.Background(), fx.kv, fx.bodies, q, now)
	if err != nil {
		fx.t.Fatal(err)
	}
	return c
}

func (fx *fixture) recall(query string, f Filter) []Result {
	fx.t.Helper()
	r, err := Recall(context.Background(), fx.kv, fx.bodies, query, f, now)
	if err != nil {
		fx.t.Fatal(err)
	}
	return r
}

func ids(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Memory.ID)
	}
	return out
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
