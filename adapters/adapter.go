// Package adapters is the registry of harness adapters: for each harness its
// native contract (markers, owned bridge material, managed blocks, stdin
// contract), read-only detection, the exact bridge bytes it publishes, the
// activation manifest's wire shape and the create-only filesystem writer.
//
// It is a domain package: it reads and creates files under a pinned project
// root but never imports the ledger. Nothing here makes a harness active; a
// marker, a copied skill or a scan only ever detects.
package adapters

import (
	"fmt"
	"sort"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// Capability is what an adapter can prove (AdapterCapability).
type Capability string

// The three capabilities of protocol version 1.
const (
	NativePreflight  Capability = "native-preflight"
	WrapperPreflight Capability = "wrapper-preflight"
	GuidanceOnly     Capability = "guidance-only"
)

// Support says how far Tree Ring maintains an adapter.
type Support string

// Support levels.
const (
	Maintained  Support = "maintained"  // bridges published and proven by preflight
	PassiveOnly Support = "passive"     // a passive binding; a separate plugin proves it (Agent Zero)
	Unsupported Support = "unsupported" // guidance only; never active
)

// BlockFormat is how a managed block is embedded in a file the user may own.
type BlockFormat int

// Block formats.
const (
	MarkdownBlock  BlockFormat = iota + 1 // <!-- tree-ring:begin ID v1 --> ... <!-- tree-ring:end ID -->
	ClaudeSettings                        // the four handler entries in .claude/settings.json
	GeminiSettings                        // the two handler entries in .gemini/settings.json
	CodexHooks                            // the four handler groups merged into a .codex/hooks.json of the user's
)

// HookSettings reports whether the block is Tree Ring's handler entries in
// a harness's JSON settings file (merged by hand, never by Tree Ring).
func (f BlockFormat) HookSettings() bool { return settingsOf(f) != nil }

// Entries is how many handler entries a settings block holds (0 for other
// formats).
func (f BlockFormat) Entries() int {
	if hs := settingsOf(f); hs != nil {
		return len(hs.events)
	}
	return 0
}

// MarshalText names the format.
func (f BlockFormat) MarshalText() ([]byte, error) {
	switch f {
	case MarkdownBlock:
		return []byte("markdown-markers"), nil
	case ClaudeSettings:
		return []byte("claude-settings-handlers"), nil
	case GeminiSettings:
		return []byte("gemini-settings-handlers"), nil
	case CodexHooks:
		return []byte("codex-hooks-handlers"), nil
	}
	return nil, fmt.Errorf("unknown block format %d", int(f))
}

// BlockTarget is a managed block an adapter may own: a file and a block id.
type BlockTarget struct {
	Path    string      `json:"path"`
	BlockID string      `json:"block_id"`
	Format  BlockFormat `json:"format"`
}

// Adapter is one harness's registered contract. Values are immutable after
// registration and safe for concurrent use.
type Adapter struct {
	ID         string // canonical harness_id
	Name       string // display name
	Version    string // adapter_version
	Capability Capability
	Support    Support
	// Executable is the harness command probed for executable_version.
	Executable string
	// ProjectMarkers are paths relative to the project root; HomeMarkers
	// relative to $HOME. Either present means "detected".
	ProjectMarkers []string
	HomeMarkers    []string
	// RestingState is the state once the bridge is in place and before any
	// proof; it is the state the manifest record carries.
	RestingState fsm.State
	// BridgePath is the manifest bridge_path.
	BridgePath string
	// OwnedFiles and ManagedBlocks are the allow-lists a manifest record is
	// validated against (they include legacy shapes we never publish).
	OwnedFiles    []string
	ManagedBlocks []BlockTarget
	// Stdin is the input contract the preflight and hook commands enforce.
	Stdin StdinContract
	// Capabilities the commands branch on, so that adding a harness never
	// edits cmd (CONTRIBUTING.md, "Adding a harness").
	//
	// (The hook events it answers are HookEvents, from its stdin contract.)
	//
	// PluginDescriptor: a separate plugin proves the harness, so preflight
	// and status require its live descriptor (DescriptorEnv), and the
	// harness rests in needs-plugin rather than needs-trust.
	PluginDescriptor bool
	// PassiveBinding: the only record this harness may publish is the
	// passive binding document; any other record needs review.
	PassiveBinding bool
	// TrustGate: the host can skip our hooks until the user trusts the
	// project, so needs-trust is a state its preflight may prove from; with
	// an Inspect, status reads the host's trust settings (read-only) and
	// reports needs-trust while the host would skip the bridge (failed
	// when they cannot be read). nil: no gate.
	TrustGate *TrustGate
	// HooksSwitch, when set, reads (read-only) the host's own settings that
	// switch its hooks off, so that it would run no bridge of ours:
	// status then reports configured-awaiting-proof with the step that
	// switches them back on, whatever receipt there is. nil: the host has
	// no such switch Tree Ring can read (docs/adapters/<harness>.md).
	HooksSwitch func(TrustQuery) HooksOff
	// DirectPreflight: `integrations preflight` may run in direct mode
	// (identity flags, JSON output) for this harness.
	DirectPreflight bool
	// NativeGap says, for a guidance-only adapter, in one sentence, what
	// its harness lacks (or what is not yet established) for a native
	// adapter; status, init and a refused activate print it.
	NativeGap string
	// CheckpointOncePerSession: the host's stop event does not reliably
	// report that it is re-running because of our block (Gemini CLI sends
	// stop_hook_active false again after the tool call the checkpoint
	// asked for), so the hook issues the capture checkpoint at most once
	// per session, guarded by the run ledger, not by that flag alone.
	CheckpointOncePerSession bool
	// TrustStep is the host's trust step for a decision: what init and
	// activate add to a fresh bridge's next step, and what a recorded
	// needs-trust says (TrustGate.Inspect gives the live one).
	TrustStep func(TrustDecision) string
	// material builds the bridge this adapter publishes; nil for
	// guidance-only adapters.
	material func(Context) Material
}

// Context is what bridge bytes may depend on besides the adapter itself.
type Context struct {
	StoreID                string
	ProjectRootFingerprint string
}

// HookEvents are the lifecycle hook events `integrations hook` answers for
// this harness; nil when the host has no such hook (the harness runs
// `integrations preflight` from an extension or a plugin instead).
func (a *Adapter) HookEvents() []string {
	if a.Stdin.Mode != LifecycleHook {
		return nil
	}
	return a.Stdin.Events
}

// HookFailureExit is the exit code of a failed lifecycle hook of this
// harness (StdinContract.FailureExit): non-zero, and never one its host
// reads as a block; 0 when the host has no lifecycle hook.
func (a *Adapter) HookFailureExit() int { return a.Stdin.FailureExit }

// Publishes reports whether the adapter has bridge material to publish.
func (a *Adapter) Publishes() bool { return a.material != nil }

// RunsProgram reports whether the adapter's bridge runs the project's
// program (BinaryPath): every published bridge but a passive binding, which
// a separately installed plugin reads.
func (a *Adapter) RunsProgram() bool { return a.Publishes() && !a.PassiveBinding }

// Material returns the exact bridge this adapter publishes in c. It panics
// for guidance-only adapters (check Publishes).
func (a *Adapter) Material(c Context) Material { return a.material(c) }

// Record returns the manifest record of m for this adapter: its resting
// state, version, capability, digests and bridge fingerprint. Every block is
// recorded with an empty leading separator: Tree Ring never appends to a
// file it did not create, so no whitespace before a block is its own.
func (a *Adapter) Record(m Material) Record {
	r := Record{
		State:             string(a.RestingState),
		AdapterVersion:    a.Version,
		AdapterCapability: string(a.Capability),
		BridgePath:        m.BridgePath,
	}
	for _, f := range m.Files {
		r.OwnedFiles = append(r.OwnedFiles, events.FileDigest{Path: f.Path, SHA256: SHA256Hex(f.Data)})
	}
	for _, b := range m.Blocks {
		r.ManagedBlocks = append(r.ManagedBlocks, events.BlockDigest{Path: b.Path, BlockID: b.ID, SHA256: SHA256Hex(b.Digest)})
	}
	r.normalize()
	r.BridgeFingerprint = BridgeFingerprint(a.ID, a.Version, r.OwnedFiles, r.ManagedBlocks)
	return r
}

// ownsFile reports whether path is on the adapter's complete-file allow-list.
func (a *Adapter) ownsFile(path string) bool {
	for _, p := range a.OwnedFiles {
		if p == path {
			return true
		}
	}
	return false
}

// blockTarget returns the allow-listed block target for (path, id).
func (a *Adapter) blockTarget(path, id string) (BlockTarget, bool) {
	for _, t := range a.ManagedBlocks {
		if t.Path == path && t.BlockID == id {
			return t, true
		}
	}
	return BlockTarget{}, false
}

// Material is the exact bridge an adapter publishes: complete files it owns
// and blocks it manages inside files that may also hold the user's text.
type Material struct {
	BridgePath string
	Files      []File
	Blocks     []Block
}

// File is a complete owned file.
type File struct {
	Path string // project-relative, slash-separated
	Data []byte
	Mode uint32 // permission bits
	// Merged, when set, is the file's handler entries as a block: when Path
	// already exists with other bytes (the user's own hooks file), the
	// user merges them into it by hand and Tree Ring evaluates and records
	// the block instead of the file (Resolve). The file form stays what
	// Tree Ring creates and records otherwise, so its record is unchanged.
	Merged *Block
}

// Block is a managed block.
type Block struct {
	Path   string
	ID     string
	Format BlockFormat
	// Digest is the byte string whose SHA-256 the manifest records.
	Digest []byte
	// Whole is the complete file Tree Ring creates when Path is absent.
	Whole []byte
	// Snippet is what the user adds by hand when Path exists and would need
	// mutation; recognized on the next activate when it matches exactly.
	Snippet string
}

// Paths lists every path the material touches, sorted and unique.
func (m Material) Paths() []string {
	var ps []string
	for _, f := range m.Files {
		ps = append(ps, f.Path)
	}
	for _, b := range m.Blocks {
		ps = append(ps, b.Path)
	}
	return sortedUnique(ps)
}

func sortedUnique(ps []string) []string {
	sort.Strings(ps)
	out := ps[:0]
	for i, p := range ps {
		if i == 0 || p != ps[i-1] {
			out = append(out, p)
		}
	}
	return out
}

// registry is filled by the adapter files' init functions; sized for
// them so that filling it never rehashes.
var registry = make(map[string]*Adapter, 24)

// register adds an adapter; each adapter file calls it from init.
func register(a *Adapter) {
	if _, dup := registry[a.ID]; dup {
		panic("adapters: duplicate " + a.ID)
	}
	if (a.material == nil) != (a.Support == Unsupported) {
		panic("adapters: " + a.ID + ": only unsupported adapters lack bridge material")
	}
	if (a.NativeGap == "") != (a.Support != Unsupported) {
		panic("adapters: " + a.ID + ": a guidance-only adapter (and only one) states its native gap")
	}
	if (a.Stdin.Mode == LifecycleHook) != (a.Stdin.FailureExit != 0) {
		panic("adapters: " + a.ID + ": a lifecycle-hook adapter (and only one) declares its hook's failure exit")
	}
	registry[a.ID] = a
}

// Lookup returns the adapter registered under a canonical harness id.
func Lookup(id string) (*Adapter, bool) {
	a, ok := registry[id]
	return a, ok
}

// All returns every registered adapter sorted by id.
func All() []*Adapter {
	out := make([]*Adapter, 0, len(registry))
	for _, a := range registry {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// IDs returns every registered harness id, sorted.
func IDs() []string {
	var ids []string
	for _, a := range All() {
		ids = append(ids, a.ID)
	}
	return ids
}
