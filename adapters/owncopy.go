package adapters

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// PartialCopyError is one of Tree Ring's own files (the project-local
// binary, a guidance file) that holds a strict prefix of what this build
// installs, an empty file included: what a tree-ring older than atomic
// installation left when a write failed or the process was killed. It is
// recognised by comparing it with the bytes (and SHA-256) this build would
// write, never replaced (create-only); the message names the repair.
type PartialCopyError struct {
	Path       string
	Have, Want int
	WantSHA256 string
}

func (e *PartialCopyError) Error() string {
	return fmt.Sprintf("%s: a partial copy from an interrupted install (%d of %d bytes; SHA-256 of the full file %s); repair: remove %s and run `tree-ring init` again",
		e.Path, e.Have, e.Want, e.WantSHA256, e.Path)
}

// CheckOwnCopy compares the existing content have of Tree Ring's own file
// rel with the content want this build installs there: equal is nil, a
// strict prefix (empty included) is a *PartialCopyError, anything else is
// nil too (another version's complete file, kept as it is).
func CheckOwnCopy(rel string, have, want []byte) error {
	if len(have) >= len(want) || !bytes.HasPrefix(want, have) {
		return nil
	}
	sum := sha256.Sum256(want)
	return &PartialCopyError{Path: rel, Have: len(have), Want: len(want), WantSHA256: hex.EncodeToString(sum[:])}
}
