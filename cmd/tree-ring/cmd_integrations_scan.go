package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
)

func init() {
	register("integrations scan", "", "read-only detection of every registered harness (markers, executable version)", runScan)
}

// detectionEntry is one adapter in scan's JSON output.
type detectionEntry struct {
	HarnessID         string            `json:"harness_id"`
	Name              string            `json:"name"`
	Status            string            `json:"status"`
	Capability        string            `json:"capability"`
	AdapterVersion    string            `json:"adapter_version"`
	Support           string            `json:"support"`
	Markers           []adapters.Marker `json:"markers"`
	ExecutableVersion string            `json:"executable_version,omitempty"`
}

// runScan detects markers in the project (--source-root) and in $HOME and,
// only here, probes each harness executable found on PATH for its version,
// each probe bounded. It reads nothing else, creates nothing, appends
// nothing and needs no store: a scan never changes a harness's state.
func runScan(ctx context.Context, g *Globals, _ *noOptions, args []string) error {
	if len(args) > 0 {
		return usagef("integrations scan takes no arguments")
	}
	root, err := adapters.CanonicalProjectRoot(g.SourceRoot)
	if err != nil {
		return fmt.Errorf("--source-root %s: %w", g.SourceRoot, unwrapPath(err))
	}
	dets := adapters.Detect(root, g.Getenv("HOME"))
	adapters.ProbeVersions(ctx, dets, g.Getenv("PATH"))
	var entries []detectionEntry
	detected := 0
	for _, d := range dets {
		if d.Detected() {
			detected++
		}
		ms := d.Markers
		if ms == nil {
			ms = []adapters.Marker{}
		}
		entries = append(entries, detectionEntry{
			HarnessID: d.Adapter.ID, Name: d.Adapter.Name, Status: d.Status(), Capability: string(d.Adapter.Capability),
			AdapterVersion: d.Adapter.Version, Support: string(d.Adapter.Support), Markers: ms, ExecutableVersion: d.ExecutableVersion,
		})
	}
	if g.JSON {
		return writeJSON(g.Stdout, struct {
			OK            bool             `json:"ok"`
			DetectedCount int              `json:"detected_count"`
			Integrations  []detectionEntry `json:"integrations"`
		}{true, detected, entries})
	}
	fmt.Fprintf(g.Stdout, "Tree Ring Memory integrations scan: %d detected (detection never activates a harness).\n", detected)
	for _, e := range entries {
		fmt.Fprintf(g.Stdout, "%s: %s (%s, %s)\n", e.Name, e.Status, e.Capability, e.Support)
		if len(e.Markers) > 0 {
			var ms []string
			for _, m := range e.Markers {
				ms = append(ms, m.Path+" ("+m.Origin+")")
			}
			fmt.Fprintf(g.Stdout, "  markers: %s\n", strings.Join(ms, ", "))
		}
		if e.ExecutableVersion != "" {
			fmt.Fprintf(g.Stdout, "  executable: %s\n", e.ExecutableVersion)
		}
	}
	return nil
}
