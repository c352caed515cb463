package adapters

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Pi's project trust, read read-only. Pi 0.73.1 (@mariozechner/pi-coding-agent)
// loads project extensions with no decision at all; from 0.79.0
// (@earendil-works/pi-coding-agent, through 1.6.0 observed) it skips them
// until the project, or a parent, is trusted in <agent dir>/trust.json, or
// the global settings' defaultProjectTrust is "always". So whether Pi runs
// the bridge depends on the installed version first: status finds `pi` on
// PATH, follows its symlink to the npm package and reads the package.json
// name and version (never running Pi).

// piGateVersion is the first Pi release with the project-trust gate (the
// project_trust event and trust.json arrived in 0.79.0).
var piGateVersion = [3]int{0, 79, 0}

// piPackages are the npm packages Pi ships as (before and after the move
// to earendil-works).
var piPackages = []string{"@mariozechner/pi-coding-agent", "@earendil-works/pi-coding-agent"}

func piKnownPackage(name string) bool {
	for _, p := range piPackages {
		if name == p {
			return true
		}
	}
	return false
}

// maxPackageWalk bounds the directories searched upward from Pi's entry
// script for its package.json (dist/cli.js sits one or two levels down).
const maxPackageWalk = 4

// piTrust is Pi's TrustCheck: Trusted when the installed Pi has no trust
// gate or its own settings trust the project; GateUnknown when no Pi
// version can be read; otherwise trust.json and defaultProjectTrust decide
// (TrustUnknown: no decision names the project, which Pi treats as
// untrusted). PATH, PI_CODING_AGENT_DIR and HOME only locate files.
func piTrust(getenv func(string) string, project string) TrustDecision {
	v, ok := piInstalledVersion(getenv("PATH"))
	if !ok {
		return GateUnknown
	}
	if !PiGated(v) {
		return Trusted
	}
	dir := getenv("PI_CODING_AGENT_DIR")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return TrustUnknown
		}
		dir = filepath.Join(home, ".pi", "agent")
	}
	if data, ok := readBounded(filepath.Join(dir, "trust.json")); ok {
		if d := PiTrustFor(data, project); d != TrustUnknown {
			return d
		}
	}
	if data, ok := readBounded(filepath.Join(dir, "settings.json")); ok && PiDefaultTrust(data) == "always" {
		return Trusted
	}
	return TrustUnknown
}

// piInstalledVersion finds the first `pi` on path (a PATH value) and reads
// the version of the Pi package it belongs to; ok is false when there is
// no pi, it is not one of Pi's packages, or its package.json is unreadable.
func piInstalledVersion(path string) (v [3]int, ok bool) {
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue // a relative PATH entry depends on the working directory
		}
		exe := filepath.Join(d, "pi")
		fi, err := os.Stat(exe)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		real, err := filepath.EvalSymlinks(exe)
		if err != nil {
			return v, false
		}
		return piPackageVersion(filepath.Dir(real))
	}
	return v, false
}

// piPackageVersion walks up from dir (at most maxPackageWalk levels) to
// the first package.json that names a package and reads Pi's version
// from it.
func piPackageVersion(dir string) (v [3]int, ok bool) {
	for i := 0; i < maxPackageWalk; i++ {
		if data, found := readBounded(filepath.Join(dir, "package.json")); found {
			if name, v, err := PiPackage(data); err == nil {
				return v, true
			} else if name != "" {
				return v, false // another package's entry point
			}
		}
		up := filepath.Dir(dir)
		if up == dir {
			break
		}
		dir = up
	}
	return v, false
}

// errNotPi is PiPackage's refusal.
type errNotPi string

func (e errNotPi) Error() string { return "not a Pi package.json: " + string(e) }

// PiPackage reads a package.json: name is its "name" ("" when it has none,
// as a dist/ package.json holding only "type" has none), and v its
// "version" when the name is one of Pi's packages and the version is
// strict MAJOR.MINOR.PATCH, optionally with a -prerelease or +build
// suffix. The other keys of a package.json are npm's and not ours to
// refuse; a document that is not one JSON object, a name or version that
// is not a string, or a malformed version is refused. Linear in data.
func PiPackage(data []byte) (name string, v [3]int, err error) {
	var doc map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return "", v, errNotPi("not a JSON object")
	}
	if dec.More() {
		return "", v, errNotPi("trailing data")
	}
	raw, ok := doc["name"]
	if !ok {
		return "", v, errNotPi("no name")
	}
	if json.Unmarshal(raw, &name) != nil {
		return "", v, errNotPi("name is not a string")
	}
	if !piKnownPackage(name) {
		return name, v, errNotPi("another package")
	}
	var version string
	if raw, ok := doc["version"]; !ok || json.Unmarshal(raw, &version) != nil {
		return name, v, errNotPi("version is not a string")
	}
	if v, ok = parseSemver(version); !ok {
		return name, v, errNotPi("malformed version")
	}
	return name, v, nil
}

// parseSemver parses MAJOR.MINOR.PATCH (decimal, no leading zeros, at
// most 9 digits each) with an optional -prerelease or +build suffix of
// [0-9A-Za-z.-] characters.
func parseSemver(s string) (v [3]int, ok bool) {
	core := s
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		core = s[:i]
		suffix := s[i+1:]
		if suffix == "" || strings.ContainsFunc(suffix, func(r rune) bool {
			return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '-' || r == '+')
		}) {
			return v, false
		}
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		if p == "" || len(p) > 9 || len(p) > 1 && p[0] == '0' || strings.ContainsFunc(p, func(r rune) bool { return r < '0' || r > '9' }) {
			return v, false
		}
		v[i], _ = strconv.Atoi(p)
	}
	return v, true
}

// PiGated reports whether Pi version v has the project-trust gate. A
// prerelease of 0.79.0 counts as gated: the gate is its feature.
func PiGated(v [3]int) bool {
	for i := range v {
		if v[i] != piGateVersion[i] {
			return v[i] > piGateVersion[i]
		}
	}
	return true
}

// PiTrustFor decides whether a Pi trust.json document trusts project (a
// canonical absolute path): it must be one JSON object whose keys are
// absolute paths and whose values are booleans (anything else is refused
// whole: TrustUnknown, nothing guessed); the saved decision for the
// project itself or its nearest parent wins, true Trusted and false
// Untrusted; none is TrustUnknown. Linear in the document.
func PiTrustFor(doc []byte, project string) TrustDecision {
	var rules map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(doc))
	if err := dec.Decode(&rules); err != nil || rules == nil || dec.More() {
		return TrustUnknown
	}
	best, decision := -1, TrustUnknown
	for path, raw := range rules {
		var trusted bool
		if !filepath.IsAbs(path) || json.Unmarshal(raw, &trusted) != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return TrustUnknown
		}
		clean := filepath.Clean(path)
		if !within(clean, project) || len(clean) <= best {
			continue
		}
		best, decision = len(clean), Untrusted
		if trusted {
			decision = Trusted
		}
	}
	return decision
}

// PiDefaultTrust is the defaultProjectTrust of a Pi settings document
// ("ask", "always" or "never"); "" when it is absent, not a string, not
// one of the three, or the document is not one JSON object. Only this key
// is read: the rest of Pi's settings are Pi's.
func PiDefaultTrust(settings []byte) string {
	var doc struct {
		DefaultProjectTrust *string `json:"defaultProjectTrust"`
	}
	if json.Unmarshal(settings, &doc) != nil || doc.DefaultProjectTrust == nil {
		return ""
	}
	switch s := *doc.DefaultProjectTrust; s {
	case "ask", "always", "never":
		return s
	}
	return ""
}

// piTrustStep is the step for Pi's trust decision d: the exact step where
// the installed Pi has the gate, one that covers both releases where its
// version is unknown.
func piTrustStep(d TrustDecision) string {
	const how = "run `pi --approve` in the project to load the extension for one run, or save the decision: " +
		"`/trust` in an interactive Pi session, or this project's canonical path with the value true in ~/.pi/agent/trust.json " +
		"($PI_CODING_AGENT_DIR/trust.json when set). Then open a new Pi session."
	if d == GateUnknown {
		return "Tree Ring could not read the installed Pi's version (no `pi` on PATH that resolves to Pi's npm package). " +
			"Pi 0.79 and later skip project extensions until the project is trusted in Pi itself (Tree Ring never changes Pi's trust settings): " +
			how + " Earlier Pi releases (0.73) have no trust gate: open a new Pi session."
	}
	return "The installed Pi skips this project's extensions until the project is trusted in Pi itself (Tree Ring never changes Pi's trust settings): " + how
}
