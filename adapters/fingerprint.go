package adapters

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
	"sort"

	"github.com/tree-ring/tree-ring/events"
)

// SHA256Hex is the lowercase hex SHA-256 of b: the digest form of every
// sha256 field in the manifest, events and receipts.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ProjectRootFingerprint is sha256(utf8(canonical project root)), the
// protocol's project_root_fingerprint. canonical must already be absolute
// with symlinks resolved (see CanonicalProjectRoot).
func ProjectRootFingerprint(canonical string) string { return SHA256Hex([]byte(canonical)) }

// CanonicalProjectRoot resolves dir to an absolute path without symlinks,
// the form the fingerprint is taken over.
func CanonicalProjectRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// BridgeFingerprint is the protocol-1 bridge fingerprint: the lowercase hex
// SHA-256 of a stream of fields, each an unsigned 64-bit big-endian length
// followed by the field's UTF-8 bytes. The stream is harness_id,
// adapter_version, then for each owned file sorted by (path, sha256) the
// fields "file", path, sha256, then for each managed block sorted by (path,
// block_id, sha256, leading_separator) the fields "block", path, block_id,
// sha256, leading_separator. An empty separator still contributes its
// zero length. No project root is included. The inputs are not modified.
func BridgeFingerprint(harnessID, adapterVersion string, files []events.FileDigest, blocks []events.BlockDigest) string {
	fs := append([]events.FileDigest(nil), files...)
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].Path != fs[j].Path {
			return fs[i].Path < fs[j].Path
		}
		return fs[i].SHA256 < fs[j].SHA256
	})
	bs := append([]events.BlockDigest(nil), blocks...)
	sort.Slice(bs, func(i, j int) bool { return blockLess(bs[i], bs[j]) })
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(harnessID)
	field(adapterVersion)
	for _, f := range fs {
		field("file")
		field(f.Path)
		field(f.SHA256)
	}
	for _, b := range bs {
		field("block")
		field(b.Path)
		field(b.BlockID)
		field(b.SHA256)
		field(b.LeadingSeparator)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func blockLess(a, b events.BlockDigest) bool {
	switch {
	case a.Path != b.Path:
		return a.Path < b.Path
	case a.BlockID != b.BlockID:
		return a.BlockID < b.BlockID
	case a.SHA256 != b.SHA256:
		return a.SHA256 < b.SHA256
	default:
		return a.LeadingSeparator < b.LeadingSeparator
	}
}
