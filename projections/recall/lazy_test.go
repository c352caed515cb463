package recall

import (
	"context"
	"fmt"
	"testing"
	"time"
)

type countingBodies struct {
	b bodyMap
	n int
}

func (c *countingBodies) Body(d string) []byte { c.n++; return c.b[d] }

// Ranking reads no body to score: the textual factor comes from the
// postings, so with 600 candidates a query reads the bodies of its 8
// results only.
func TestRankingReadsFewBodies(t *testing.T) {
	fx := newFixture(t)
	for i := 0; i < 600; i++ {
		fx.capture(mem{project: "proj", summary: fmt.Sprintf("avoid stale deployment rollback cache failure %d", i),
			ring: "scar", sal: float64(i%100+1) / 101, age: time.Duration(i) * time.Minute})
	}
	cb := &countingBodies{b: fx.bodies}
	for _, c := range []struct {
		name string
		run  func() (int, error)
	}{
		{"recall", func() (int, error) {
			r, err := Recall(context.Background(), fx.kv, cb, "fix the deployment rollback cache", Filter{Project: "proj"}, now)
			return len(r), err
		}},
		{"brief", func() (int, error) {
			r, err := Brief(context.Background(), fx.kv, cb, BriefQuery{Scope: me, TaskHint: "fix the deployment rollback cache"}, now)
			return r.ResultCount, err
		}},
	} {
		cb.n = 0
		n, err := c.run()
		if err != nil || n != 8 {
			t.Fatalf("%s: %d results, %v", c.name, n, err)
		}
		if cb.n != 8 {
			t.Errorf("%s: %d body reads for 8 results", c.name, cb.n)
		}
	}
}
