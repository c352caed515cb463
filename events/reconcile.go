package events

import (
	"errors"
	"slices"
)

// Reconciliation (`integrations reconcile --apply`, docs/reconcile.md):
// the user's explicit, recorded decision to let Tree Ring replace its own
// activation manifest, which init and activate only ever create.
const TypeManifestReconciled = "manifest.reconciled"

func init() { register[ManifestReconciled](TypeManifestReconciled, 1, StoreStream) }

// ManifestReconciled records that activation.json, which held the bytes
// with digest PreviousSHA256, was replaced by the bytes with digest SHA256
// (the manifest.published after it records them as the manifest). Changed
// are the harness ids whose record was added, changed or removed. No
// content and no absolute path.
type ManifestReconciled struct {
	Path           string   `json:"path"`
	PreviousSHA256 string   `json:"previous_sha256"`
	SHA256         string   `json:"sha256"`
	Changed        []string `json:"changed"`
}

// Check validates the digests and the harness list.
func (p ManifestReconciled) Check() error {
	switch {
	case p.Path == "":
		return errors.New("path is empty")
	case !isHex64(p.PreviousSHA256) || !isHex64(p.SHA256):
		return errors.New("a digest is not 64 lowercase hex")
	case p.PreviousSHA256 == p.SHA256:
		return errors.New("the manifest did not change")
	case len(p.Changed) == 0 || len(p.Changed) > maxAdoptedHarnesses || !slices.IsSorted(p.Changed):
		return errors.New("changed must list the harness ids, sorted")
	}
	return nil
}
