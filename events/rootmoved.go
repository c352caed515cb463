package events

import "errors"

// TypeStoreRootMoved records that the project a store belongs to now
// lives at another root: the directory was moved or copied (docs/reconcile.md,
// "A moved or copied project"). Only `integrations reconcile --apply`
// appends it, on the user's request; from it on, the store and its manifest
// name the new root, and no receipt bound to the previous one proves
// anything.
const TypeStoreRootMoved = "store.root_moved"

func init() { register[StoreRootMoved](TypeStoreRootMoved, 1, StoreStream) }

// StoreRootMoved carries the two root fingerprints (sha256 of the canonical
// root, never the path itself).
type StoreRootMoved struct {
	PreviousProjectRootFingerprint string `json:"previous_project_root_fingerprint"`
	ProjectRootFingerprint         string `json:"project_root_fingerprint"`
}

// Check requires two different fingerprints.
func (p StoreRootMoved) Check() error {
	switch {
	case !isHex64(p.PreviousProjectRootFingerprint) || !isHex64(p.ProjectRootFingerprint):
		return errors.New("a project root fingerprint is not 64 lowercase hex")
	case p.PreviousProjectRootFingerprint == p.ProjectRootFingerprint:
		return errors.New("the project root did not change")
	}
	return nil
}
