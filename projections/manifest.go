package projections

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tree-ring/tree-ring/events"
)

// ManifestName is the bucket of the manifest projection: what
// .tree-ring/activation.json states, read back as events-level values (the
// adapters package turns them into the wire manifest). It stores only its
// own structs, so that editing the wire struct cannot change these bytes;
// a test pins them.
//
// Keys: "store" (ManifestStore), "record/<harness>" (storedRecord),
// "published" (PublishedManifest), "adopted" (the adopted manifest's
// digest, after store.adopted), "program" (Program: the last
// program.installed; the installed program is what every bridge runs).
const ManifestName = "manifest"

// storedRecord is a harness's record as the projection stores it. Its
// layout is the one version 1 has always written (it matched the
// manifest's wire record, which the projection used to store directly):
// keeping it keeps every existing ledger's bytes and Version() unchanged.
// Files and blocks are in fingerprint order.
type storedRecord struct {
	Published bool `json:"published"`
	Record    struct {
		State             string               `json:"state"`
		AdapterVersion    string               `json:"adapter_version"`
		AdapterCapability string               `json:"adapter_capability"`
		BridgeFingerprint string               `json:"bridge_fingerprint,omitempty"`
		BridgePath        string               `json:"bridge_path,omitempty"`
		OwnedFiles        []events.FileDigest  `json:"owned_files,omitempty"`
		ManagedBlocks     []events.BlockDigest `json:"managed_blocks,omitempty"`
	} `json:"record"`
}

func storeRecord(r events.BridgeRecord) storedRecord {
	var s storedRecord
	c := r.Contract
	s.Published = r.Published
	s.Record.State, s.Record.AdapterVersion, s.Record.AdapterCapability = c.RecordState, c.AdapterVersion, c.Capability
	s.Record.BridgeFingerprint, s.Record.BridgePath = c.BridgeFingerprint, c.BridgePath
	s.Record.OwnedFiles = slices.Clone(c.OwnedFiles)
	s.Record.ManagedBlocks = slices.Clone(c.ManagedBlocks)
	slices.SortStableFunc(s.Record.OwnedFiles, func(a, b events.FileDigest) int { return strings.Compare(a.Path, b.Path) })
	slices.SortStableFunc(s.Record.ManagedBlocks, func(a, b events.BlockDigest) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.BlockID, b.BlockID))
	})
	return s
}

func (s storedRecord) bridgeRecord() events.BridgeRecord {
	return events.BridgeRecord{Published: s.Published, Contract: events.BridgeContract{
		AdapterVersion: s.Record.AdapterVersion, Capability: s.Record.AdapterCapability, BridgeFingerprint: s.Record.BridgeFingerprint,
		BridgePath: s.Record.BridgePath, OwnedFiles: s.Record.OwnedFiles, ManagedBlocks: s.Record.ManagedBlocks, RecordState: s.Record.State,
	}}
}

// ManifestStore is the store identity the manifest states.
type ManifestStore struct {
	StoreID                string `json:"store_id"`
	ProjectRootFingerprint string `json:"project_root_fingerprint"`
}

// PublishedManifest is the last manifest.published.
type PublishedManifest struct {
	SHA256     string   `json:"sha256"`
	CLIVersion string   `json:"cli_version,omitempty"`
	Harnesses  []string `json:"harnesses"`
}

// Program is the installed program as the last program.installed
// recorded it (Position is that event's).
type Program struct {
	Path string `json:"path"`
	events.ProgramIdentity
	Position uint64 `json:"position"`
}

// ProgramOf returns the recorded program; ok is false when none was
// recorded (a ledger from before programs were recorded).
func ProgramOf(kv KV) (Program, bool, error) {
	raw := kv.Get([]byte("program"))
	if raw == nil {
		return Program{}, false, nil
	}
	p, err := decodeJSON[Program](raw)
	if err != nil {
		return Program{}, false, fmt.Errorf("recorded program: %w", err)
	}
	return p, true, nil
}

// ManifestState is the folded manifest: the store identity and every
// harness's record, by harness id.
type ManifestState struct {
	ManifestStore
	Records map[string]events.BridgeRecord
}

type manifestProjection struct{}

func init() { register(manifestProjection{}) }

func (manifestProjection) Name() string { return ManifestName }
func (manifestProjection) Version() int { return 1 }

func (manifestProjection) Handles(t string) bool {
	switch t {
	case events.TypeStoreInitialized, events.TypeBridgePublished, events.TypePublicationReviewRequired, events.TypeManifestPublished,
		events.TypeStoreAdopted, events.TypeProgramInstalled, events.TypeStoreRootMoved:
		return true
	}
	return false
}

func (manifestProjection) Apply(kv KV, _ Bodies, e *events.Envelope) error {
	v, err := payloadOf(e)
	if err != nil {
		return err
	}
	put := func(key string, val any) error { return putJSON(kv, []byte(key), val) }
	switch p := v.(type) {
	case *events.StoreInitialized:
		return put("store", ManifestStore{StoreID: p.StoreID, ProjectRootFingerprint: p.ProjectRootFingerprint})
	case *events.ManifestPublished:
		return put("published", PublishedManifest{SHA256: p.SHA256, CLIVersion: p.CLIVersion, Harnesses: p.Harnesses})
	case *events.StoreAdopted:
		return put("adopted", p.ManifestSHA256)
	case *events.ProgramInstalled:
		return put("program", Program{Path: p.Path, ProgramIdentity: p.ProgramIdentity, Position: e.Position})
	case *events.StoreRootMoved:
		return moveRoot(kv, p)
	}
	if r, ok := events.BridgeRecordOf(v); ok {
		return put("record/"+strings.TrimPrefix(e.Stream, events.HarnessPrefix), storeRecord(r))
	}
	return nil
}

// moveRoot folds store.root_moved: the store identity names the new
// root. The move must start from the root the store names (its writer
// read it there), so a history that skips a move is refused, not guessed.
func moveRoot(kv KV, p *events.StoreRootMoved) error {
	m, ok, err := ManifestStoreOf(kv)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%s before %s", events.TypeStoreRootMoved, events.TypeStoreInitialized)
	case m.ProjectRootFingerprint != p.PreviousProjectRootFingerprint:
		return fmt.Errorf("%s from a project root the store does not name", events.TypeStoreRootMoved)
	}
	m.ProjectRootFingerprint = p.ProjectRootFingerprint
	return putJSON(kv, []byte("store"), m)
}

// Adopted reports whether the store adopted a manifest another writer
// left (store.adopted): that writer may still add receipt files, so no
// file the ledger did not record is removed as a stray.
func Adopted(kv KV) bool { return kv.Get([]byte("adopted")) != nil }

// ManifestRecordOf returns harness id's folded record, if any.
func ManifestRecordOf(kv KV, id string) (events.BridgeRecord, bool, error) {
	raw := kv.Get([]byte("record/" + id))
	if raw == nil {
		return events.BridgeRecord{}, false, nil
	}
	r, err := decodeJSON[storedRecord](raw)
	if err != nil {
		return events.BridgeRecord{}, false, fmt.Errorf("manifest record %s: %w", id, err)
	}
	return r.bridgeRecord(), true, nil
}

// LastPublished returns the last manifest.published, if any.
func LastPublished(kv KV) (PublishedManifest, bool, error) {
	raw := kv.Get([]byte("published"))
	if raw == nil {
		return PublishedManifest{}, false, nil
	}
	var p PublishedManifest
	if err := json.Unmarshal(raw, &p); err != nil {
		return PublishedManifest{}, false, fmt.Errorf("published manifest: %w", err)
	}
	return p, true, nil
}

// ManifestStoreOf returns only the store identity of the folded manifest
// (ok is false before store.initialized): one key, not every record, for
// the hook's ledger check.
func ManifestStoreOf(kv KV) (m ManifestStore, ok bool, err error) {
	raw := kv.Get([]byte("store"))
	if raw == nil {
		return ManifestStore{}, false, nil
	}
	if m, err = decodeJSON[ManifestStore](raw); err != nil {
		return ManifestStore{}, false, fmt.Errorf("manifest store: %w", err)
	}
	return m, true, nil
}

// ManifestOf returns the folded manifest; ok is false before
// store.initialized. adapters.ManifestOf materializes it as
// activation.json.
func ManifestOf(kv KV) (m ManifestState, ok bool, err error) {
	raw := kv.Get([]byte("store"))
	if raw == nil {
		return ManifestState{}, false, nil
	}
	if m.ManifestStore, err = decodeJSON[ManifestStore](raw); err != nil {
		return ManifestState{}, false, fmt.Errorf("manifest store: %w", err)
	}
	m.Records = map[string]events.BridgeRecord{}
	err = kv.ForEach([]byte("record/"), func(k, v []byte) error {
		r, err := decodeJSON[storedRecord](v)
		if err != nil {
			return fmt.Errorf("manifest record %s: %w", k, err)
		}
		m.Records[string(k[len("record/"):])] = r.bridgeRecord()
		return nil
	})
	return m, err == nil, err
}
