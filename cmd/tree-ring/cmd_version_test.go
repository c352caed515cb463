package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
)

func TestBuildVersion(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/tree-ring/tree-ring", Version: "(devel)"}}
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs", Value: "git"})
		if rev != "" {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.revision", Value: rev})
		}
		if modified != "" {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.modified", Value: modified})
		}
		return bi
	}
	installed := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/tree-ring/tree-ring", Version: v}}
	}
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "0.15.13+go"},
		{"devel, no vcs", installed("(devel)"), "0.15.13+go"},
		{"empty main version", installed(""), "0.15.13+go"},
		{"clean checkout", vcs("208278ab3277b54ba3f52eca76f2a498784aab28", "false"), "0.15.13+go.208278ab3277"},
		{"modified checkout", vcs("208278ab3277b54ba3f52eca76f2a498784aab28", "true"), "0.15.13+go.208278ab3277.dirty"},
		{"short revision", vcs("abc", ""), "0.15.13+go.abc"},
		{"revision wins over module version", func() *debug.BuildInfo {
			bi := vcs("208278ab3277b54ba3f52eca76f2a498784aab28", "false")
			bi.Main.Version = "v0.0.0-20261201081554-208278ab3277"
			return bi
		}(), "0.15.13+go.208278ab3277"},
		{"go install @version", installed("v1.2.3"), "0.15.13+go.v1.2.3"},
		{"pseudo-version", installed("v0.0.0-20261201081554-208278ab3277"), "0.15.13+go.v0.0.0-20261201081554-208278ab3277"},
		{"incompatible", installed("v2.0.0+incompatible"), "0.15.13+go.v2.0.0-incompatible"},
		{"odd revision characters", vcs("ab/cd ef", "false"), "0.15.13+go.ab-cd-ef"},
	}
	semver := regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*$`)
	for _, c := range cases {
		got := buildVersion(adapters.ContractRelease, c.bi)
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		if !semver.MatchString(got) {
			t.Errorf("%s: %s is not semver with build metadata", c.name, got)
		}
	}
}

// version --json's commit and dirty are the stamp itself: the full
// revision, and vcs.modified.
func TestVCSStamp(t *testing.T) {
	const rev = "208278ab3277b54ba3f52eca76f2a498784aab28"
	stamped := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}}
	for _, c := range []struct {
		bi    *debug.BuildInfo
		rev   string
		dirty bool
	}{{nil, "", false}, {&debug.BuildInfo{}, "", false}, {stamped, rev, true}} {
		if r, d := vcsStamp(c.bi); r != c.rev || d != c.dirty {
			t.Errorf("%+v: %q %v, want %q %v", c.bi, r, d, c.rev, c.dirty)
		}
	}
}

// .ci/release's -X stamp stands in for the vcs settings Go did not record
// (a test binary records none).
func TestStampedBuildInfo(t *testing.T) {
	t.Cleanup(func() { stampRevision, stampModified = "", "" })
	stampRevision, stampModified = "208278ab3277b54ba3f52eca76f2a498784aab28", "true"
	bi := buildInfo()
	if rev, dirty := vcsStamp(bi); rev != stampRevision || !dirty {
		t.Fatalf("stamp %q %v", rev, dirty)
	}
	if got := buildVersion(adapters.ContractRelease, bi); got != "0.15.13+go.208278ab3277.dirty" {
		t.Fatalf("version %s", got)
	}
}

// pluginVersionRE is the Agent Zero plugin's version gate (release 3.4.1,
// helpers/cli.py): it searches the stripped `--version` output.
var pluginVersionRE = regexp.MustCompile(`\btree-ring\s+(\d+)\.(\d+)\.(\d+)(?:[-+]\S+)?`)

// --version and the version command print the same line, which passes the
// plugin's gate as the contract release; their --json forms agree with it.
func TestVersionOutputs(t *testing.T) {
	// The test binary carries no VCS stamp, so the metadata is just "go".
	if Version() != adapters.ContractRelease+"+go" {
		t.Fatalf("Version %s", Version())
	}
	flag := runCLI(t, "", "--version")
	cmd := runCLI(t, "", "version")
	if flag.code != 0 || cmd.code != 0 || flag.stderr != "" || cmd.stderr != "" {
		t.Fatalf("--version %+v, version %+v", flag, cmd)
	}
	if want := "tree-ring 0.15.13+go\n"; flag.stdout != want || cmd.stdout != want {
		t.Fatalf("--version %q, version %q, want %q", flag.stdout, cmd.stdout, want)
	}
	m := pluginVersionRE.FindStringSubmatch(strings.TrimSpace(flag.stdout))
	if m == nil || strings.Join(m[1:], ".") != adapters.ContractRelease {
		t.Fatalf("the plugin's gate reads %q from %q", m, flag.stdout)
	}
	want := `{"version":"0.15.13+go","release":"0.15.13","build":"go","go":"` + runtime.Version() +
		`","commit":"","dirty":false,"platform":"` + runtime.GOOS + "/" + runtime.GOARCH + `"}` + "\n"
	for _, args := range [][]string{{"--json", "--version"}, {"--version", "--json"}, {"--json", "version"}, {"version", "--json"}} {
		r := runCLI(t, "", args...)
		if r.code != 0 || r.stdout != want {
			t.Errorf("%v: %+v", args, r)
		}
		var v versionJSON
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Release+"+"+v.Build != v.Version {
			t.Errorf("%v: %+v %v", args, v, err)
		}
	}
	for _, args := range [][]string{{"--version", "status"}, {"version", "x"}, {"integrations", "status", "--version"}} {
		if r := runCLI(t, "", args...); r.code != exitError || r.stdout != "" || r.stderr == "" {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if r := runCLI(t, "", "--help"); !strings.Contains(r.stdout, "tree-ring [--json] --version") {
		t.Errorf("help does not mention --version:\n%s", r.stdout)
	}
}

// The manifest init publishes and the ledger's store.initialized record the
// same version as --version.
func TestManifestCLIVersion(t *testing.T) {
	p := newHP(t)
	p.init()
	if m := p.manifestOf(); m.CLIVersion != Version() {
		t.Errorf("activation.json cli_version %q, want %q", m.CLIVersion, Version())
	}
	if ev := p.ok("", "events", "--stream", "store"); !strings.Contains(ev, `"cli_version":"`+Version()+`"`) {
		t.Errorf("store events: %s", ev)
	}
}

// The interrupt handler is installed for a command that does work, whose
// context it cancels, and never for what only prints: --version, version,
// help, usage errors.
func TestInterruptsOnlyForWork(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--version"}, false},
		{[]string{"version"}, false},
		{[]string{"--help"}, false},
		{[]string{"no-such-command"}, false},
		{[]string{"init"}, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			installed, stopped := false, false
			d := testDeps()
			d.Interrupts = func(ctx context.Context) (context.Context, context.CancelFunc) {
				installed = true
				ctx, cancel := context.WithCancel(ctx)
				cancel() // as if SIGINT arrived at once
				return ctx, func() { stopped = true }
			}
			dir := t.TempDir()
			args := append([]string{"--root", filepath.Join(dir, ".tree-ring"), "--source-root", dir}, tc.args...)
			var out, errb bytes.Buffer
			code := mainWith(context.Background(), args, IO{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}, d)
			if installed != tc.want || stopped != tc.want {
				t.Fatalf("installed %v, stopped %v, want %v", installed, stopped, tc.want)
			}
			if tc.want && code != exitCanceled {
				t.Fatalf("exit %d (%s), want %d: the command runs on the handler's context", code, errb.String(), exitCanceled)
			}
		})
	}
}

// An instant command reads no project: version works from a working
// directory that no longer exists and never looks it up, where a command
// that reads the project fails.
func TestInstantCommandsSkipTheProject(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		wantCode int
		wantCwd  bool
	}{
		{[]string{"version"}, 0, false},
		{[]string{"--json", "version"}, 0, false},
		{[]string{"version", "--log-level", "debug"}, 0, false},
		{[]string{"version", "--log-level", "loud"}, exitError, false},
		{[]string{"runs"}, exitError, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			asked := false
			gone := func() (string, error) { asked = true; return "", fs.ErrNotExist }
			var out, errb bytes.Buffer
			code := mainWith(context.Background(), tc.args, IO{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Getwd: gone}, testDeps())
			if code != tc.wantCode || asked != tc.wantCwd {
				t.Fatalf("exit %d (%s), working directory asked %v; want %d, %v", code, errb.String(), asked, tc.wantCode, tc.wantCwd)
			}
			if tc.wantCode == 0 && !strings.Contains(out.String(), Version()) {
				t.Fatalf("stdout %q", out.String())
			}
			if tc.wantCwd && !strings.Contains(errb.String(), "working directory no longer exists") {
				t.Fatalf("stderr %q", errb.String())
			}
		})
	}
}
