package adapters

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/strictjson"
	"github.com/tree-ring/tree-ring/fsm"
)

// Protocol constants.
const (
	SchemaVersion   = 1
	ProtocolVersion = 1
)

// Manifest is .tree-ring/activation.json, schema and protocol version 1.
// Field order is the wire order.
type Manifest struct {
	SchemaVersion          int               `json:"schema_version"`
	ProtocolVersion        int               `json:"protocol_version"`
	StoreID                string            `json:"store_id"`
	ProjectRootFingerprint string            `json:"project_root_fingerprint"`
	CLIVersion             string            `json:"cli_version"`
	Harnesses              map[string]Record `json:"harnesses"`
}

// Record is one adapter's activation record in the manifest: the contract
// preflight verifies (version, capability, bridge fingerprint, owned files,
// managed blocks) and the adapter's state before proof.
type Record struct {
	State             string               `json:"state"`
	AdapterVersion    string               `json:"adapter_version"`
	AdapterCapability string               `json:"adapter_capability"`
	BridgeFingerprint string               `json:"bridge_fingerprint,omitempty"`
	BridgePath        string               `json:"bridge_path,omitempty"`
	OwnedFiles        []events.FileDigest  `json:"owned_files,omitempty"`
	ManagedBlocks     []events.BlockDigest `json:"managed_blocks,omitempty"`
}

// normalize sorts files and blocks into fingerprint order so that equal
// records encode to equal bytes.
func (r *Record) normalize() {
	sort.Slice(r.OwnedFiles, func(i, j int) bool {
		a, b := r.OwnedFiles[i], r.OwnedFiles[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.SHA256 < b.SHA256
	})
	sort.Slice(r.ManagedBlocks, func(i, j int) bool { return blockLess(r.ManagedBlocks[i], r.ManagedBlocks[j]) })
}

// Equal reports whether two records state the same contract, ignoring the
// order of files and blocks.
func (r Record) Equal(o Record) bool {
	a, b := r, o
	a.OwnedFiles, b.OwnedFiles = slices.Clone(a.OwnedFiles), slices.Clone(b.OwnedFiles)
	a.ManagedBlocks, b.ManagedBlocks = slices.Clone(a.ManagedBlocks), slices.Clone(b.ManagedBlocks)
	a.normalize()
	b.normalize()
	return a.State == b.State && a.AdapterVersion == b.AdapterVersion && a.AdapterCapability == b.AdapterCapability &&
		a.BridgeFingerprint == b.BridgeFingerprint && a.BridgePath == b.BridgePath &&
		slices.Equal(a.OwnedFiles, b.OwnedFiles) && slices.Equal(a.ManagedBlocks, b.ManagedBlocks)
}

// RecordOf converts a contract as the ledger states it to the manifest's
// wire record, files and blocks in fingerprint order.
func RecordOf(c events.BridgeContract) Record {
	r := Record{
		State: c.RecordState, AdapterVersion: c.AdapterVersion, AdapterCapability: c.Capability,
		BridgeFingerprint: c.BridgeFingerprint, BridgePath: c.BridgePath,
	}
	if len(c.OwnedFiles) > 0 {
		r.OwnedFiles = slices.Clone(c.OwnedFiles)
	}
	if len(c.ManagedBlocks) > 0 {
		r.ManagedBlocks = slices.Clone(c.ManagedBlocks)
	}
	r.normalize()
	return r
}

// ContractOf is the inverse of RecordOf: the contract an event states.
func ContractOf(r Record) events.BridgeContract {
	c := events.BridgeContract{
		AdapterVersion: r.AdapterVersion, Capability: r.AdapterCapability, BridgeFingerprint: r.BridgeFingerprint,
		BridgePath: r.BridgePath, RecordState: r.State,
		OwnedFiles: append([]events.FileDigest{}, r.OwnedFiles...), ManagedBlocks: append([]events.BlockDigest{}, r.ManagedBlocks...),
	}
	return c
}

// ManifestOf materializes the manifest of a store (its id and project root
// fingerprint) from the records the ledger folds, stating cliVersion. The
// bytes to publish are ManifestOf(...).Encode().
func ManifestOf(storeID, rootFingerprint, cliVersion string, records map[string]events.BridgeRecord) Manifest {
	m := Manifest{
		SchemaVersion: SchemaVersion, ProtocolVersion: ProtocolVersion,
		StoreID: storeID, ProjectRootFingerprint: rootFingerprint, CLIVersion: cliVersion,
		Harnesses: make(map[string]Record, len(records)),
	}
	for id, r := range records {
		m.Harnesses[id] = RecordOf(r.Contract)
	}
	return m
}

// Paths lists the files the record owns or manages blocks in, sorted, unique.
func (r Record) Paths() []string {
	var ps []string
	for _, f := range r.OwnedFiles {
		ps = append(ps, f.Path)
	}
	for _, b := range r.ManagedBlocks {
		ps = append(ps, b.Path)
	}
	return sortedUnique(ps)
}

// Differs lists the paths whose owned file or managed block one of r and o
// records and the other does not record the same way, sorted.
func (r Record) Differs(o Record) []string {
	ps := oneSided(r.OwnedFiles, o.OwnedFiles, func(f events.FileDigest) string { return f.Path })
	ps = append(ps, oneSided(r.ManagedBlocks, o.ManagedBlocks, func(b events.BlockDigest) string { return b.Path })...)
	return sortedUnique(ps)
}

// oneSided is the path of every element in exactly one of a and b.
func oneSided[T comparable](a, b []T, path func(T) string) []string {
	var ps []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			ps = append(ps, path(x))
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			ps = append(ps, path(x))
		}
	}
	return ps
}

// Encode returns the manifest's published bytes: pretty JSON (two-space
// indentation, harnesses sorted by id, files and blocks in fingerprint
// order) and a trailing newline.
func (m Manifest) Encode() []byte {
	c := m
	c.Harnesses = make(map[string]Record, len(m.Harnesses))
	for id, r := range m.Harnesses {
		r.OwnedFiles = slices.Clone(r.OwnedFiles)
		r.ManagedBlocks = slices.Clone(r.ManagedBlocks)
		r.normalize()
		c.Harnesses[id] = r
	}
	return prettyJSON(c)
}

// SemanticallyEqual reports whether two manifests state the same activation:
// the same versions, store, project root and harness records. cli_version is
// informational (a binary update is not a hook upgrade) and not compared.
func (m Manifest) SemanticallyEqual(o Manifest) bool {
	if m.SchemaVersion != o.SchemaVersion || m.ProtocolVersion != o.ProtocolVersion ||
		m.StoreID != o.StoreID || m.ProjectRootFingerprint != o.ProjectRootFingerprint ||
		len(m.Harnesses) != len(o.Harnesses) {
		return false
	}
	for id, r := range m.Harnesses {
		q, ok := o.Harnesses[id]
		if !ok || !r.Equal(q) {
			return false
		}
	}
	return true
}

// ManifestError reports why a manifest was rejected.
type ManifestError struct{ Reason string }

func (e *ManifestError) Error() string { return "activation manifest: " + e.Reason }

func manifestErr(format string, a ...any) error {
	return &ManifestError{Reason: fmt.Sprintf(format, a...)}
}

// DecodeManifest strictly decodes and validates a manifest from disk: at
// most MaxBridgeFileBytes; no unknown or duplicate keys at any level (named);
// every required field present; schema and protocol version 1; a version-4
// store id; 64-hex digests; project-relative paths; registered harness ids
// whose files and blocks are on their adapter's allow-list; a bridge_path
// the record owns; valid separators; no path owned twice or both as a file
// and as a block. adapter_version defaults to "1" when absent.
func DecodeManifest(data []byte) (Manifest, error) {
	if len(data) > MaxBridgeFileBytes {
		return Manifest{}, manifestErr("larger than %d bytes", MaxBridgeFileBytes)
	}
	var raw rawManifest
	if err := strictjson.Unmarshal(data, &raw); err != nil {
		var uk *strictjson.UnknownKeyError
		if errors.As(err, &uk) {
			return Manifest{}, manifestErr("unknown key %q", uk.Key)
		}
		return Manifest{}, &ManifestError{Reason: err.Error()}
	}
	m, err := raw.head()
	if err != nil {
		return Manifest{}, err
	}
	for id, rr := range *raw.Harnesses {
		r, err := rr.record(id)
		if err != nil {
			return Manifest{}, err
		}
		m.Harnesses[id] = r
	}
	return m, nil
}

// head reads and checks the manifest's members but its harnesses.
func (raw rawManifest) head() (Manifest, error) {
	switch {
	case raw.SchemaVersion == nil:
		return Manifest{}, manifestErr("missing key %q", "schema_version")
	case raw.ProtocolVersion == nil:
		return Manifest{}, manifestErr("missing key %q", "protocol_version")
	case raw.StoreID == nil:
		return Manifest{}, manifestErr("missing key %q", "store_id")
	case raw.ProjectRootFingerprint == nil:
		return Manifest{}, manifestErr("missing key %q", "project_root_fingerprint")
	case raw.CLIVersion == nil:
		return Manifest{}, manifestErr("missing key %q", "cli_version")
	case raw.Harnesses == nil:
		return Manifest{}, manifestErr("missing key %q", "harnesses")
	}
	m := Manifest{
		SchemaVersion: *raw.SchemaVersion, ProtocolVersion: *raw.ProtocolVersion, StoreID: *raw.StoreID,
		ProjectRootFingerprint: *raw.ProjectRootFingerprint, CLIVersion: *raw.CLIVersion,
		Harnesses: make(map[string]Record, len(*raw.Harnesses)),
	}
	if m.SchemaVersion != SchemaVersion || m.ProtocolVersion != ProtocolVersion {
		return Manifest{}, manifestErr("schema_version %d / protocol_version %d: want 1 / 1", m.SchemaVersion, m.ProtocolVersion)
	}
	if !ValidStoreID(m.StoreID) {
		return Manifest{}, manifestErr("store_id is not a hyphenated version-4 UUID")
	}
	if !isHex64(m.ProjectRootFingerprint) {
		return Manifest{}, manifestErr("project_root_fingerprint is not 64 lowercase hex")
	}
	if err := checkIdent("cli_version", m.CLIVersion); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// rawManifest detects missing required keys.
type rawManifest struct {
	SchemaVersion          *int                  `json:"schema_version"`
	ProtocolVersion        *int                  `json:"protocol_version"`
	StoreID                *string               `json:"store_id"`
	ProjectRootFingerprint *string               `json:"project_root_fingerprint"`
	CLIVersion             *string               `json:"cli_version"`
	Harnesses              *map[string]rawRecord `json:"harnesses"`
}

// rawRecord detects missing required keys.
type rawRecord struct {
	State             *string         `json:"state"`
	AdapterVersion    *string         `json:"adapter_version"`
	AdapterCapability *string         `json:"adapter_capability"`
	BridgeFingerprint *string         `json:"bridge_fingerprint"`
	BridgePath        *string         `json:"bridge_path"`
	OwnedFiles        []rawOwnedFile  `json:"owned_files"`
	ManagedBlocks     []rawManagedBlk `json:"managed_blocks"`
}

type rawOwnedFile struct {
	Path   *string `json:"path"`
	SHA256 *string `json:"sha256"`
}

type rawManagedBlk struct {
	Path             *string `json:"path"`
	BlockID          *string `json:"block_id"`
	SHA256           *string `json:"sha256"`
	LeadingSeparator *string `json:"leading_separator"`
}

func (rr rawRecord) record(id string) (Record, error) {
	if err := checkIdent("harness id", id); err != nil {
		return Record{}, err
	}
	a, ok := Lookup(id)
	if !ok {
		return Record{}, manifestErr("harness %q is not a registered adapter", id)
	}
	r, err := rr.head()
	if err == nil {
		err = rr.owned(a, &r)
	}
	if err != nil {
		return Record{}, manifestErr("harness %s: %v", id, err)
	}
	r.normalize()
	return r, nil
}

// head reads and checks the record's scalar members.
func (rr rawRecord) head() (Record, error) {
	if rr.State == nil {
		return Record{}, fmt.Errorf("missing key %q", "state")
	}
	if rr.AdapterCapability == nil {
		return Record{}, fmt.Errorf("missing key %q", "adapter_capability")
	}
	r := Record{State: *rr.State, AdapterVersion: "1", AdapterCapability: *rr.AdapterCapability}
	setPresent(&r.AdapterVersion, rr.AdapterVersion)
	setPresent(&r.BridgeFingerprint, rr.BridgeFingerprint)
	setPresent(&r.BridgePath, rr.BridgePath)
	if !fsm.Valid(fsm.State(r.State)) {
		return Record{}, fmt.Errorf("state %q is not an activation state", r.State)
	}
	switch Capability(r.AdapterCapability) {
	case NativePreflight, WrapperPreflight, GuidanceOnly:
	default:
		return Record{}, fmt.Errorf("adapter_capability %q is not a capability", r.AdapterCapability)
	}
	if err := checkIdent("adapter_version", r.AdapterVersion); err != nil {
		return Record{}, err
	}
	if r.BridgeFingerprint != "" && !isHex64(r.BridgeFingerprint) {
		return Record{}, errors.New("bridge_fingerprint is not 64 lowercase hex")
	}
	return r, nil
}

// setPresent sets *dst to an optional member that is present.
func setPresent(dst, src *string) {
	if src != nil {
		*dst = *src
	}
}

// owned reads and checks the record's owned files, managed blocks and
// bridge path into r: each on a's allow-list, no path owned twice or both
// as a file and as a block, the bridge path one of them.
func (rr rawRecord) owned(a *Adapter, r *Record) error {
	seen := map[string]string{}
	own := func(p, as string) error {
		if prev, dup := seen[p]; dup && (prev != as || as == "file") {
			return fmt.Errorf("%s is owned both as %s and as %s", p, prev, as)
		}
		seen[p] = as
		return nil
	}
	for _, f := range rr.OwnedFiles {
		fd, err := f.digest(a)
		if err == nil {
			err = own(fd.Path, "file")
		}
		if err != nil {
			return err
		}
		r.OwnedFiles = append(r.OwnedFiles, fd)
	}
	blockIDs := map[[2]string]bool{}
	for _, b := range rr.ManagedBlocks {
		mb, err := b.digest(a)
		if err != nil {
			return err
		}
		key := [2]string{mb.Path, mb.BlockID}
		if blockIDs[key] {
			return fmt.Errorf("managed block %s#%s is listed twice", mb.Path, mb.BlockID)
		}
		blockIDs[key] = true
		if err := own(mb.Path, "block"); err != nil {
			return err
		}
		r.ManagedBlocks = append(r.ManagedBlocks, mb)
	}
	if r.BridgePath != "" {
		if err := CheckRelPath(r.BridgePath); err != nil {
			return fmt.Errorf("bridge_path: %v", err)
		}
		if _, ok := seen[r.BridgePath]; !ok {
			return fmt.Errorf("bridge_path %s is not one of the record's owned paths", r.BridgePath)
		}
	}
	return nil
}

// digest checks an owned file of a's record.
func (f rawOwnedFile) digest(a *Adapter) (events.FileDigest, error) {
	if f.Path == nil || f.SHA256 == nil {
		return events.FileDigest{}, errors.New("owned file without path or sha256")
	}
	fd := events.FileDigest{Path: *f.Path, SHA256: *f.SHA256}
	if err := CheckRelPath(fd.Path); err != nil {
		return fd, err
	}
	if !isHex64(fd.SHA256) {
		return fd, fmt.Errorf("owned file %s: sha256 is not 64 lowercase hex", fd.Path)
	}
	if !a.ownsFile(fd.Path) {
		return fd, fmt.Errorf("owned file %s is not on the adapter's allow-list", fd.Path)
	}
	return fd, nil
}

// digest checks a managed block of a's record.
func (b rawManagedBlk) digest(a *Adapter) (events.BlockDigest, error) {
	if b.Path == nil || b.BlockID == nil || b.SHA256 == nil {
		return events.BlockDigest{}, errors.New("managed block without path, block_id or sha256")
	}
	mb := events.BlockDigest{Path: *b.Path, BlockID: *b.BlockID, SHA256: *b.SHA256}
	if b.LeadingSeparator != nil {
		mb.LeadingSeparator = *b.LeadingSeparator
	}
	if err := CheckRelPath(mb.Path); err != nil {
		return mb, err
	}
	if err := checkIdent("block_id", mb.BlockID); err != nil {
		return mb, err
	}
	if !isHex64(mb.SHA256) {
		return mb, fmt.Errorf("managed block %s#%s: sha256 is not 64 lowercase hex", mb.Path, mb.BlockID)
	}
	if !ValidSeparator(mb.LeadingSeparator) {
		return mb, fmt.Errorf("managed block %s#%s: leading_separator must be \"\", \"\\n\" or \"\\n\\n\"", mb.Path, mb.BlockID)
	}
	if _, ok := a.blockTarget(mb.Path, mb.BlockID); !ok {
		return mb, fmt.Errorf("managed block %s#%s is not on the adapter's allow-list", mb.Path, mb.BlockID)
	}
	return mb, nil
}

// CheckRelPath accepts a clean, slash-separated, project-relative path of at
// most 256 bytes without "..", "." or empty components and without control
// characters or backslashes.
func CheckRelPath(p string) error {
	switch {
	case p == "" || len(p) > 256:
		return fmt.Errorf("path %q: must be 1..256 bytes", p)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q: must be project-relative", p)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q: not clean", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("path %q: bad component %q", p, c)
		}
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f || p[i] == '\\' {
			return fmt.Errorf("path %q: control character or backslash", p)
		}
	}
	return nil
}

// checkIdent applies the protocol's identifier rules: non-blank, at most 256
// bytes, no control characters, no '/' or '\', not "." or "..", and no
// coordinator capability prefix.
func checkIdent(what, s string) error {
	switch {
	case strings.TrimSpace(s) == "" || len(s) > 256:
		return manifestErr("%s: must be 1..256 non-blank bytes", what)
	case s == "." || s == "..":
		return manifestErr("%s: %q is not an identifier", what, s)
	case strings.Contains(s, "trcap_v1_"):
		return manifestErr("%s: contains a capability prefix", what)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '/' || r == '\\' {
			return manifestErr("%s: control character or path separator", what)
		}
	}
	return nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
