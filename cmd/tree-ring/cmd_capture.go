package main

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
)

// The strict automatic path, as published (0.15.5+): what a lifecycle
// capture checkpoint asks the agent to run, zero to three times.
var (
	captureRings      = []string{"cambium", "scar", "seed"}
	captureEventTypes = []string{"preference", "decision", "lesson", "warning", "correction", "seed"}
)

const (
	captureTag           = "automatic-capture"
	checkpointRefPrefix  = "agent-checkpoint:"
	maxCaptureSummary    = 2000 // bytes; a checkpoint records concise candidates, never a transcript
	maxCheckpointIDBytes = 128
)

type captureOptions struct {
	EventType, Ring, Project, AgentProfile, WorkflowID, SessionID, OperationID, SourceRef string
	Tags                                                                                  []string
}

func (o *captureOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.EventType, "event-type", "", "preference, decision, lesson, warning, correction or seed (required)")
	fs.StringVar(&o.Ring, "ring", memory.DefaultRing, "cambium, scar or seed")
	fs.StringVar(&o.Project, "project", "", "project (required)")
	fs.StringVar(&o.AgentProfile, "agent-profile", "", "agent profile (required)")
	fs.StringVar(&o.WorkflowID, "workflow-id", "", "workflow id (required)")
	fs.StringVar(&o.SessionID, "session-id", "", "session id (required)")
	fs.StringVar(&o.OperationID, "operation-id", "", "auto-<checkpoint>-<1|2|3> (required)")
	fs.StringVar(&o.SourceRef, "source-ref", "", "agent-checkpoint:<checkpoint> (required)")
	fs.StringArrayVar(&o.Tags, "tag", nil, "tag (repeatable)")
}

func init() {
	register("capture", "SUMMARY", "strict automatic capture of one checkpoint candidate (agent scope, normal sensitivity only)", runCapture)
}

func runCapture(ctx context.Context, g *Globals, o *captureOptions, args []string) error {
	if len(args) != 1 {
		return usagef("capture needs exactly one SUMMARY (quote it)")
	}
	for _, f := range []struct{ name, v string }{
		{"--event-type", o.EventType}, {"--project", o.Project}, {"--agent-profile", o.AgentProfile},
		{"--workflow-id", o.WorkflowID}, {"--session-id", o.SessionID}, {"--operation-id", o.OperationID},
		{"--source-ref", o.SourceRef},
	} {
		if strings.TrimSpace(f.v) == "" {
			return usagef("capture requires %s", f.name)
		}
	}
	rec, err := newRecord(g, args[0], o.EventType)
	if err != nil {
		return err
	}
	rec.Ring, rec.Scope = o.Ring, "agent"
	rec.Project, rec.AgentProfile = memory.Str(o.Project), memory.Str(o.AgentProfile)
	rec.WorkflowID, rec.SessionID, rec.OperationID = memory.Str(o.WorkflowID), memory.Str(o.SessionID), memory.Str(o.OperationID)
	rec.Source = memory.Source{Type: "agent", Ref: o.SourceRef}
	rec.Tags = append([]string{}, o.Tags...)
	if !slices.Contains(rec.Tags, captureTag) {
		rec.Tags = append(rec.Tags, captureTag)
	}
	// The sensitivity guard runs before the capture rules, so that neither
	// a write nor an error can carry secret-like content.
	if err := rec.InspectSensitivity(); err != nil {
		return err
	}
	if err := checkCapture(&rec); err != nil {
		return err
	}
	return writeMemory(ctx, g, rec, events.OriginCapture)
}

// checkCapture applies the strict automatic capture rules.
func checkCapture(rec *memory.Record) error {
	if rec.Sensitivity != memory.SensitivityNormal {
		return errors.New("automatic capture accepts only normal sensitivity")
	}
	if !slices.Contains(captureRings, rec.Ring) {
		return errors.New("automatic capture accepts only the cambium, scar or seed ring")
	}
	if !slices.Contains(captureEventTypes, rec.EventType) {
		return errors.New("automatic capture accepts only event types preference, decision, lesson, warning, correction or seed")
	}
	if len(rec.Summary) > maxCaptureSummary || events.HasControl(rec.Summary) {
		return errors.New("automatic capture takes one concise line (at most 2000 bytes, no control characters), never a transcript")
	}
	cp, ok := strings.CutPrefix(rec.Source.Ref, checkpointRefPrefix)
	if !ok || cp == "" || len(cp) > maxCheckpointIDBytes || strings.ContainsFunc(cp, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		return errors.New("automatic capture needs --source-ref agent-checkpoint:<checkpoint id>")
	}
	op := memory.Deref(rec.OperationID)
	if op != "auto-"+cp+"-1" && op != "auto-"+cp+"-2" && op != "auto-"+cp+"-3" {
		return errors.New("automatic capture needs --operation-id auto-<checkpoint id>-<1|2|3> of the same checkpoint (at most three candidates)")
	}
	return nil
}
