package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/tree-ring/tree-ring/adapters"
)

// Version is this build's version (docs/versioning.md): the Tree Ring
// release whose wire contract we implement, adapters.ContractRelease, with
// our own build identity as semver build metadata, e.g.
// 0.15.13+go.208278ab3277. `tree-ring --version`, `tree-ring version`, the
// manifest's cli_version and the export header carry it. Computed on
// first use (safe for concurrent callers): reading the build info, ~20 k
// instructions, is paid only by the commands that print or record the
// version, not at every start-up (the hooks).
var Version = sync.OnceValue(func() string { return buildVersion(adapters.ContractRelease, buildInfo()) })

// stampRevision and stampModified are the VCS stamp .ci/release sets
// with -ldflags -X (the commit, "true" for a dirty tree): Go records none
// under -buildvcs=false (set on the CI machine) nor in a git worktree.
var stampRevision, stampModified string

// buildInfo is the binary's build information, with the -X stamp as its
// vcs settings when Go recorded none.
func buildInfo() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	if bi == nil || stampRevision == "" {
		return bi
	}
	if rev, _ := vcsStamp(bi); rev == "" {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.revision", Value: stampRevision},
			debug.BuildSetting{Key: "vcs.modified", Value: stampModified})
	}
	return bi
}

// buildVersion is release+metadata. The metadata always starts with "go"
// (this Go implementation, not the Rust one of the same release), then
// what identifies the build: the first 12 hex digits of the VCS revision Go
// stamped into the binary (".dirty" when the tree had changes), else the
// module version of a `go install ...@version` build, else nothing more.
// Characters outside semver's [0-9A-Za-z-] become "-", so the result is
// always valid semver and one field for the plugin's version regex.
func buildVersion(release string, bi *debug.BuildInfo) string {
	meta := []string{"go"}
	rev, dirty := vcsStamp(bi)
	switch {
	case rev != "":
		meta = append(meta, semverIdent(rev[:min(len(rev), 12)]))
		if dirty {
			meta = append(meta, "dirty")
		}
	case bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)":
		for _, part := range strings.Split(bi.Main.Version, ".") {
			meta = append(meta, semverIdent(part))
		}
	}
	return release + "+" + strings.Join(meta, ".")
}

// vcsStamp is the VCS revision Go stamped into the binary ("" when it
// carries none: -buildvcs=false, go run, test binaries) and whether the
// tree had uncommitted changes.
func vcsStamp(bi *debug.BuildInfo) (rev string, dirty bool) {
	if bi == nil {
		return "", false
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return rev, dirty
}

// semverIdent maps s onto one non-empty semver build identifier.
func semverIdent(s string) string {
	id := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' {
			return r
		}
		return '-'
	}, s)
	if id == "" {
		return "-"
	}
	return id
}

func init() {
	register("version", "", "print the version: the Tree Ring release whose contract this core implements, +build metadata (same as --version)", runVersion).instant = true
}

func runVersion(_ context.Context, g *Globals, _ *noOptions, args []string) error {
	if len(args) > 0 {
		return usagef("version takes no arguments")
	}
	return printVersion(g)
}

// versionJSON is `--json version` and `--json --version`.
type versionJSON struct {
	Version string `json:"version"` // the line's version: release+build
	Release string `json:"release"` // the Tree Ring release whose wire contract we implement
	Build   string `json:"build"`   // our build identity (the semver build metadata)
	Go      string `json:"go"`      // the Go toolchain that built this binary
	// Commit is the full VCS revision stamped into the binary ("" when it
	// carries none); Dirty, that the tree had uncommitted changes.
	Commit   string `json:"commit"`
	Dirty    bool   `json:"dirty"`
	Platform string `json:"platform"` // GOOS/GOARCH, e.g. linux/amd64
}

// printVersion prints the one version line, "tree-ring <Version>", the
// form the Agent Zero plugin's version gate parses; `--version` and the
// version command both use it.
func printVersion(g *Globals) error {
	if g.JSON {
		release, build, _ := strings.Cut(Version(), "+")
		commit, dirty := vcsStamp(buildInfo())
		return writeJSON(g.Stdout, versionJSON{Version: Version(), Release: release, Build: build, Go: runtime.Version(),
			Commit: commit, Dirty: dirty, Platform: runtime.GOOS + "/" + runtime.GOARCH})
	}
	_, err := g.Stdout.Write([]byte("tree-ring " + Version() + "\n"))
	return err
}
