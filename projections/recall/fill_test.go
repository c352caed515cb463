package recall

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// lessons are a project's memories that share no word (and no substring
// of a word) with the generic prompts below.
var lessons = []mem{
	{id: "mem_scar_migrations", summary: "Run migrations before seeding the database", ring: "scar", sal: 0.9},
	{id: "mem_heartwood_style", summary: "Keep commits small and reviewed", ring: "heartwood", sal: 0.8},
	{id: "mem_cambium_cli", summary: "Use the make target, never go run", sal: 0.7},
	{id: "mem_cambium_cache", summary: "Clear the module cache when builds go odd", sal: 0.4},
}

func captureLessons(fx *fixture) {
	for _, m := range lessons {
		m.project = "proj"
		fx.capture(m)
	}
}

// Pi sends the user's prompt as the task hint. A generic prompt matches
// nothing, and the project's lessons must still reach the session: the
// brief is exactly the startup brief, and says so.
func TestGenericPromptsGetTheStartupBrief(t *testing.T) {
	fx := newFixture(t)
	captureLessons(fx)
	startup := fx.brief(BriefQuery{Scope: me})
	if startup.ResultCount != len(lessons) {
		t.Fatalf("startup brief: %v", startup.MemoryIDs)
	}
	for _, prompt := range []string{"hello", "Please fix the flaky test", "project startup constraints"} {
		c := fx.brief(BriefQuery{Scope: me, TaskHint: prompt})
		if c.QueryClass != QueryClassStartup || !slices.Equal(c.MemoryIDs, startup.MemoryIDs) || c.Text != startup.Text ||
			c.SelectedMemoryIDsSHA256 != startup.SelectedMemoryIDsSHA256 {
			t.Errorf("%q: %s %v, want the startup brief %v", prompt, c.QueryClass, c.MemoryIDs, startup.MemoryIDs)
		}
	}
}

func TestHintHitsComeFirstThenTheStartupRanking(t *testing.T) {
	fx := newFixture(t)
	captureLessons(fx)
	// Low salience and old: last in the startup ranking.
	fx.capture(mem{id: "mem_flaky_a", project: "proj", summary: "The flaky test needs a fixed seed", sal: 0.05, age: 60 * 24 * time.Hour})
	fx.capture(mem{id: "mem_flaky_b", project: "proj", summary: "A flaky test hides a race", sal: 0.02, age: 60 * 24 * time.Hour})
	// A hit that is also first in the startup ranking.
	fx.capture(mem{id: "mem_flaky_scar", project: "proj", summary: "Never retry a flaky test blindly", ring: "scar", sal: 0.99})
	for i := 0; i < 6; i++ {
		fx.capture(mem{id: fmt.Sprintf("mem_filler_%d", i), project: "proj", summary: fmt.Sprintf("Unrelated lesson %d", i), sal: 0.6})
	}
	hint := fx.brief(BriefQuery{Scope: me, TaskHint: "flaky test"})
	// All three have both words: the scar's priors put it first; of the
	// other two, whose priors are near-equal, the shorter (a more focused
	// match) comes first.
	wantHits := []string{"mem_flaky_scar", "mem_flaky_b", "mem_flaky_a"}
	if hint.QueryClass != QueryClassTaskHint || hint.ResultCount != MaxBriefResults || !slices.Equal(hint.MemoryIDs[:3], wantHits) {
		t.Fatalf("hint: %s %v", hint.QueryClass, hint.MemoryIDs)
	}
	// The rest is the startup ranking without the hits, in its order.
	startup := fx.brief(BriefQuery{Scope: me}).MemoryIDs
	var want []string
	for _, id := range startup {
		if !slices.Contains(wantHits, id) {
			want = append(want, id)
		}
	}
	if !slices.Equal(hint.MemoryIDs[3:], want[:MaxBriefResults-3]) {
		t.Fatalf("fill %v, want %v (startup %v)", hint.MemoryIDs[3:], want, startup)
	}
	assertNoRepeats(t, hint)
	// A smaller limit is filled the same way; "seeding" matches "seed" as
	// a sub-word, after the whole-word match.
	two := fx.brief(BriefQuery{Scope: me, TaskHint: "needs seed", Limit: 2})
	if !slices.Equal(two.MemoryIDs, []string{"mem_flaky_a", "mem_scar_migrations"}) || two.QueryClass != QueryClassTaskHint {
		t.Fatalf("limit 2: %s %v", two.QueryClass, two.MemoryIDs)
	}
	two = fx.brief(BriefQuery{Scope: me, TaskHint: "needs fixed", Limit: 2})
	if !slices.Equal(two.MemoryIDs, []string{"mem_flaky_a", "mem_flaky_scar"}) || two.QueryClass != QueryClassTaskHint {
		t.Fatalf("limit 2: %s %v", two.QueryClass, two.MemoryIDs)
	}
}

// The fill shares the hint's budget: with 1,200-byte lessons, four lines
// fit in all, the hint's first.
func TestFillStaysWithinTheBudget(t *testing.T) {
	fx := newFixture(t)
	for i := 0; i < 8; i++ {
		// 1,200 bytes each, distinct (the brief shows one of equal summaries).
		fx.capture(mem{id: fmt.Sprintf("mem_big_%d", i), project: "proj", summary: strings.Repeat("界", 399) + fmt.Sprintf("%03d", i), sal: 0.9 - float64(i)/100})
	}
	fx.capture(mem{id: "mem_hit", project: "proj", summary: "flaky " + strings.Repeat("界", 398), sal: 0.1})
	c := fx.brief(BriefQuery{Scope: me, TaskHint: "Please fix the flaky test"})
	if !slices.Equal(c.MemoryIDs, []string{"mem_hit", "mem_big_0", "mem_big_1", "mem_big_2"}) || c.QueryClass != QueryClassTaskHint {
		t.Fatalf("got %s %v", c.QueryClass, c.MemoryIDs)
	}
	if len(c.Text) > MaxContextBytes || !strings.HasSuffix(c.Text, ContextFooter) {
		t.Fatalf("context of %d bytes", len(c.Text))
	}
	assertNoRepeats(t, c)
}

func assertNoRepeats(t *testing.T, c Context) {
	t.Helper()
	seen := map[string]bool{}
	for _, id := range c.MemoryIDs {
		if seen[id] || strings.Count(c.Text, "- ["+id+"]") != 1 {
			t.Fatalf("%s appears twice: %v", id, c.MemoryIDs)
		}
		seen[id] = true
	}
	if c.ResultCount != len(c.MemoryIDs) || c.SelectedMemoryIDsSHA256 != SelectedIDsDigest(c.MemoryIDs) {
		t.Fatalf("count or digest: %+v", c)
	}
}
