package main

import (
	"context"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
)

type captureOptions struct {
	EventType, Ring, AgentProfile, WorkflowID, SessionID, OperationID, SourceRef string
	Project                                                                      projectFlag
	Tags                                                                         []string
	AllowDuplicate                                                               bool
}

func (o *captureOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.EventType, "event-type", "", "preference, decision, lesson, warning, correction or seed (required)")
	fs.StringVar(&o.Ring, "ring", memory.DefaultRing, "cambium, scar or seed")
	fs.Var(&o.Project, "project", projectUsage+"; required outside a project")
	fs.StringVar(&o.AgentProfile, "agent-profile", "", "agent profile (required)")
	fs.StringVar(&o.WorkflowID, "workflow-id", "", "workflow id (required)")
	fs.StringVar(&o.SessionID, "session-id", "", "session id (required)")
	fs.StringVar(&o.OperationID, "operation-id", "", "auto-<checkpoint>-<1|2|3> (required)")
	fs.StringVar(&o.SourceRef, "source-ref", "", "agent-checkpoint:<checkpoint> (required)")
	fs.StringArrayVar(&o.Tags, "tag", nil, "tag (repeatable)")
	fs.BoolVar(&o.AllowDuplicate, "allow-duplicate", false, allowDuplicateUsage)
}

func init() {
	register("capture", "SUMMARY", "strict automatic capture of one checkpoint candidate (agent scope, normal sensitivity only)", runCapture)
}

func runCapture(ctx context.Context, g *Globals, o *captureOptions, args []string) error {
	if len(args) != 1 {
		return oneSummary("capture", args)
	}
	project := o.Project.orAlias(g)
	for _, f := range []struct{ name, v string }{
		{"--event-type", o.EventType}, {"--project", project}, {"--agent-profile", o.AgentProfile},
		{"--workflow-id", o.WorkflowID}, {"--session-id", o.SessionID}, {"--operation-id", o.OperationID},
		{"--source-ref", o.SourceRef},
	} {
		if strings.TrimSpace(f.v) == "" {
			return usagef("capture requires %s", f.name)
		}
	}
	now, random := newMemoryID(g)
	rec, err := memory.Capture(memory.CaptureRequest{
		Summary: args[0], EventType: o.EventType, Ring: o.Ring,
		Project: project, AgentProfile: o.AgentProfile, WorkflowID: o.WorkflowID, SessionID: o.SessionID,
		OperationID: o.OperationID, SourceRef: o.SourceRef, Tags: o.Tags,
	}, now, random)
	if err != nil {
		return err
	}
	return writeMemory(ctx, g, rec, events.OriginCapture, o.AllowDuplicate)
}
