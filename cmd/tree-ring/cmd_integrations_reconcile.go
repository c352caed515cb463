package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/events"
)

type reconcileOptions struct {
	Harness string
	Apply   bool
	Accept  bool
}

func (o *reconcileOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Harness, "harness", "", "reconcile only this harness (default: every detected or recorded one)")
	fs.BoolVar(&o.Apply, "apply", false, "make the change shown (without it nothing is written)")
	fs.BoolVar(&o.Accept, "accept-managed-block", false, "adopt a Tree Ring block you added by hand to an instruction file Tree Ring did not create (AGENTS.md)")
}

func init() {
	register("integrations reconcile", "", "show, and with --apply make and record, the reconciliation Tree Ring can do with your consent (docs/reconcile.md)", runReconcile)
}

// runReconcile wires the reconciliation step (activation.Reconcile): the
// plan without --apply, the plan applied and recorded with it.
func runReconcile(ctx context.Context, g *Globals, o *reconcileOptions, args []string) error {
	if len(args) > 0 {
		return usagef("integrations reconcile takes no arguments")
	}
	var targets []string
	if o.Harness != "" {
		a, err := harnessFlag(o.Harness)
		if err != nil {
			return err
		}
		targets = []string{a.ID}
	}
	pr, err := resolveProject(g)
	if err != nil {
		return err
	}
	defer pr.root.Close()
	if exists, err := pr.hasLedger(); err != nil {
		return err
	} else if !exists {
		return g.noLedger(fmt.Errorf("no Tree Ring store at %s; run `tree-ring init` first", g.Root))
	}
	dets := adapters.Detect(pr.canonical, g.Getenv("HOME"))
	if targets == nil {
		if targets, err = pr.reconcileTargets(g, dets); err != nil {
			return err
		}
	}
	in := activation.Input{Command: activation.Reconcile, Targets: targets, Detections: detectionsByID(dets), Accept: o.Accept}
	plan, err := pr.plan(ctx, g, !o.Apply, in, events.RunCmdIntegrationsReconcile)
	if plan == nil {
		return err
	}
	if perr := printReconcile(g, plan, !o.Apply); perr != nil {
		return perr
	}
	if err != nil {
		return err
	}
	return activation.NeedsReview(plan.Outcomes)
}

// reconcileTargets reads the ledger for activation.ReconcileTargets.
func (pr *project) reconcileTargets(g *Globals, dets []adapters.Detection) ([]string, error) {
	ro, err := g.OpenStore(true)
	if err != nil {
		return nil, err
	}
	defer ro.Close()
	snap := newSnapshot()
	if err := snap.read(ro); err != nil {
		return nil, err
	}
	var detected []string
	for _, d := range dets {
		if d.Detected() {
			detected = append(detected, d.Adapter.ID)
		}
	}
	return activation.ReconcileTargets(snap.ledger, detected), nil
}

type reconcileReport struct {
	OK           bool     `json:"ok"`
	DryRun       bool     `json:"dry_run"`
	Integrations []report `json:"integrations"`
	// Manifest is the replacement of activation.json, absent when it
	// stays as it is.
	Manifest *manifestChange `json:"manifest,omitempty"`
}

type manifestChange struct {
	Path           string   `json:"path"`
	PreviousSHA256 string   `json:"previous_sha256"`
	SHA256         string   `json:"sha256"`
	Changed        []string `json:"changed"`
	Diff           string   `json:"diff"`
}

func printReconcile(g *Globals, plan *activation.Plan, dryRun bool) error {
	rep := reconcileReport{OK: true, DryRun: dryRun, Integrations: []report{}}
	for _, o := range plan.Outcomes {
		r := reportOf(o, false)
		rep.Integrations = append(rep.Integrations, r)
	}
	if c, ok := plan.ManifestChange(); ok {
		rep.Manifest = &manifestChange{Path: adapters.ManifestPath, PreviousSHA256: adapters.SHA256Hex(c.Previous), SHA256: adapters.SHA256Hex(c.Next),
			Changed: c.Changed, Diff: activation.Diff(adapters.ManifestPath, c.Previous, c.Next, 3)}
	}
	if g.JSON {
		return writeJSON(g.Stdout, rep)
	}
	if dryRun {
		fmt.Fprintln(g.Stdout, "Tree Ring reconcile (dry-run): nothing was changed; run it again with --apply to make the changes below.")
	} else {
		fmt.Fprintln(g.Stdout, "Tree Ring reconcile: applied and recorded.")
	}
	for i, o := range plan.Outcomes {
		r := rep.Integrations[i]
		fmt.Fprintf(g.Stdout, "%s: %s\n", r.HarnessID, r.State)
		verb := map[bool]string{true: "creates", false: "created"}[dryRun]
		switch {
		case o.Kind == activation.Finish:
			verb = map[bool]string{true: "removes", false: "removed"}[dryRun]
		case len(o.Replaces) > 0:
			verb = map[bool]string{true: "replaces", false: "replaced"}[dryRun]
		}
		if len(r.ChangedPaths) > 0 {
			fmt.Fprintf(g.Stdout, "  %s: %s\n", verb, strings.Join(r.ChangedPaths, ", "))
		}
		printNext(g.Stdout, r.NextStep)
	}
	if m := rep.Manifest; m != nil {
		verb := map[bool]string{true: "replaces", false: "replaced"}[dryRun]
		fmt.Fprintf(g.Stdout, "%s %s (records of %s):\n%s", verb, m.Path, strings.Join(m.Changed, ", "), m.Diff)
	}
	return nil
}
