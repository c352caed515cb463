package main

import (
	"bufio"
	"context"
	"fmt"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/projections/recall"
)

type recallOptions struct {
	Project, AgentProfile, WorkflowID, SessionID, Scope string
	Limit                                               int
	IncludeSensitive, Explain                           bool
}

func (o *recallOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Project, "project", "", "only this project")
	fs.StringVar(&o.AgentProfile, "agent-profile", "", "only this agent profile (default $"+envAgentProfile+")")
	fs.StringVar(&o.WorkflowID, "workflow-id", "", "only this workflow (default $"+envWorkflowID+")")
	fs.StringVar(&o.SessionID, "session-id", "", "only this session (default $"+envSessionID+")")
	fs.StringVar(&o.Scope, "scope", "", "only this scope")
	fs.IntVar(&o.Limit, "limit", recall.DefaultLimit, fmt.Sprintf("number of results (1..%d)", recall.MaxLimit))
	fs.BoolVar(&o.IncludeSensitive, "include-sensitive", false, "also return memories classified private, health, financial, legal or personal_identifier")
	fs.BoolVar(&o.Explain, "explain", false, "show the score factors (--json: the ranking object)")
}

func init() {
	register("recall", "QUERY", "search memories: exact filters, ranked OR retrieval (BM25 weights, stems, bounded priors)", runRecall)
}

func runRecall(ctx context.Context, g *Globals, o *recallOptions, args []string) error {
	if len(args) != 1 {
		return usagef("recall needs exactly one QUERY (quote it)")
	}
	if o.Limit < 1 || o.Limit > recall.MaxLimit {
		return usagef("--limit must be between 1 and %d", recall.MaxLimit)
	}
	f := recall.Filter{
		Project: o.Project, AgentProfile: orEnv(g, o.AgentProfile, envAgentProfile),
		WorkflowID: orEnv(g, o.WorkflowID, envWorkflowID), SessionID: orEnv(g, o.SessionID, envSessionID),
		Scope: o.Scope, IncludeSensitive: o.IncludeSensitive, Limit: o.Limit, Explain: o.Explain,
	}
	st, err := g.OpenStore(true)
	if err != nil {
		return err
	}
	defer st.Close()
	var results []recall.Result
	err = st.View(func(r *bolt.Reader) error {
		var err error
		results, err = recall.Recall(ctx, r.Projection(recall.Name), r, args[0], f, g.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("recall: %w", err)
	}
	w := bufio.NewWriter(g.Stdout)
	if g.JSON {
		for i := range results {
			if results[i].Ranking == nil {
				results[i].Ranking = map[string]float64{}
			}
		}
		if results == nil {
			results = []recall.Result{}
		}
		// One top-level object, the list in a named field (docs/json.md).
		line, err := memory.MarshalJSONLine(struct {
			Results []recall.Result `json:"results"`
		}{results})
		if err != nil {
			return err
		}
		w.Write(line)
		return w.Flush()
	}
	for _, r := range results {
		fmt.Fprintf(w, "%s [%s] %s score=%.3f\n", r.Memory.ID, r.Memory.Ring, memory.OneLine(r.Memory.Summary), r.Score)
		if o.Explain {
			k := r.Ranking
			fmt.Fprintf(w, "  textual_match=%.3f (whole_word=%.3f sub_word=%.3f length_norm=%.3f) prior=%.3f (salience=%.3f confidence=%.3f recency=%.3f source_authority=%.3f ring_boost=%.3f)\n",
				k["textual_match"], k["whole_word"], k["sub_word"], k["length_norm"], k["prior"], k["salience"], k["confidence"], k["recency"], k["source_authority"], k["ring_boost"])
		}
	}
	return w.Flush()
}
