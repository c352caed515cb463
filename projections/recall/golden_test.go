package recall

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
)

var _ = eventstest.UpdateFlag()

// golden is the seeded generator of TestQueriesMatchGolden's workload and
// queries.
type golden struct{ rng *rand.Rand }

var (
	goldenWords = []string{"cache", "deploy", "stale", "rollback", "failure", "rule", "decision", "seed", "roadmap", "build",
		"Ünïcode", "note", "the", "a", "flaky", "test", "release", "parser", "schema", "migration", "界", "x_y"}
	projects = []string{"proj", "proj", "proj", "my-proj", "other", ""}
	agents   = []string{"claude-code", "codex", "pi"}
)

func (g golden) text(n int) string {
	var sb []string
	for j := 0; j < n; j++ {
		sb = append(sb, goldenWords[g.rng.IntN(len(goldenWords))])
	}
	return strings.Join(sb, " ")
}

func (g golden) pick(s []string) string { return s[g.rng.IntN(len(s))] }

// goldenWorkload captures the 1,500 memories of the golden test into fx,
// superseding, deleting and redacting some as it goes, and returns the
// generator positioned for the queries.
func goldenWorkload(fx *fixture) golden {
	g := golden{rand.New(rand.NewPCG(7, 11))}
	rng, text, pick := g.rng, g.text, g.pick
	var live []string
	for i := 0; i < 1500; i++ {
		m := mem{
			id: fmt.Sprintf("mem_%04d_%02d", rng.IntN(3000), i%100), summary: text(1 + rng.IntN(6)), project: pick(projects),
			ring: pick(events.MemoryRings), sal: float64(1+rng.IntN(100)) / 100, conf: float64(1+rng.IntN(100)) / 100,
			age: time.Duration(rng.IntN(120*24)) * time.Hour / time.Duration(1+rng.IntN(3)),
		}
		switch rng.IntN(10) {
		case 0, 1:
			m.scope, m.agent = "agent", pick(agents)
		case 2:
			m.scope, m.workflow = "workflow", pick([]string{"wf1", "wf2"})
		case 3:
			m.scope, m.session = "session", pick([]string{"s1", "s2"})
		case 4:
			m.scope, m.agent, m.session = "project", pick(agents), "s1"
		}
		switch rng.IntN(20) {
		case 0:
			m.sensitivity = "health"
		case 1:
			m.sensitivity = "private"
		case 2:
			past := now.Add(-time.Hour)
			m.expires = &past
		case 3:
			future := now.Add(time.Hour)
			m.expires = &future
		}
		if rng.IntN(4) == 0 {
			m.tags = []string{pick(goldenWords)}
		}
		if rng.IntN(3) == 0 {
			m.ref = pick([]string{"docs/a.md", "/abs/path.md", "agent-checkpoint:7", "notes deploy"})
		}
		if rng.IntN(2) == 0 { // one word in more memories than a small limit's candidate cap
			m.summary += " cache"
		}
		if rng.IntN(50) == 0 {
			m.summary = strings.Repeat("界", 300+rng.IntN(1800))
		}
		if i%13 == 5 && len(live) > 0 { // ties in every static factor
			m.sal, m.conf, m.age = 0.5, 0.5, 0
		}
		if fx.kv.Get(key(pMem, []byte(m.id))) != nil {
			continue
		}
		fx.capture(m)
		live = append(live, m.id)
		if len(live) > 10 && rng.IntN(12) == 0 {
			j := rng.IntN(len(live) - 1)
			id := live[j]
			live = append(live[:j], live[j+1:]...)
			switch rng.IntN(3) {
			case 0:
				fx.supersede(id, m.id)
			case 1:
				fx.forget(id, events.ForgetDelete)
			case 2:
				fx.forget(id, events.ForgetRedact)
			}
		}
	}
	return g
}

// TestQueriesMatchGolden is a differential test: a seeded workload of
// 1,500 memories in every visibility, lifecycle and ranking situation, and
// 400 explicit recalls and briefs against it, whose results (ids, exact
// scores, classes, rendered text digests) were recorded by the previous
// implementation of the index and its queries. A change of layout or of
// query strategy must give the same answers, bit for bit.
func TestQueriesMatchGolden(t *testing.T) {
	fx := newFixture(t)
	g := goldenWorkload(fx)
	rng, text, pick := g.rng, g.text, g.pick
	var out bytes.Buffer
	for qn := 0; qn < 250; qn++ {
		q := text(1 + rng.IntN(4))
		f := Filter{Limit: rng.IntN(21), IncludeSensitive: rng.IntN(5) == 0}
		if rng.IntN(2) == 0 {
			f.Project = pick(projects)
		}
		if rng.IntN(4) == 0 {
			f.AgentProfile = pick(agents)
		}
		if rng.IntN(6) == 0 {
			f.Scope = pick(events.MemoryScopes)
		}
		if rng.IntN(8) == 0 {
			f.SessionID = "s1"
		}
		fmt.Fprintf(&out, "recall %q %+v:", q, f)
		for _, r := range fx.recall(q, f) {
			fmt.Fprintf(&out, " %s=%s", r.Memory.ID, strconv.FormatFloat(r.Score, 'g', -1, 64))
		}
		out.WriteString("\n")
	}
	for qn := 0; qn < 150; qn++ {
		bq := BriefQuery{Scope: Scope{Project: pick(projects), AgentProfile: pick(agents), WorkflowID: pick([]string{"wf1", "wf2", ""}),
			SessionID: pick([]string{"s1", "s2", ""})}, Limit: rng.IntN(9)}
		if rng.IntN(2) == 0 {
			bq.ProjectAlias = "my-proj"
		}
		switch rng.IntN(3) {
		case 0:
			bq.TaskHint = text(1 + rng.IntN(3))
		case 1:
			bq.TaskHint = pick([]string{"hello", "Please fix the flaky test", "project startup constraints", "   "})
		}
		c := fx.brief(bq)
		fmt.Fprintf(&out, "brief %+v: %s %d %s %s %v\n", bq, c.QueryClass, c.ResultCount, c.SelectedMemoryIDsSHA256[:16], digest([]byte(c.Text))[:16], c.MemoryIDs)
	}
	golden := filepath.Join("testdata", "queries.golden")
	if want, err := os.ReadFile(golden); err == nil && !eventstest.Updating() && !bytes.Equal(out.Bytes(), want) {
		g, w := strings.Split(out.String(), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("%s line %d:\ngot  %s\nwant %s", golden, i+1, g[i], w[i])
			}
		}
	}
	eventstest.Golden(t, golden, out.Bytes())
}
