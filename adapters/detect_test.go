package adapters

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDetect(t *testing.T) {
	proj, home := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(proj, ".claude"), filepath.Join(proj, ".a0"), filepath.Join(home, ".pi"), filepath.Join(proj, ".hermes")} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(proj, "AGENTS.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := map[string][]Marker{}
	for _, d := range Detect(proj, home) {
		got[d.Adapter.ID] = d.Markers
	}
	want := map[string][]Marker{
		"claude-code": {{".claude", OriginProject}},
		"codex":       {{"AGENTS.md", OriginProject}},
		"pi":          {{"~/.pi", OriginHome}},
		"hermes":      {{".hermes", OriginProject}},
	}
	for _, a := range All() {
		if !slices.Equal(got[a.ID], want[a.ID]) {
			t.Errorf("%s markers %v, want %v", a.ID, got[a.ID], want[a.ID])
		}
	}
	for _, d := range Detect(proj, "") {
		if d.Adapter.ID == "pi" && d.Detected() {
			t.Error("home markers used without HOME")
		}
	}
	if entries, _ := os.ReadDir(proj); len(entries) != 4 {
		t.Errorf("detection changed the project: %v", entries)
	}
}

func TestProbeVersions(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\nprintf 'codex-cli 0.152.0\\nextra line\\n'\n"
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dets := Detect(t.TempDir(), "")
	ProbeVersions(context.Background(), dets, "relative/dir"+string(os.PathListSeparator)+bin)
	for _, d := range dets {
		want := ""
		if d.Adapter.ID == "codex" {
			want = "codex-cli 0.152.0"
		}
		if d.ExecutableVersion != want {
			t.Errorf("%s executable_version %q, want %q", d.Adapter.ID, d.ExecutableVersion, want)
		}
		if d.Detected() {
			t.Errorf("%s detected by its executable alone", d.Adapter.ID)
		}
	}
}
