package adapters

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/tree-ring/tree-ring/events"
)

// Review reason codes: why publication stopped short of replacing anything.
// They are recorded in publication.review_required and
// bridge.drift_detected; docs/adapters/README.md explains each.
const (
	ReasonExistingFile      = "existing_file_needs_mutation"
	ReasonManagedConflict   = "managed_entry_conflict"
	ReasonMarkers           = "managed_markers_conflict"
	ReasonBlockChanged      = "managed_block_changed"
	ReasonMalformed         = "existing_file_malformed"
	ReasonSymlink           = "symlinked_target"
	ReasonNotRegular        = "not_a_regular_file"
	ReasonUnaccepted        = "managed_block_unaccepted"
	ReasonManifest          = "manifest_mutation"
	ReasonAdapterChanged    = "adapter_definition_changed"
	ReasonDurability        = "durability_indeterminate"
	ReasonDeactivation      = "deactivation_requested"
	ReasonBridgeFileChanged = "bridge_file_changed"
	ReasonPublicationFailed = "publication_failed"
	ReasonForeignProgram    = "foreign_program"
)

// PathState is how one piece of bridge material compares with disk.
type PathState int

// Path states.
const (
	// PathAbsent: the final path does not exist; publication creates it.
	PathAbsent PathState = iota + 1
	// PathMatch: disk already holds exactly this material.
	PathMatch
	// PathConflict: something exists that would need mutation, or cannot be
	// inspected safely; publication must not touch it.
	PathConflict
)

// Finding is the comparison of one file or block with disk.
type Finding struct {
	Path   string
	State  PathState
	Reason string // for PathConflict
	// Detail is a human explanation without file content.
	Detail string
	// Block is set for managed blocks (nil for complete files).
	Block *Block
	// File is set for complete files.
	File *File
	// Whole: the file holds exactly the block's Whole, the file Tree Ring
	// creates for it (so nothing in it is the user's).
	Whole bool
}

// Evaluate compares every file and block of m with what is on disk under
// root, in path order. It never writes. An I/O failure other than the
// typed conditions (symlink, not a directory or regular file, too large) is
// returned as an error.
func Evaluate(root *ProjectRoot, m Material) ([]Finding, error) {
	var out []Finding
	for i := range m.Files {
		f := &m.Files[i]
		e, err := root.ReadFile(f.Path, MaxBridgeFileBytes)
		fd := Finding{Path: f.Path, File: f}
		switch {
		case err != nil:
			if fd, err = inspectFailure(fd, err); err != nil {
				return nil, err
			}
		case !e.Exists:
			fd.State = PathAbsent
		case bytes.Equal(e.Data, f.Data):
			fd.State = PathMatch
		default:
			fd.State, fd.Reason = PathConflict, ReasonExistingFile
			fd.Detail = fmt.Sprintf("%s already exists with other content.", f.Path)
		}
		out = append(out, fd)
	}
	for i := range m.Blocks {
		b := &m.Blocks[i]
		e, err := root.ReadFile(b.Path, MaxBridgeFileBytes)
		fd := Finding{Path: b.Path, Block: b}
		switch {
		case err != nil:
			if fd, err = inspectFailure(fd, err); err != nil {
				return nil, err
			}
		case !e.Exists:
			fd.State = PathAbsent
		default:
			fd = inspectBlock(fd, b, e.Data)
			fd.Whole = b.Whole != nil && bytes.Equal(e.Data, b.Whole)
		}
		out = append(out, fd)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Resolve returns m with every file that has a Merged form and exists on
// disk with other bytes replaced by that block, so that Record and Evaluate
// describe the user's file holding Tree Ring's entries, not a file Tree
// Ring would create. A file that cannot be read safely stays as it is
// (Evaluate reports why). It never writes.
func Resolve(root *ProjectRoot, m Material) (Material, error) {
	return m.merge(func(f File) (bool, error) {
		e, err := root.ReadFile(f.Path, MaxBridgeFileBytes)
		if err != nil && !IsRootRefusal(err) {
			return false, fmt.Errorf("inspect %s: %w", f.Path, err)
		}
		return err == nil && e.Exists && !bytes.Equal(e.Data, f.Data), nil
	})
}

// Merged returns m with every file that has a Merged form replaced by it:
// the other record the same adapter definition may publish.
func (m Material) Merged() Material {
	out, _ := m.merge(func(File) (bool, error) { return true, nil })
	return out
}

// merge replaces each file with a Merged form by that block where use says so.
func (m Material) merge(use func(File) (bool, error)) (Material, error) {
	var files []File
	blocks := slices.Clone(m.Blocks)
	for _, f := range m.Files {
		if f.Merged != nil {
			ok, err := use(f)
			if err != nil {
				return Material{}, err
			}
			if ok {
				blocks = append(blocks, *f.Merged)
				continue
			}
		}
		files = append(files, f)
	}
	m.Files, m.Blocks = files, blocks
	return m, nil
}

func inspectBlock(fd Finding, b *Block, data []byte) Finding {
	fd.State = PathConflict
	switch b.Format {
	case MarkdownBlock:
		span, found, err := FindMarkdownBlock(data, b.ID)
		switch {
		case err != nil:
			fd.Reason = ReasonMarkers
			fd.Detail = fmt.Sprintf("%s has conflicting or incomplete Tree Ring managed markers.", b.Path)
		case !found:
			fd.Reason = ReasonExistingFile
			fd.Detail = fmt.Sprintf("%s already exists without the Tree Ring block; adding it would change the file.", b.Path)
		case bytes.Equal(data[span.Start:span.End], b.Digest):
			fd.State = PathMatch
		default:
			fd.Reason = ReasonBlockChanged
			fd.Detail = fmt.Sprintf("The Tree Ring block in %s differs from this adapter's block.", b.Path)
		}
	case ClaudeSettings, GeminiSettings, CodexHooks:
		st, err := settingsOf(b.Format).inspect(data)
		switch {
		case err != nil:
			fd.Reason, fd.Detail = ReasonMalformed, err.Error()+"."
		case st == SettingsExact:
			fd.State = PathMatch
		case st == SettingsNoEntries:
			fd.Reason = ReasonExistingFile
			fd.Detail = fmt.Sprintf("%s already exists without Tree Ring's handlers; adding them would change the file.", b.Path)
		default:
			fd.Reason = ReasonManagedConflict
			fd.Detail = fmt.Sprintf("%s holds Tree Ring handler entries that are partial, duplicated or differ from this adapter's.", b.Path)
		}
	default:
		fd.Reason, fd.Detail = ReasonExistingFile, fmt.Sprintf("%s: unknown block format.", b.Path)
	}
	return fd
}

func inspectFailure(fd Finding, err error) (Finding, error) {
	var sl *SymlinkError
	var nr *NotRegularError
	var nd *NotDirError
	var tl *TooLargeError
	fd.State = PathConflict
	switch {
	case errors.As(err, &sl):
		fd.Path, fd.Reason, fd.Detail = sl.Path, ReasonSymlink, err.Error()+"."
	case errors.As(err, &nr):
		fd.Path, fd.Reason, fd.Detail = nr.Path, ReasonNotRegular, err.Error()+"."
	case errors.As(err, &nd):
		fd.Path, fd.Reason, fd.Detail = nd.Path, ReasonNotRegular, err.Error()+"."
	case errors.As(err, &tl):
		fd.Reason, fd.Detail = ReasonExistingFile, err.Error()+"."
	default:
		return fd, fmt.Errorf("inspect %s: %w", fd.Path, err)
	}
	return fd, nil
}

// DiskRecord recomputes harness id's record from the material installed on
// disk: each owned file's SHA-256, each managed block's digest located in its
// file (a Markdown block's bytes from its begin marker to its end-marker
// line, checked to be preceded by its recorded separator; the Claude Code
// or Gemini CLI handler entries when they are exactly this adapter's), and the bridge
// fingerprint over those digests. changed lists the paths whose material is
// missing, unreadable or, for blocks, not locatable; the returned record
// then omits them and its fingerprint cannot match. Preflight and status
// compare the result with the manifest record: equal fingerprints mean the
// bridge on disk is the one the record describes.
func DiskRecord(root *ProjectRoot, id string, rec Record) (disk Record, changed []string, err error) {
	a, ok := Lookup(id)
	if !ok {
		return Record{}, nil, fmt.Errorf("unknown harness %q", id)
	}
	disk = rec
	disk.OwnedFiles, disk.ManagedBlocks = nil, nil
	for _, f := range rec.OwnedFiles {
		e, err := root.ReadFile(f.Path, MaxBridgeFileBytes)
		if err != nil || !e.Exists {
			if err != nil && !IsRootRefusal(err) {
				return Record{}, nil, err
			}
			changed = append(changed, f.Path)
			continue
		}
		disk.OwnedFiles = append(disk.OwnedFiles, events.FileDigest{Path: f.Path, SHA256: SHA256Hex(e.Data)})
	}
	for _, b := range rec.ManagedBlocks {
		t, ok := a.blockTarget(b.Path, b.BlockID)
		e, err := root.ReadFile(b.Path, MaxBridgeFileBytes)
		if !ok || err != nil || !e.Exists {
			if err != nil && !IsRootRefusal(err) {
				return Record{}, nil, err
			}
			changed = append(changed, b.Path)
			continue
		}
		var digest []byte
		switch t.Format {
		case MarkdownBlock:
			span, found, ferr := FindMarkdownBlock(e.Data, b.BlockID)
			if ferr == nil && found && HasLeadingSeparator(e.Data, span, b.LeadingSeparator) {
				digest = e.Data[span.Start:span.End]
			}
		case ClaudeSettings, GeminiSettings, CodexHooks:
			hs := settingsOf(t.Format)
			if st, serr := hs.inspect(e.Data); serr == nil && st == SettingsExact {
				digest = hs.digestInput()
			}
		}
		if digest == nil {
			changed = append(changed, b.Path)
			continue
		}
		disk.ManagedBlocks = append(disk.ManagedBlocks, events.BlockDigest{Path: b.Path, BlockID: b.BlockID, SHA256: SHA256Hex(digest), LeadingSeparator: b.LeadingSeparator})
	}
	disk.normalize()
	disk.BridgeFingerprint = BridgeFingerprint(id, rec.AdapterVersion, disk.OwnedFiles, disk.ManagedBlocks)
	return disk, sortedUnique(changed), nil
}

// LoadManifest reads and strictly decodes .tree-ring/activation.json under
// root. exists is false (with a nil error) when the file is absent; raw is
// the file's bytes for digesting.
func LoadManifest(root *ProjectRoot) (m Manifest, raw []byte, exists bool, err error) {
	e, err := root.ReadFile(ManifestPath, MaxBridgeFileBytes)
	if err != nil {
		return Manifest{}, nil, false, err
	}
	if !e.Exists {
		return Manifest{}, nil, false, nil
	}
	m, err = DecodeManifest(e.Data)
	return m, e.Data, true, err
}
