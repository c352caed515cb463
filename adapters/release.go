package adapters

import (
	"fmt"
	"strconv"
	"strings"
)

// ContractRelease is the Tree Ring release whose wire contract this core
// implements: the CLI surface, the manifest, receipt, binding and preflight
// shapes and the byte-exact context strings of the Rust tree-ring 0.15.13.
// It is what `tree-ring --version` reports before the build metadata, what
// the Agent Zero plugin's version gate reads, and the version an Agent Zero
// descriptor's series must contain. It moves only when this core implements
// a later release's contract (docs/versioning.md), never with our own
// builds; those are the build metadata.
const ContractRelease = "0.15.13"

// Release is a plain MAJOR.MINOR.PATCH release number (no pre-release or
// build part): the form of Tree Ring releases, a descriptor's
// tree_ring_version.min and a plugin_version.
type Release struct{ Major, Minor, Patch int }

// maxReleaseLen bounds what ParseRelease looks at: three numbers of at
// most six digits and two dots.
const maxReleaseLen = 20

// ParseRelease parses MAJOR.MINOR.PATCH: decimal numbers without a sign or
// a leading zero (except 0 itself), at most six digits each.
func ParseRelease(s string) (Release, error) {
	parts := strings.Split(clip(s), ".")
	if len(s) > maxReleaseLen || len(parts) != 3 {
		return Release{}, fmt.Errorf("%q is not a MAJOR.MINOR.PATCH release", clip(s))
	}
	var n [3]int
	for i, p := range parts {
		var err error
		if n[i], err = releaseNumber(p); err != nil {
			return Release{}, fmt.Errorf("%q is not a MAJOR.MINOR.PATCH release", s)
		}
	}
	return Release{n[0], n[1], n[2]}, nil
}

// ParseSeries parses a MAJOR.MINOR release series, with ParseRelease's
// number rules.
func ParseSeries(s string) (major, minor int, err error) {
	parts := strings.Split(clip(s), ".")
	if len(s) > maxReleaseLen || len(parts) != 2 {
		return 0, 0, fmt.Errorf("%q is not a MAJOR.MINOR series", clip(s))
	}
	if major, err = releaseNumber(parts[0]); err == nil {
		minor, err = releaseNumber(parts[1])
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%q is not a MAJOR.MINOR series", s)
	}
	return major, minor, nil
}

func releaseNumber(p string) (int, error) {
	if p == "" || len(p) > 6 || (len(p) > 1 && p[0] == '0') {
		return 0, strconv.ErrSyntax
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.Atoi(p)
}

// clip keeps an error message bounded when the input is not.
func clip(s string) string {
	if len(s) > maxReleaseLen {
		return s[:maxReleaseLen] + "..."
	}
	return s
}

// String is MAJOR.MINOR.PATCH.
func (r Release) String() string { return fmt.Sprintf("%d.%d.%d", r.Major, r.Minor, r.Patch) }

// Series is MAJOR.MINOR.
func (r Release) Series() string { return fmt.Sprintf("%d.%d", r.Major, r.Minor) }

// Compare orders releases: -1, 0 or +1.
func (r Release) Compare(o Release) int {
	for _, d := range [...]int{r.Major - o.Major, r.Minor - o.Minor, r.Patch - o.Patch} {
		switch {
		case d < 0:
			return -1
		case d > 0:
			return 1
		}
	}
	return 0
}

// Contract is ContractRelease parsed.
func Contract() Release {
	r, err := ParseRelease(ContractRelease)
	if err != nil {
		panic(err) // a constant: caught by every test
	}
	return r
}
