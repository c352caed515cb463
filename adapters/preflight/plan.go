package preflight

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

// Ledger is what a preflight plan reads from the ledger's projections. The
// caller implements it over the write transaction that will apply the
// plan, so the plan decides on exactly the state it commits against. Plan
// reads in the order it needs, and stops at the first refusal: a refused
// preflight never renders recall.
type Ledger interface {
	// ManifestStore is the store identity the ledger's manifest states
	// (ok is false before any manifest.published).
	ManifestStore() (storeID, projectFP string, ok bool, err error)
	// ManifestRecord is harness's record in the ledger's manifest (ok is
	// false when it has none).
	ManifestRecord(harness string) (rec events.BridgeRecord, ok bool, err error)
	// StateAt is harness's FSM state at now: the recorded state with the
	// 30-day receipt expiry.
	StateAt(harness string, now time.Time) (fsm.State, error)
	// Recall renders the scoped recall (projections/recall.Brief).
	Recall(q RecallQuery, now time.Time) (Recall, error)
	// RecordedBy lists the retained receipts recorded at or before cutoff
	// (receipt time format), any harness or worker.
	RecordedBy(cutoff string) ([]receipt.Entry, error)
	// WorkerReceipts is how many receipts harness/worker retains.
	WorkerReceipts(harness, worker string) int
	// OldestWorkerReceipts lists the n oldest receipts of harness/worker.
	OldestWorkerReceipts(harness, worker string, n int) ([]receipt.Entry, error)
}

// RecallQuery is the scoped recall of one preflight: the project's name and
// alias (ProjectName) and the session's identity select what is visible.
type RecallQuery struct {
	Project, ProjectAlias               string
	AgentProfile, WorkflowID, SessionID string
	TaskHint                            string // raw; classified by recall, never stored
}

// Recall is a rendered recall as a receipt states it.
type Recall struct {
	Text                    string // what the harness receives
	QueryClass              string // task_hint or startup_fallback
	ResultCount             int
	SelectedMemoryIDsSHA256 string
	// Hint is the safe task hint recall searched with ("" for the startup
	// brief): the plan records its digest and length, never the hint.
	Hint string
}

// Job is one preflight to plan: the contract checked on disk and the
// validated session.
type Job struct {
	Checked  Checked
	Manifest adapters.Manifest // the activation manifest on disk
	Project  string            // canonical project root: its name scopes recall; never stored
	Identity Identity
	TaskHint string // raw; classified by recall, never stored
	Isolated bool   // --canonical-project-root: the proof is active-isolated
	Plugin   *Descriptor
}

// Deps are the plan's clock and id sources. Now is read once for the
// decision instant and once more, after recall, for the duration.
type Deps struct {
	Start        time.Time // when the preflight began
	Now          func() time.Time
	NewID        func() ulid.ULID       // event ids
	NewReceiptID func() (string, error) // receipt-<uuid v4>
}

// Append is the events of one stream, appended at its current version.
type Append struct {
	Stream string
	Events []events.Envelope
}

// Plan is what one preflight records and writes. The caller applies it in
// one write transaction: Appends, then the receipt file created before the
// commit (removed again if the commit fails), then, after the commit,
// Removals and the strays (Strays).
type Plan struct {
	Appends  []Append // ordered by stream name
	Receipt  receipt.Receipt
	Body     []byte   // the receipt file's bytes, at File
	File     string   // Receipt.Path(), hashed once (the worker's directory is its parent)
	Context  string   // the rendered recall the caller prints
	Removals []string // project-relative files of the pruned receipts
}

// Decide plans a preflight of j's harness against the ledger l: the
// manifest on disk must be the ledger's (ErrLedgerMismatch), the harness's
// state at now eligible (ErrNotEligible); then recall, the transition
// fsm.Decide takes (with plugin.descriptor_found first for a plugin's first
// proof), preflight.succeeded and receipt.recorded on the harness stream,
// and receipt.pruned for what retention drops at this clock.
func Decide(l Ledger, j Job, d Deps) (Plan, error) {
	a, m := j.Checked.Adapter, j.Manifest
	now := d.Now().UTC().Truncate(time.Second)
	if err := matchLedger(l, j); err != nil {
		return Plan{}, err
	}
	cur, err := l.StateAt(a.ID, now)
	if err != nil {
		return Plan{}, err
	}
	if !Eligible(a.ID, cur) {
		return Plan{}, ErrNotEligible
	}
	name, alias := ProjectName(j.Project)
	brief, err := l.Recall(RecallQuery{Project: name, ProjectAlias: alias, AgentProfile: j.Identity.AgentProfile,
		WorkflowID: j.Identity.WorkflowID, SessionID: j.Identity.SessionID, TaskHint: j.TaskHint}, now)
	if err != nil {
		return Plan{}, fmt.Errorf("preflight recall: %w", err)
	}
	b := &builder{f: &events.Factory{Now: func() time.Time { return now }, NewID: d.NewID, Actor: a.ID}, byStream: map[string][]events.Envelope{}}
	stream := events.HarnessStream(a.ID)
	from, err := b.findPlugin(j, cur)
	if err != nil {
		return Plan{}, err
	}
	prove := fsm.Prove
	if j.Isolated {
		prove = fsm.ProveIsolated
	}
	to, err := fsm.Decide(from, prove)
	if err != nil {
		return Plan{}, err
	}
	receiptID, err := d.NewReceiptID()
	if err != nil {
		return Plan{}, err
	}
	worker := WorkerKeyFingerprint(a.ID, j.Identity.AgentProfile)
	rc := receipt.Receipt{
		SchemaVersion: receipt.SchemaVersion, ProtocolVersion: m.ProtocolVersion, ReceiptID: receiptID,
		HarnessID: a.ID, AdapterVersion: j.Checked.Record.AdapterVersion, BridgeFingerprint: j.Checked.Record.BridgeFingerprint,
		StoreID: m.StoreID, ProjectRootFingerprint: m.ProjectRootFingerprint, WorkerKeyFingerprint: worker,
		Session: j.Identity, State: string(to), QueryClass: brief.QueryClass, ResultCount: brief.ResultCount,
		SelectedMemoryIDsSHA256: brief.SelectedMemoryIDsSHA256,
		DurationMS:              max(0, d.Now().Sub(d.Start).Milliseconds()),
		Status:                  receipt.StatusSuccess, RecordedAt: receipt.FormatTime(now),
	}
	p := Plan{Receipt: rc, Body: rc.Encode(), File: rc.Path(), Context: brief.Text}
	if err := b.record(stream, p, from, brief.Hint); err != nil {
		return Plan{}, err
	}
	if err := b.retain(l, &p, now); err != nil {
		return Plan{}, err
	}
	p.Appends = b.appends()
	return p, nil
}

// matchLedger requires the manifest on disk and the checked record to be
// the ones the ledger published.
func matchLedger(l Ledger, j Job) error {
	storeID, projectFP, ok, err := l.ManifestStore()
	if err != nil {
		return err
	}
	rec, recOK, err := l.ManifestRecord(j.Checked.Adapter.ID)
	if err != nil {
		return err
	}
	if !ok || storeID != j.Manifest.StoreID || projectFP != j.Manifest.ProjectRootFingerprint ||
		!recOK || !rec.Published || !adapters.RecordOf(rec.Contract).Equal(j.Checked.Record) {
		return ErrLedgerMismatch
	}
	return nil
}

// builder collects a plan's events by stream.
type builder struct {
	f        *events.Factory
	byStream map[string][]events.Envelope
}

func (b *builder) add(stream, typ string, p any) error {
	e, err := b.f.New(stream, typ, p)
	if err == nil {
		b.byStream[stream] = append(b.byStream[stream], e)
	}
	return err
}

// findPlugin records, for a harness a plugin proves that still needs its
// plugin, that the live descriptor is the plugin found (needs-plugin ->
// configured-awaiting-proof), and returns the state the proof starts from.
func (b *builder) findPlugin(j Job, cur fsm.State) (fsm.State, error) {
	a := j.Checked.Adapter
	if !a.PluginDescriptor || cur != fsm.NeedsPlugin {
		return cur, nil
	}
	to, err := fsm.Decide(cur, fsm.FindPlugin)
	if err != nil {
		return "", err
	}
	return to, b.add(events.HarnessStream(a.ID), events.TypePluginDescriptorFound, &events.PluginDescriptorFound{
		Transition: events.Transition{From: string(cur), To: string(to)}, HarnessID: a.ID, PluginVersion: j.Plugin.PluginVersion,
	})
}

// record adds preflight.succeeded and receipt.recorded for p's receipt.
func (b *builder) record(stream string, p Plan, from fsm.State, hint string) error {
	rc := p.Receipt
	sum := sha256.Sum256(p.Body)
	succeeded := &events.PreflightSucceeded{
		Transition: events.Transition{From: string(from), To: rc.State}, HarnessID: rc.HarnessID,
		WorkerKeyFingerprint: rc.WorkerKeyFingerprint, ReceiptID: rc.ReceiptID, QueryClass: rc.QueryClass, ResultCount: rc.ResultCount,
		SelectedMemoryIDsSHA256: rc.SelectedMemoryIDsSHA256, DurationMS: rc.DurationMS,
	}
	if hint != "" {
		// A digest and a length, never the hint (docs/preflight.md).
		hs := sha256.Sum256([]byte(hint))
		succeeded.TaskHintSHA256, succeeded.TaskHintChars = hex.EncodeToString(hs[:]), utf8.RuneCountInString(hint)
	}
	if err := b.add(stream, events.TypePreflightSucceeded, succeeded); err != nil {
		return err
	}
	recorded := rc.Recorded(hex.EncodeToString(sum[:]), p.File)
	return b.add(stream, events.TypeReceiptRecorded, &recorded)
}

// retain adds receipt.pruned for what retention drops, decided at this
// writer's clock, and the files to remove after the commit.
func (b *builder) retain(l Ledger, p *Plan, now time.Time) error {
	rc := p.Receipt
	expired, err := l.RecordedBy(receipt.FormatTime(now.Add(-RetentionAge)))
	if err != nil {
		return err
	}
	// Only the receipts beyond the newest 99 are read: the index keeps a
	// count per worker and its entries in age order.
	beyond, err := l.OldestWorkerReceipts(rc.HarnessID, rc.WorkerKeyFingerprint, Beyond(l.WorkerReceipts(rc.HarnessID, rc.WorkerKeyFingerprint)))
	if err != nil {
		return err
	}
	for _, pr := range Retain(now, expired, beyond) {
		if err := b.add(events.HarnessStream(pr.HarnessID), events.TypeReceiptPruned, &events.ReceiptPruned{
			HarnessID: pr.HarnessID, WorkerKeyFingerprint: pr.Worker, ReceiptID: pr.ReceiptID, Reason: pr.Reason,
		}); err != nil {
			return err
		}
		// An adopted receipt is another writer's file: pruning drops the
		// entry, never the file.
		if pr.Path != "" && !pr.Adopted {
			p.Removals = append(p.Removals, pr.Path)
		}
	}
	return nil
}

// appends orders the collected events by stream name.
func (b *builder) appends() []Append {
	streams := make([]string, 0, len(b.byStream))
	for s := range b.byStream {
		streams = append(streams, s)
	}
	slices.Sort(streams)
	out := make([]Append, len(streams))
	for i, s := range streams {
		out[i] = Append{Stream: s, Events: b.byStream[s]}
	}
	return out
}

// Strays are the files of a worker's receipt directory dir (its listing
// names) that are receipt files the index does not retain (retained, as
// of the transaction that applied the plan, prunes included) other than
// the plan's own receipt: files a crash left between a write and its
// commit, and temporary files of CreateFile a kill or a failed unlink left.
// They prove nothing and are removed after the commit.
func Strays(dir string, names []string, retained func(receiptID string) bool, receiptID string) []string {
	var out []string
	for _, n := range names {
		// A temporary name of CreateFile is a killed or failed write's
		// leftover: receipt files are written under the ledger's lock, so
		// none is in flight while a caller holds it.
		if adapters.IsTempName(n) {
			out = append(out, dir+"/"+n)
			continue
		}
		if id, ok := strings.CutSuffix(n, ".json"); ok && receipt.ValidID(id) && !retained(id) && id != receiptID {
			out = append(out, dir+"/"+n)
		}
	}
	return out
}
