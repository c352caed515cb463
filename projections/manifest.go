package projections

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
)

// ManifestName is the bucket of the manifest projection. Its
// materialization (Manifest) is .tree-ring/activation.json.
const ManifestName = "manifest"

// ManifestRecord is one harness's activation record as folded: Published
// when it comes from bridge.published, false when it is the planned contract
// of a harness awaiting the user's reconciliation.
type ManifestRecord struct {
	Published bool            `json:"published"`
	Record    adapters.Record `json:"record"`
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

type manifestProjection struct{}

func init() { register(manifestProjection{}) }

func (manifestProjection) Name() string { return ManifestName }
func (manifestProjection) Version() int { return 1 }

func (manifestProjection) Handles(t string) bool {
	switch t {
	case events.TypeStoreInitialized, events.TypeBridgePublished, events.TypePublicationReviewRequired, events.TypeManifestPublished:
		return true
	}
	return false
}

func (manifestProjection) Apply(kv KV, _ Bodies, e *events.Envelope) error {
	v, err := events.DecodePayload(e)
	if err != nil {
		return err
	}
	put := func(key string, val any) error {
		raw, err := json.Marshal(val)
		if err != nil {
			return err
		}
		return kv.Put([]byte(key), raw)
	}
	id := strings.TrimPrefix(e.Stream, events.HarnessPrefix)
	switch p := v.(type) {
	case *events.StoreInitialized:
		return put("store", ManifestStore{StoreID: p.StoreID, ProjectRootFingerprint: p.ProjectRootFingerprint})
	case *events.BridgePublished:
		c := p.Contract()
		if c.RecordState == "" {
			c.RecordState = p.To // events written before record_state existed
		}
		return put("record/"+id, ManifestRecord{Published: true, Record: RecordOf(c)})
	case *events.PublicationReviewRequired:
		if p.Planned == nil {
			return nil
		}
		return put("record/"+id, ManifestRecord{Record: RecordOf(*p.Planned)})
	case *events.ManifestPublished:
		return put("published", PublishedManifest{SHA256: p.SHA256, CLIVersion: p.CLIVersion, Harnesses: p.Harnesses})
	}
	return nil
}

// RecordOf converts an event's contract to a manifest record, files and
// blocks in fingerprint order.
func RecordOf(c events.BridgeContract) adapters.Record {
	r := adapters.Record{
		State: c.RecordState, AdapterVersion: c.AdapterVersion, AdapterCapability: c.Capability,
		BridgeFingerprint: c.BridgeFingerprint, BridgePath: c.BridgePath,
	}
	for _, f := range c.OwnedFiles {
		r.OwnedFiles = append(r.OwnedFiles, adapters.OwnedFile{Path: f.Path, SHA256: f.SHA256})
	}
	for _, b := range c.ManagedBlocks {
		r.ManagedBlocks = append(r.ManagedBlocks, adapters.ManagedBlock{Path: b.Path, BlockID: b.BlockID, SHA256: b.SHA256, LeadingSeparator: b.LeadingSeparator})
	}
	sort.Slice(r.OwnedFiles, func(i, j int) bool { return r.OwnedFiles[i].Path < r.OwnedFiles[j].Path })
	sort.Slice(r.ManagedBlocks, func(i, j int) bool {
		a, b := r.ManagedBlocks[i], r.ManagedBlocks[j]
		return a.Path < b.Path || a.Path == b.Path && a.BlockID < b.BlockID
	})
	return r
}

// ContractOf is the inverse of RecordOf.
func ContractOf(r adapters.Record) events.BridgeContract {
	c := events.BridgeContract{
		AdapterVersion: r.AdapterVersion, Capability: r.AdapterCapability, BridgeFingerprint: r.BridgeFingerprint,
		BridgePath: r.BridgePath, RecordState: r.State,
		OwnedFiles: []events.FileDigest{}, ManagedBlocks: []events.BlockDigest{},
	}
	for _, f := range r.OwnedFiles {
		c.OwnedFiles = append(c.OwnedFiles, events.FileDigest{Path: f.Path, SHA256: f.SHA256})
	}
	for _, b := range r.ManagedBlocks {
		c.ManagedBlocks = append(c.ManagedBlocks, events.BlockDigest{Path: b.Path, BlockID: b.BlockID, SHA256: b.SHA256, LeadingSeparator: b.LeadingSeparator})
	}
	return c
}

// ManifestRecordOf returns harness id's folded record, if any.
func ManifestRecordOf(kv KV, id string) (ManifestRecord, bool, error) {
	raw := kv.Get([]byte("record/" + id))
	if raw == nil {
		return ManifestRecord{}, false, nil
	}
	var r ManifestRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return ManifestRecord{}, false, fmt.Errorf("manifest record %s: %w", id, err)
	}
	return r, true, nil
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

// Manifest materializes the projection as the activation manifest, stating
// cliVersion; ok is false before store.initialized. The bytes to publish are
// Manifest(...).Encode().
func Manifest(kv KV, cliVersion string) (m adapters.Manifest, ok bool, err error) {
	raw := kv.Get([]byte("store"))
	if raw == nil {
		return adapters.Manifest{}, false, nil
	}
	var st ManifestStore
	if err := json.Unmarshal(raw, &st); err != nil {
		return adapters.Manifest{}, false, fmt.Errorf("manifest store: %w", err)
	}
	m = adapters.Manifest{
		SchemaVersion: adapters.SchemaVersion, ProtocolVersion: adapters.ProtocolVersion,
		StoreID: st.StoreID, ProjectRootFingerprint: st.ProjectRootFingerprint, CLIVersion: cliVersion,
		Harnesses: map[string]adapters.Record{},
	}
	err = kv.ForEach([]byte("record/"), func(k, v []byte) error {
		var r ManifestRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("manifest record %s: %w", k, err)
		}
		m.Harnesses[string(k[len("record/"):])] = r.Record
		return nil
	})
	return m, err == nil, err
}
