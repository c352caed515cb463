package adapters

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// ReasonForeignGuidance is the review of a bridge that would point agents
// at a guidance file under .tree-ring that this store did not record (a
// clone's .tree-ring/AGENTS.md, say): Tree Ring publishes no such pointer.
const ReasonForeignGuidance = "foreign_guidance"

// earlierGuidance are the SHA-256 digests of the guidance files that
// earlier builds of this program wrote (each version of adapters/content.go
// since the first, computed from its history), by path. A store initialized
// before guidance.recorded existed holds one of them and has no record
// naming it: its own text is not foreign. Add a line here whenever
// guidance text changes (TestEarlierGuidanceIsNotTheCurrent).
var earlierGuidance = map[string][]string{
	".tree-ring/SKILL.md": {"40fd3ae51b5fdbda56fef3952e0bbbd22065f0c3105af8bf643ad4e11914dbe2"},
	".tree-ring/CLI.md": {
		"a274c93cb3cef3808a96f1a3689602bcf03edcb50101d43fd8af0bd87a10f2a3",
		"29b41f00fd89f4da3eceab94b195ad02b44e5009a1d2aa5c04f879faa368fca0",
		"4b5ea66df13640287b58abb039409b20479c5f4095323ee35482dbf4150d69f8",
	},
}

// EarlierGuidance reports whether sum is the digest of the guidance file
// at path as an earlier build of this program wrote it.
func EarlierGuidance(path, sum string) bool {
	for _, s := range earlierGuidance[path] {
		if s == sum {
			return true
		}
	}
	return false
}

// maxGuidanceBytes bounds a guidance file read back; a larger one is not
// one Tree Ring wrote.
const maxGuidanceBytes = 1 << 20

// oversized is the digest GuidanceOnDisk gives a file past the bound: no
// SHA-256 is spelled so, so no record or build matches it.
const oversized = "oversized"

// GuidanceOnDisk reads the guidance files (GuidanceFiles' paths) under
// root: the SHA-256 of each one that exists, by path.
func GuidanceOnDisk(root *ProjectRoot) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range guidanceFiles {
		e, err := root.ReadFile(f.Path, maxGuidanceBytes)
		var tl *TooLargeError
		switch {
		case errors.As(err, &tl):
			out[f.Path] = oversized
		case err != nil:
			return nil, fmt.Errorf("read %s: %w", f.Path, err)
		case e.Exists:
			out[f.Path] = SHA256Hex(e.Data)
		}
	}
	return out, nil
}

// PointsAtGuidance reports whether a's bridge material names one of the
// guidance files (the skill bridge and the root AGENTS.md block tell agents
// to read them): such a bridge is published only while they are Tree
// Ring's.
func (a *Adapter) PointsAtGuidance() bool {
	if !a.Publishes() {
		return false
	}
	m := a.material(Context{})
	for _, g := range guidanceFiles {
		p := []byte(g.Path)
		for _, f := range m.Files {
			if bytes.Contains(f.Data, p) {
				return true
			}
		}
		for _, b := range m.Blocks {
			if bytes.Contains(b.Whole, p) {
				return true
			}
		}
	}
	return false
}

// ForeignGuidanceFinding is a guidance file this store did not record, as
// the conflict of every bridge that points at it; GuidanceRepair is the
// step.
func ForeignGuidanceFinding(path string) Finding {
	return Finding{Path: path, State: PathConflict, Reason: ReasonForeignGuidance,
		Detail: path + " was not written by this store (no record names its bytes: a clone or a copy brought it, or it was edited), and Tree Ring's bridges tell agents to read it."}
}

// GuidanceRepair is the step for foreign guidance files at paths: move them
// aside, init installs and records Tree Ring's, reconcile publishes.
func GuidanceRepair(paths []string) string {
	mv := make([]string, len(paths))
	for i, p := range paths {
		mv[i] = "`mv " + p + " " + p + ".review`"
	}
	return "Review them, move them aside (" + strings.Join(mv, ", ") + "; Tree Ring never replaces them) and run `tree-ring init`: it installs Tree Ring's and records their digests; then `tree-ring integrations reconcile --apply` publishes the bridges this review held back."
}
