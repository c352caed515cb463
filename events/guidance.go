package events

import (
	"errors"
	"strings"
)

// TypeGuidanceRecorded records the project-local guidance files
// (.tree-ring/AGENTS.md, SKILL.md, CLI.md) that are Tree Ring's: the ones
// init created, or found holding exactly what this build or an earlier
// record wrote. The bridges point agents at these files, so one that no
// record names (a clone's prompt injection) or that changed since is
// needs-user-review, and no bridge pointing at it is published
// (docs/adoption.md). Paths and digests only.
const TypeGuidanceRecorded = "guidance.recorded"

func init() { register[GuidanceRecorded](TypeGuidanceRecorded, 1, StoreStream) }

// GuidanceRecorded lists the guidance files and their digests, by path.
type GuidanceRecorded struct {
	Files []FileDigest `json:"files"`
}

// Check requires digests of files under .tree-ring.
func (p GuidanceRecorded) Check() error {
	if len(p.Files) > 16 {
		return errors.New("too many guidance files")
	}
	for _, f := range p.Files {
		if !strings.HasPrefix(f.Path, ".tree-ring/") || strings.Contains(f.Path, "..") || !isHex64(f.SHA256) {
			return errors.New("a guidance file is not a .tree-ring path with a SHA-256")
		}
	}
	return nil
}
