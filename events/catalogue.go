package events

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The catalogue: every event type the ledger may hold, with its payload.
// Payloads carry identifiers, digests, counts and reason codes only: never
// prompts, task hints, memory text, transcript paths, absolute paths,
// environment values or tokens (see docs/ledger.md, "What never enters").

// Stream families.
const (
	StoreStream   = "store"
	HarnessPrefix = "harness/"
	MemoryPrefix  = "memory/"
	RunPrefix     = "run/"
)

// HarnessStream is the stream of one harness.
func HarnessStream(id string) string { return HarnessPrefix + id }

// MemoryStream is the stream of one memory.
func MemoryStream(id string) string { return MemoryPrefix + id }

// RunStream is the stream of one run.
func RunStream(id string) string { return RunPrefix + id }

func init() {
	register[StoreInitialized](TypeStoreInitialized, 1, StoreStream)
	register[ProgramInstalled](TypeProgramInstalled, 1, StoreStream)

	register[HarnessDetected](TypeHarnessDetected, 1, HarnessPrefix)
	register[BridgePlanned](TypeBridgePlanned, 1, HarnessPrefix)
	register[BridgePublished](TypeBridgePublished, 1, HarnessPrefix)
	register[PublicationReviewRequired](TypePublicationReviewRequired, 1, HarnessPrefix)
	register[ManifestPublished](TypeManifestPublished, 1, StoreStream)
	register[HarnessDeactivationRequested](TypeHarnessDeactivationRequested, 1, HarnessPrefix)
	register[HarnessDeactivated](TypeHarnessDeactivated, 1, HarnessPrefix)
	register[BridgeDriftDetected](TypeBridgeDriftDetected, 1, HarnessPrefix)
	register[PluginDescriptorFound](TypePluginDescriptorFound, 1, HarnessPrefix)
	register[PluginDescriptorLost](TypePluginDescriptorLost, 1, HarnessPrefix)
	register[TrustRequired](TypeTrustRequired, 1, HarnessPrefix)
	register[ProjectUnreachable](TypeProjectUnreachable, 1, HarnessPrefix)

	register[PreflightStarted](TypePreflightStarted, 1, HarnessPrefix)
	register[PreflightSucceeded](TypePreflightSucceeded, 1, HarnessPrefix)
	register[PreflightFailed](TypePreflightFailed, 1, HarnessPrefix)
	register[ReceiptRecorded](TypeReceiptRecorded, 1, HarnessPrefix)
	register[ReceiptPruned](TypeReceiptPruned, 1, HarnessPrefix)
	register[CertificationRecorded](TypeCertificationRecorded, 1, StoreStream)

	register[MemoryCaptured](TypeMemoryCaptured, 1, MemoryPrefix)
	register[MemorySuperseded](TypeMemorySuperseded, 1, MemoryPrefix)
	register[MemoryForgotten](TypeMemoryForgotten, 1, MemoryPrefix)

	register[RunStarted](TypeRunStarted, 1, RunPrefix)
	register[RunFinished](TypeRunFinished, 1, RunPrefix)
	register[RunInterrupted](TypeRunInterrupted, 1, RunPrefix)
}

// Event type names: past-tense facts.
const (
	TypeStoreInitialized = "store.initialized"
	TypeProgramInstalled = "program.installed"

	TypeHarnessDetected              = "harness.detected"
	TypeBridgePlanned                = "bridge.planned" // declared for dry-run reports; never appended
	TypeBridgePublished              = "bridge.published"
	TypePublicationReviewRequired    = "publication.review_required"
	TypeManifestPublished            = "manifest.published"
	TypeHarnessDeactivationRequested = "harness.deactivation_requested"
	TypeHarnessDeactivated           = "harness.deactivated"
	TypeBridgeDriftDetected          = "bridge.drift_detected"
	TypePluginDescriptorFound        = "plugin.descriptor_found"
	TypePluginDescriptorLost         = "plugin.descriptor_lost"
	TypeTrustRequired                = "harness.trust_required"
	TypeProjectUnreachable           = "harness.project_unreachable"

	TypePreflightStarted      = "preflight.started"
	TypePreflightSucceeded    = "preflight.succeeded"
	TypePreflightFailed       = "preflight.failed"
	TypeReceiptRecorded       = "receipt.recorded"
	TypeReceiptPruned         = "receipt.pruned"
	TypeCertificationRecorded = "certification.recorded"

	TypeMemoryCaptured   = "memory.captured"
	TypeMemorySuperseded = "memory.superseded"
	TypeMemoryForgotten  = "memory.forgotten"

	TypeRunStarted     = "run.started"
	TypeRunFinished    = "run.finished"
	TypeRunInterrupted = "run.interrupted"
)

// Transition is embedded in every payload that moves a harness through the
// FSM: the state before and after, as decided when the event was appended.
// Replay applies To and checks From; it never re-decides.
type Transition struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Moves reports the transition carried by a decoded payload, if any.
func Moves(payload any) (Transition, bool) {
	if m, ok := payload.(interface{ transition() Transition }); ok {
		return m.transition(), true
	}
	return Transition{}, false
}

func (t Transition) transition() Transition { return t }

// Check requires both states to be present; the fsm package checks the names.
func (t Transition) Check() error {
	if t.From == "" || t.To == "" {
		return errors.New("transition needs from and to")
	}
	return nil
}

// FileDigest is a project-relative path and the SHA-256 of its bytes.
type FileDigest struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// BlockDigest is a managed block inside a file the user owns.
type BlockDigest struct {
	Path             string `json:"path"`
	BlockID          string `json:"block_id"`
	SHA256           string `json:"sha256"`
	LeadingSeparator string `json:"leading_separator,omitempty"`
}

// StoreInitialized is the first event of a store: it mints the store id.
type StoreInitialized struct {
	StoreID                string `json:"store_id"`
	Format                 int    `json:"format"`
	ProjectRootFingerprint string `json:"project_root_fingerprint"`
	CLIVersion             string `json:"cli_version"`
}

// Check validates the store id shape: a hyphenated lowercase version-4 UUID.
func (p StoreInitialized) Check() error {
	if !uuidV4(p.StoreID) {
		return fmt.Errorf("store_id %q is not a hyphenated lowercase version-4 UUID", p.StoreID)
	}
	return nil
}

func uuidV4(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s[14] == '4' && strings.IndexByte("89ab", s[19]) >= 0
}

// ProgramIdentity is the installed program as the ledger records it: its
// digest and size, and the file's identity right after it was linked into
// place (inode, modification and change times), which lets the hook skip
// the digest while the file is untouched. program.installed carries it,
// the manifest projection stores it, adapters checks the file against it.
type ProgramIdentity struct {
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	Inode   uint64 `json:"inode"`
	MtimeNS int64  `json:"mtime_ns"`
	CtimeNS int64  `json:"ctime_ns"`
}

// ProgramInstalled records the program the bridges run
// (.tree-ring/bin/tree-ring) as init left it: installed from the running
// build, or found there and adopted (a project initialized before
// programs were recorded). Reinstalled and upgraded are a later install
// after the user moved the file aside: the same digest as the previous
// record, or another one (PreviousSHA256). The size, inode and times let
// the hook skip the digest while the file is untouched; they are not
// paths and name nothing outside the project.
type ProgramInstalled struct {
	Path string `json:"path"`
	ProgramIdentity
	Reason         string `json:"reason"`
	PreviousSHA256 string `json:"previous_sha256,omitempty"`
	CLIVersion     string `json:"cli_version,omitempty"`
}

// Program install reasons.
const (
	ProgramReasonInstalled   = "installed"
	ProgramReasonAdopted     = "adopted"
	ProgramReasonReinstalled = "reinstalled"
	ProgramReasonUpgraded    = "upgraded"
)

// Check validates the digests, the size and the reason.
func (p ProgramInstalled) Check() error {
	switch {
	case p.Path == "" || strings.HasPrefix(p.Path, "/") || strings.Contains(p.Path, ".."):
		return fmt.Errorf("path %q is not project-relative", p.Path)
	case !isHex64(p.SHA256):
		return fmt.Errorf("sha256 %q is not 64 lowercase hex digits", p.SHA256)
	case p.PreviousSHA256 != "" && !isHex64(p.PreviousSHA256):
		return fmt.Errorf("previous_sha256 %q is not 64 lowercase hex digits", p.PreviousSHA256)
	case p.Size <= 0:
		return fmt.Errorf("size %d is not positive", p.Size)
	}
	switch p.Reason {
	case ProgramReasonInstalled, ProgramReasonAdopted, ProgramReasonReinstalled, ProgramReasonUpgraded:
		return nil
	}
	return fmt.Errorf("reason %q is not one of installed, adopted, reinstalled, upgraded", p.Reason)
}

// HarnessDetected records read-only discovery of a harness.
type HarnessDetected struct {
	Transition
	HarnessID         string   `json:"harness_id"`
	AdapterVersion    string   `json:"adapter_version"`
	Capability        string   `json:"capability"`
	Markers           []string `json:"markers"`
	ExecutableVersion string   `json:"executable_version,omitempty"`
}

// BridgePlanned describes what a dry run would publish. It is never appended.
type BridgePlanned struct {
	HarnessID    string   `json:"harness_id"`
	ChangedPaths []string `json:"changed_paths"`
}

// BridgePublished records a harness's bridge as in place: the files and
// blocks created create-only in this step (ChangedPaths), or material already
// on disk that matched exactly (Recognized: the user added the snippet by
// hand, or a retry found what an interrupted run had written). The digests
// and fingerprint are the harness's activation contract; RecordState is the
// state its manifest record carries (the adapter's state before proof).
type BridgePublished struct {
	Transition
	HarnessID         string        `json:"harness_id"`
	AdapterVersion    string        `json:"adapter_version"`
	Capability        string        `json:"capability"`
	BridgeFingerprint string        `json:"bridge_fingerprint"`
	BridgePath        string        `json:"bridge_path,omitempty"`
	OwnedFiles        []FileDigest  `json:"owned_files"`
	ManagedBlocks     []BlockDigest `json:"managed_blocks"`
	ChangedPaths      []string      `json:"changed_paths"`
	// Recognized is true when existing material matched exactly.
	Recognized  bool   `json:"recognized,omitempty"`
	RecordState string `json:"record_state,omitempty"`
}

// Contract returns the activation contract the event records.
func (p BridgePublished) Contract() BridgeContract {
	return BridgeContract{
		AdapterVersion: p.AdapterVersion, Capability: p.Capability, BridgeFingerprint: p.BridgeFingerprint,
		BridgePath: p.BridgePath, OwnedFiles: p.OwnedFiles, ManagedBlocks: p.ManagedBlocks, RecordState: p.RecordState,
	}
}

// BridgeContract is a harness's activation contract: what its manifest
// record states and what preflight verifies on disk.
type BridgeContract struct {
	AdapterVersion    string        `json:"adapter_version"`
	Capability        string        `json:"capability"`
	BridgeFingerprint string        `json:"bridge_fingerprint"`
	BridgePath        string        `json:"bridge_path,omitempty"`
	OwnedFiles        []FileDigest  `json:"owned_files"`
	ManagedBlocks     []BlockDigest `json:"managed_blocks"`
	RecordState       string        `json:"record_state"`
}

// BridgeRecord is one harness's record in the activation manifest as the
// ledger states it: the contract of its last bridge.published (Published),
// or the contract a publication.review_required plans for a harness that
// awaits the user's reconciliation. The manifest projection stores it and
// the activation plan folds its own pending events with the same rule
// (BridgeRecordOf), so neither depends on the manifest's wire type.
type BridgeRecord struct {
	Published bool           `json:"published"`
	Contract  BridgeContract `json:"contract"`
}

// BridgeRecordOf returns the manifest record that payload v states for its
// harness; ok is false for every payload that states none.
func BridgeRecordOf(v any) (r BridgeRecord, ok bool) {
	switch p := v.(type) {
	case *BridgePublished:
		c := p.Contract()
		if c.RecordState == "" {
			c.RecordState = p.To // events written before record_state existed
		}
		return BridgeRecord{Published: true, Contract: c}, true
	case *PublicationReviewRequired:
		if p.Planned == nil {
			return BridgeRecord{}, false
		}
		return BridgeRecord{Contract: *p.Planned}, true
	}
	return BridgeRecord{}, false
}

// PublicationReviewRequired records that publishing would need mutation of
// something that exists (or that its durability is indeterminate); nothing
// was replaced or removed. Reason is a code (docs/adapters/README.md lists
// them), Paths are project-relative. Planned is the contract the harness
// will accept once the user reconciles by hand; it is present only when
// the harness had no contract yet, so that the manifest can carry it and
// stay byte-for-byte unchanged when the exact snippet is later recognized.
type PublicationReviewRequired struct {
	Transition
	HarnessID string          `json:"harness_id"`
	Reason    string          `json:"reason"`
	Paths     []string        `json:"paths"`
	Planned   *BridgeContract `json:"planned,omitempty"`
}

// ManifestPublished records activation.json as created create-only with the
// given digest, or, when Adopted, an existing file found semantically equal
// to the manifest projection (after an interrupted run).
type ManifestPublished struct {
	Path       string   `json:"path"`
	SHA256     string   `json:"sha256"`
	Harnesses  []string `json:"harnesses"`
	CLIVersion string   `json:"cli_version,omitempty"`
	Adopted    bool     `json:"adopted,omitempty"`
}

// HarnessDeactivationRequested records a deactivate request; nothing is
// removed (create-only), so the harness needs the user's review.
type HarnessDeactivationRequested struct {
	Transition
	HarnessID string   `json:"harness_id"`
	Paths     []string `json:"paths"`
}

// HarnessDeactivated records that the user removed the bridge themselves.
type HarnessDeactivated struct {
	Transition
	HarnessID string `json:"harness_id"`
}

// BridgeDriftDetected records bridge bytes on disk that no longer match the
// published digests.
type BridgeDriftDetected struct {
	Transition
	HarnessID string   `json:"harness_id"`
	Paths     []string `json:"paths"`
	Reason    string   `json:"reason,omitempty"`
}

// PluginDescriptorFound records a valid Agent Zero plugin descriptor.
type PluginDescriptorFound struct {
	Transition
	HarnessID     string `json:"harness_id"`
	PluginVersion string `json:"plugin_version"`
}

// PluginDescriptorLost records a missing or disabled plugin descriptor.
type PluginDescriptorLost struct {
	Transition
	HarnessID string `json:"harness_id"`
	Reason    string `json:"reason"`
}

// TrustRequired records that the harness must grant its own trust first.
type TrustRequired struct {
	Transition
	HarnessID string `json:"harness_id"`
}

// ProjectUnreachable records that the project root was not mounted.
type ProjectUnreachable struct {
	Transition
	HarnessID string `json:"harness_id"`
	Reason    string `json:"reason"`
}

// PreflightStarted records the start of a preflight (no transition).
type PreflightStarted struct {
	HarnessID            string `json:"harness_id"`
	WorkerKeyFingerprint string `json:"worker_key_fingerprint"`
}

// PreflightSucceeded records a delivered context.
type PreflightSucceeded struct {
	Transition
	HarnessID               string `json:"harness_id"`
	WorkerKeyFingerprint    string `json:"worker_key_fingerprint"`
	ReceiptID               string `json:"receipt_id"`
	QueryClass              string `json:"query_class"`
	ResultCount             int    `json:"result_count"`
	SelectedMemoryIDsSHA256 string `json:"selected_memory_ids_sha256"`
	DurationMS              int64  `json:"duration_ms"`
	TaskHintSHA256          string `json:"task_hint_sha256,omitempty"`
	TaskHintChars           int    `json:"task_hint_chars,omitempty"`
}

// PreflightFailed records a concrete diagnostic code (never error text).
type PreflightFailed struct {
	Transition
	HarnessID string `json:"harness_id"`
	Reason    string `json:"reason"`
}

// ReceiptRecorded is the privacy-safe receipt, as written to disk: every
// field of the receipt file except its constant schema_version, so that the
// file can be audited (SHA256 is the digest of its exact bytes) and the
// receipt index rebuilt from the ledger alone. The ledger keeps this event
// after retention prunes the file (receipt.pruned); it holds no prompt,
// hint, recalled text or absolute path. RecordedAt, Session and Path are
// absent from events written before receipts were materialized as files.
type ReceiptRecorded struct {
	HarnessID               string `json:"harness_id"`
	ReceiptID               string `json:"receipt_id"`
	ProtocolVersion         int    `json:"protocol_version"`
	AdapterVersion          string `json:"adapter_version"`
	BridgeFingerprint       string `json:"bridge_fingerprint"`
	StoreID                 string `json:"store_id"`
	ProjectRootFingerprint  string `json:"project_root_fingerprint"`
	WorkerKeyFingerprint    string `json:"worker_key_fingerprint"`
	State                   string `json:"state"`
	QueryClass              string `json:"query_class"`
	ResultCount             int    `json:"result_count"`
	SelectedMemoryIDsSHA256 string `json:"selected_memory_ids_sha256"`
	DurationMS              int64  `json:"duration_ms"`
	Status                  string `json:"status"`
	SHA256                  string `json:"sha256"`
	// RecordedAt is the receipt's recorded_at (RFC 3339, UTC, seconds).
	RecordedAt string `json:"recorded_at,omitempty"`
	// Session is the harness-derived identity the receipt names (already
	// normalized: unsafe values are replaced by label-<digest>).
	Session *ReceiptSession `json:"session,omitempty"`
	// Path is the receipt file, project-relative.
	Path string `json:"path,omitempty"`
}

// ReceiptStatusSuccess is the Status of a successful preflight's receipt.
const ReceiptStatusSuccess = "success"

// ReceiptTimeFormat is RecordedAt's format: RFC 3339, UTC, whole seconds.
// It is declared here, with the event, so that the receipt index folds it
// without importing the preflight adapter that writes it.
const ReceiptTimeFormat = "2006-01-02T15:04:05Z"

// ReceiptTime renders t as a receipt's recorded_at.
func ReceiptTime(t time.Time) string { return t.UTC().Truncate(time.Second).Format(ReceiptTimeFormat) }

// ReceiptSession is a receipt's session identity.
type ReceiptSession struct {
	AgentProfile string `json:"agent_profile"`
	WorkflowID   string `json:"workflow_id"`
	SessionID    string `json:"session_id"`
}

// ReceiptPruned records a receipt removed by retention (Reason "expired":
// older than 30 days; "over_limit": beyond the newest 100 of its
// harness/worker). The decision is the writer's, at its clock; the fold only
// drops the receipt from the index, and the writer then removes the file.
type ReceiptPruned struct {
	HarnessID            string `json:"harness_id"`
	WorkerKeyFingerprint string `json:"worker_key_fingerprint"`
	ReceiptID            string `json:"receipt_id"`
	Reason               string `json:"reason"`
}

// CertificationRecorded records one certification run.
type CertificationRecorded struct {
	PassCount int                   `json:"pass_count"`
	FailCount int                   `json:"fail_count"`
	SkipCount int                   `json:"skip_count"`
	Records   []CertificationResult `json:"records"`
}

// CertificationResult is one harness's verdict: pass only with a verified
// receipt tuple (ReceiptID names it), fail or skip otherwise.
type CertificationResult struct {
	HarnessID string `json:"harness_id"`
	Status    string `json:"status"`
	State     string `json:"state"`
	ReceiptID string `json:"receipt_id,omitempty"`
}
