package main

import (
	"context"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters/activation"
	"github.com/tree-ring/tree-ring/events"
)

type deactivateOptions struct {
	Harness string
	DryRun  bool
}

func (o *deactivateOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Harness, "harness", "", "harness id")
	fs.BoolVar(&o.DryRun, "dry-run", false, "report what would be recorded; create nothing")
}

func init() {
	register("integrations deactivate", "", "record a deactivation request; nothing is removed (creation-only)", runDeactivate)
}

// runDeactivate records the user's request and reports needs-user-review
// with the exact paths to remove by hand: deactivation is creation-only at
// the writer boundary, so Tree Ring never removes or replaces a bridge,
// including bytes it published.
func runDeactivate(ctx context.Context, g *Globals, o *deactivateOptions, args []string) error {
	if len(args) > 0 {
		return usagef("integrations deactivate takes no arguments")
	}
	a, err := harnessFlag(o.Harness)
	if err != nil {
		return err
	}
	pr, err := resolveProject(g)
	if err != nil {
		return err
	}
	defer pr.root.Close()
	plan, err := pr.plan(ctx, g, o.DryRun, activation.Input{Command: activation.Deactivate, Targets: []string{a.ID}}, events.RunCmdIntegrationsDeactivate)
	if err != nil {
		return err
	}
	return printReport(g, plan.Outcomes[0], o.DryRun)
}
