package activation

import (
	"slices"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
)

// Guidance splits the guidance files on disk (path to SHA-256, as
// adapters.GuidanceOnDisk reads them) against the last guidance.recorded
// (recorded): ours are the files holding this build's bytes, an earlier
// build's (adapters.EarlierGuidance: a store from before the record) or the
// bytes recorded for their path, which init records; foreign are the others,
// in path order, each the conflict of every bridge that points agents at
// guidance (adapters.Adapter.PointsAtGuidance). An absent file is neither
// (init creates it). changed reports whether ours differs from recorded,
// so that init records only a change.
func Guidance(recorded []events.FileDigest, disk map[string]string) (ours []events.FileDigest, foreign []adapters.Finding, changed bool) {
	was := map[string]string{}
	for _, f := range recorded {
		was[f.Path] = f.SHA256
	}
	for _, f := range adapters.GuidanceFiles() {
		have, ok := disk[f.Path]
		switch {
		case !ok:
		case have == adapters.SHA256Hex(f.Data) || have == was[f.Path] || adapters.EarlierGuidance(f.Path, have):
			ours = append(ours, events.FileDigest{Path: f.Path, SHA256: have})
		default:
			foreign = append(foreign, adapters.ForeignGuidanceFinding(f.Path))
		}
	}
	slices.SortFunc(ours, func(a, b events.FileDigest) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(foreign, func(a, b adapters.Finding) int { return strings.Compare(a.Path, b.Path) })
	return ours, foreign, !slices.Equal(ours, sortedDigests(recorded))
}

func sortedDigests(fs []events.FileDigest) []events.FileDigest {
	out := slices.Clone(fs)
	slices.SortFunc(out, func(a, b events.FileDigest) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// GuidanceNext is the step of a harness held back by foreign guidance
// files: what each one is, then the repair.
func GuidanceNext(foreign []adapters.Finding) string {
	ds := make([]string, 0, len(foreign)+1)
	paths := make([]string, len(foreign))
	for i, f := range foreign {
		ds = append(ds, f.Detail)
		paths[i] = f.Path
	}
	return strings.Join(append(ds, adapters.GuidanceRepair(paths)), " ")
}
