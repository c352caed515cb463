package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/projections"
)

const sampleLedger = "../../testdata/ledger/sample.ndjson"

// buildSample appends a small, realistic history with a fixed clock and ids.
func buildSample(t *testing.T, root string) {
	t.Helper()
	f := eventstest.Factory("cli")
	st, err := bolt.OpenRoot(root, bolt.Options{Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	must := func(stream string, exp int64, evs ...events.Envelope) {
		t.Helper()
		if _, err := st.Append(ctx, stream, exp, evs...); err != nil {
			t.Fatal(err)
		}
	}
	must(events.StoreStream, 0, f.Must(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{
		StoreID: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", Format: 1, ProjectRootFingerprint: strings.Repeat("ab", 32), CLIVersion: "0.1.0",
	}))
	hs := events.HarnessStream("claude-code")
	must(hs, 0,
		f.Must(hs, events.TypeHarnessDetected, &events.HarnessDetected{
			Transition: events.Transition{From: "unsupported", To: "unsupported"}, HarnessID: "claude-code",
			AdapterVersion: "4", Capability: "native-preflight", Markers: []string{".claude"},
		}),
		f.Must(hs, events.TypeBridgePublished, &events.BridgePublished{
			Transition: events.Transition{From: "unsupported", To: "configured-awaiting-proof"}, HarnessID: "claude-code",
			AdapterVersion: "4", Capability: "native-preflight", BridgeFingerprint: strings.Repeat("cd", 32),
			BridgePath:    ".claude/settings.json",
			OwnedFiles:    []events.FileDigest{{Path: ".claude/skills/tree-ring-memory/SKILL.md", SHA256: strings.Repeat("01", 32)}},
			ManagedBlocks: []events.BlockDigest{{Path: ".claude/settings.json", BlockID: "claude-code", SHA256: strings.Repeat("02", 32)}},
			ChangedPaths:  []string{".claude/skills/tree-ring-memory/SKILL.md", ".claude/settings.json"},
		}))
	must(events.StoreStream, 1, f.Must(events.StoreStream, events.TypeManifestPublished, &events.ManifestPublished{
		Path: ".tree-ring/activation.json", SHA256: strings.Repeat("03", 32), Harnesses: []string{"claude-code"},
	}))
}

func TestSampleLedgerGolden(t *testing.T) {
	root := checkedRoot(t)
	buildSample(t, root)
	r := runCLI(t, "", "--root", root, "events")
	if r.code != 0 {
		t.Fatalf("events: %d %s", r.code, r.stderr)
	}
	golden(t, "../../../testdata/ledger/sample.ndjson", []byte(r.stdout))
}

func TestEventsImportRoundTrip(t *testing.T) {
	root := checkedRoot(t)
	// Each import is a recorded run: one session of invocations keeps the
	// run ids distinct from each other and from the sample's ids.
	s := newCLISession()
	r := s.run(t, "", "--root", root, "events", "import", sampleLedger)
	if r.code != 0 || r.stdout != "imported 4, skipped 0 duplicates\n" {
		t.Fatalf("import: code %d out %q err %q", r.code, r.stdout, r.stderr)
	}
	again := s.run(t, "", "--root", root, "--json", "events", "import", sampleLedger)
	if again.code != 0 || strings.TrimSpace(again.stdout) != `{"ok":true,"imported":0,"skipped_duplicates":4}` {
		t.Fatalf("re-import: code %d out %q err %q", again.code, again.stdout, again.stderr)
	}
	// The imported facts come back with the same content in the same order;
	// the run records of the two imports sit around them.
	out := s.run(t, "", "--root", root, "events")
	var got []events.Envelope
	for _, line := range strings.Split(strings.TrimSpace(out.stdout), "\n") {
		e, err := events.DecodeEnvelope([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(e.Stream, events.RunPrefix) {
			got = append(got, e)
		}
	}
	want, _ := os.ReadFile(sampleLedger)
	wantLines := strings.Split(strings.TrimSpace(string(want)), "\n")
	if len(got) != len(wantLines) {
		t.Fatalf("export after import has %d non-run events, want %d:\n%s", len(got), len(wantLines), out.stdout)
	}
	for i, line := range wantLines {
		w, err := events.DecodeEnvelope([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if !events.SameContent(&got[i], &w) {
			t.Errorf("event %d after import differs:\n got %s\nwant %s", i, got[i].Encode(), line)
		}
	}
	if v := s.run(t, "", "--root", root, "audit", "verify"); v.code != 0 {
		t.Fatalf("verify: %d %s", v.code, v.stderr)
	}
}

func TestEventsFilters(t *testing.T) {
	root := sampleRoot(t)
	all := runCLI(t, "", "--root", root, "events").stdout
	lines := strings.SplitAfter(all, "\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--stream", "harness/claude-code"}, lines[1] + lines[2]},
		{[]string{"--stream", "store", "--after", "1"}, lines[3]},
		{[]string{"--type", "manifest.published"}, lines[3]},
		{[]string{"--after", "2"}, lines[2] + lines[3]},
		{[]string{"--after", "4"}, ""},
		{[]string{"--stream", "run/none"}, ""},
	} {
		r := runCLI(t, "", append([]string{"--root", root, "events"}, c.args...)...)
		if r.code != 0 || r.stdout != c.want {
			t.Errorf("events %v: %d %q, want %q", c.args, r.code, r.stdout, c.want)
		}
	}
	assertRefused(t, runCLI(t, "", "--root", root, "events", "--type", "no.such"), exitError, `--type "no.such" is not an event type`)
	assertRefused(t, runCLI(t, "", "--root", root, "events", "--stream", "a b"), exitError, "--stream")
	assertRefused(t, runCLI(t, "", "--root", root, "events", "extra"), exitError, "takes no arguments")
}

func TestProjectionsRebuild(t *testing.T) {
	root := sampleRoot(t)
	// Each rebuild is a recorded run: its run.started precedes the fold.
	r := runCLI(t, "", "--root", root, "projections", "rebuild")
	if r.code != 0 || r.stdout != "rebuilt projections from 5 events\n" {
		t.Fatalf("%+v", r)
	}
	if r := runCLI(t, "", "--root", root, "--json", "projections", "rebuild"); r.code != 0 || r.stdout != "{\"events\":7,\"ok\":true}\n" {
		t.Fatalf("%+v", r)
	}
	if r := runCLI(t, "", "--root", root, "audit", "verify"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
}
