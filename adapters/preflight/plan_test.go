package preflight_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

var _ = eventstest.UpdateFlag()

const (
	storeID   = "01234567-89ab-4def-8123-456789abcdef"
	projectFP = "abababababababababababababababababababababababababababababababab"
)

// fakeLedger is a Ledger of plain values; it records what the plan read.
type fakeLedger struct {
	storeID, projectFP string
	manifest           bool
	rec                adapters.Record
	published, hasRec  bool
	state              fsm.State
	recall             preflight.Recall
	expired            []receipt.Entry
	count              int
	oldest             []receipt.Entry
	reads              []string
	query              preflight.RecallQuery
}

func (l *fakeLedger) read(s string) { l.reads = append(l.reads, s) }

func (l *fakeLedger) ManifestStore() (string, string, bool, error) {
	l.read("manifest")
	return l.storeID, l.projectFP, l.manifest, nil
}

func (l *fakeLedger) ManifestRecord(string) (events.BridgeRecord, bool, error) {
	l.read("record")
	return events.BridgeRecord{Contract: adapters.ContractOf(l.rec), Published: l.published}, l.hasRec, nil
}

func (l *fakeLedger) StateAt(string, time.Time) (fsm.State, error) {
	l.read("state")
	return l.state, nil
}

func (l *fakeLedger) Recall(q preflight.RecallQuery, _ time.Time) (preflight.Recall, error) {
	l.read("recall")
	l.query = q
	return l.recall, nil
}

func (l *fakeLedger) RecordedBy(string) ([]receipt.Entry, error) {
	l.read("expired")
	return l.expired, nil
}

func (l *fakeLedger) WorkerReceipts(string, string) int { return l.count }

func (l *fakeLedger) OldestWorkerReceipts(_, _ string, n int) ([]receipt.Entry, error) {
	l.read("oldest")
	return l.oldest[:min(n, len(l.oldest))], nil
}

func adapter(t *testing.T, id string) *adapters.Adapter {
	t.Helper()
	a, ok := adapters.Lookup(id)
	if !ok {
		t.Fatalf("no adapter %s", id)
	}
	return a
}

// job is a preflight of harness id whose contract and ledger agree.
func job(t *testing.T, id string) (preflight.Job, *fakeLedger) {
	t.Helper()
	a := adapter(t, id)
	rec := a.Record(a.Material(adapters.Context{StoreID: storeID, ProjectRootFingerprint: projectFP}))
	m := adapters.Manifest{SchemaVersion: 1, ProtocolVersion: 1, StoreID: storeID, ProjectRootFingerprint: projectFP,
		CLIVersion: "t", Harnesses: map[string]adapters.Record{id: rec}}
	j := preflight.Job{
		Checked: preflight.Checked{Adapter: a, Record: rec, Recomputed: rec.BridgeFingerprint}, Manifest: m,
		Project:  filepath.Join("/work", "my project"),
		Identity: preflight.Identity{AgentProfile: id, WorkflowID: "wf-1", SessionID: "session-1"},
	}
	l := &fakeLedger{storeID: storeID, projectFP: projectFP, manifest: true, rec: rec, published: true, hasRec: true,
		state: fsm.ConfiguredAwaitingProof,
		recall: preflight.Recall{Text: "Tree Ring Memory scoped preflight recall:\n- none", QueryClass: "startup_fallback",
			SelectedMemoryIDsSHA256: strings.Repeat("0", 64)}}
	return j, l
}

func deps() preflight.Deps {
	entropy := eventstest.Entropy(7)
	return preflight.Deps{Start: eventstest.Epoch, Now: eventstest.Clock(eventstest.Epoch, 250*time.Millisecond), NewID: eventstest.IDs(1),
		NewReceiptID: func() (string, error) { return preflight.NewReceiptID(entropy) }}
}

// types lists a plan's appends as "stream: type type ...".
func types(p preflight.Plan) []string {
	var out []string
	for _, a := range p.Appends {
		var ts []string
		for _, e := range a.Events {
			ts = append(ts, e.Type)
		}
		out = append(out, a.Stream+": "+strings.Join(ts, " "))
	}
	return out
}

func TestDecideRefusesBeforeRecall(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(*preflight.Job, *fakeLedger)
		want  error
		reads string
	}{
		{"no manifest in the ledger", func(_ *preflight.Job, l *fakeLedger) { l.manifest = false }, preflight.ErrLedgerMismatch, "manifest record"},
		{"another store", func(_ *preflight.Job, l *fakeLedger) { l.storeID = "x" }, preflight.ErrLedgerMismatch, "manifest record"},
		{"another project", func(_ *preflight.Job, l *fakeLedger) { l.projectFP = "x" }, preflight.ErrLedgerMismatch, "manifest record"},
		{"record unpublished", func(_ *preflight.Job, l *fakeLedger) { l.published = false }, preflight.ErrLedgerMismatch, "manifest record"},
		{"no ledger record", func(_ *preflight.Job, l *fakeLedger) { l.hasRec = false }, preflight.ErrLedgerMismatch, "manifest record"},
		{"record differs", func(_ *preflight.Job, l *fakeLedger) { l.rec.BridgePath = "elsewhere" }, preflight.ErrLedgerMismatch, "manifest record"},
		{"needs review", func(_ *preflight.Job, l *fakeLedger) { l.state = fsm.NeedsUserReview }, preflight.ErrNotEligible, "manifest record state"},
		{"needs-plugin without a plugin capability", func(_ *preflight.Job, l *fakeLedger) { l.state = fsm.NeedsPlugin }, preflight.ErrNotEligible, "manifest record state"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, l := job(t, "codex")
			c.edit(&j, l)
			_, err := preflight.Decide(l, j, deps())
			if !errors.Is(err, c.want) {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if got := strings.Join(l.reads, " "); got != c.reads {
				t.Errorf("read %q, want %q", got, c.reads)
			}
		})
	}
}

func TestDecideProves(t *testing.T) {
	for _, c := range []struct {
		name    string
		harness string
		edit    func(*preflight.Job, *fakeLedger)
		from    fsm.State
		to      fsm.State
		types   []string
	}{
		{"first proof", "codex", nil, fsm.ConfiguredAwaitingProof, fsm.Active,
			[]string{"harness/codex: preflight.succeeded receipt.recorded"}},
		{"re-proof of an active harness", "codex", func(_ *preflight.Job, l *fakeLedger) { l.state = fsm.Active }, fsm.Active, fsm.Active,
			[]string{"harness/codex: preflight.succeeded receipt.recorded"}},
		{"a retry after a failed preflight", "codex", func(_ *preflight.Job, l *fakeLedger) { l.state = fsm.Failed }, fsm.Failed, fsm.Active,
			[]string{"harness/codex: preflight.succeeded receipt.recorded"}},
		{"through a trust gate", "pi", func(_ *preflight.Job, l *fakeLedger) { l.state = fsm.NeedsTrust }, fsm.NeedsTrust, fsm.Active,
			[]string{"harness/pi: preflight.succeeded receipt.recorded"}},
		{"isolated", "codex", func(j *preflight.Job, _ *fakeLedger) { j.Isolated = true }, fsm.ConfiguredAwaitingProof, fsm.ActiveIsolated,
			[]string{"harness/codex: preflight.succeeded receipt.recorded"}},
		{"a plugin's first proof", "agent-zero", func(j *preflight.Job, l *fakeLedger) {
			l.state, j.Plugin = fsm.NeedsPlugin, &preflight.Descriptor{PluginVersion: "1.2.0"}
		}, fsm.ConfiguredAwaitingProof, fsm.Active,
			[]string{"harness/agent-zero: plugin.descriptor_found preflight.succeeded receipt.recorded"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, l := job(t, c.harness)
			if c.edit != nil {
				c.edit(&j, l)
			}
			p, err := preflight.Decide(l, j, deps())
			if err != nil {
				t.Fatal(err)
			}
			if got := types(p); !slices.Equal(got, c.types) {
				t.Fatalf("appends %q, want %q", got, c.types)
			}
			evs := p.Appends[0].Events
			ok, _ := events.Payload[events.PreflightSucceeded](&evs[len(evs)-2])
			if ok.From != string(c.from) || ok.To != string(c.to) || p.Receipt.State != string(c.to) {
				t.Errorf("preflight.succeeded %s -> %s, receipt %s; want %s -> %s", ok.From, ok.To, p.Receipt.State, c.from, c.to)
			}
			if ok.TaskHintSHA256 != "" || ok.TaskHintChars != 0 {
				t.Errorf("a startup brief recorded a hint digest: %+v", ok)
			}
			rr, _ := events.Payload[events.ReceiptRecorded](&evs[len(evs)-1])
			sum := sha256.Sum256(p.Body)
			if rr.SHA256 != hex.EncodeToString(sum[:]) || rr.Path != p.Receipt.Path() || p.File != rr.Path || rr.ReceiptID != p.Receipt.ReceiptID {
				t.Errorf("receipt.recorded %+v does not state the receipt file", rr)
			}
			if back, err := receipt.Decode(p.Body); err != nil || back != p.Receipt {
				t.Errorf("receipt file does not decode to the receipt: %v", err)
			}
			if l.query.Project != "my project" || l.query.SessionID != "session-1" || p.Context != l.recall.Text || len(p.Removals) != 0 {
				t.Errorf("query %+v, context %q, removals %v", l.query, p.Context, p.Removals)
			}
		})
	}
}

// TestDecideReceiptGolden pins the receipt file's bytes (-update rewrites
// testdata/receipt.golden.json).
func TestDecideReceiptGolden(t *testing.T) {
	j, l := job(t, "codex")
	p, err := preflight.Decide(l, j, deps())
	if err != nil {
		t.Fatal(err)
	}
	// Now is read at the decision (truncated to the second) and after
	// recall: the duration is the clock's two steps since Start.
	if p.Receipt.DurationMS != 500 || p.Receipt.RecordedAt != "2026-11-01T12:00:00Z" {
		t.Errorf("duration %d, recorded_at %s", p.Receipt.DurationMS, p.Receipt.RecordedAt)
	}
	eventstest.Golden(t, filepath.Join("testdata", "receipt.golden.json"), p.Body)
	again, err := preflight.Decide(l, j, deps())
	if err != nil || string(again.Body) != string(p.Body) {
		t.Fatalf("the plan is not reproducible from its inputs: %v", err)
	}
}

func TestDecideRecordsTheHintDigestOnly(t *testing.T) {
	const hint = "fix the flaky retry test"
	j, l := job(t, "codex")
	j.TaskHint = "  " + hint + "  "
	l.recall.QueryClass, l.recall.Hint = "task_hint", hint
	p, err := preflight.Decide(l, j, deps())
	if err != nil {
		t.Fatal(err)
	}
	ok, _ := events.Payload[events.PreflightSucceeded](&p.Appends[0].Events[0])
	sum := sha256.Sum256([]byte(hint))
	if ok.TaskHintSHA256 != hex.EncodeToString(sum[:]) || ok.TaskHintChars != len(hint) || l.query.TaskHint != j.TaskHint {
		t.Fatalf("%+v", ok)
	}
	for _, a := range p.Appends {
		for _, e := range a.Events {
			if strings.Contains(string(e.Payload), "flaky") {
				t.Fatalf("%s carries the hint: %s", e.Type, e.Payload)
			}
		}
	}
	if strings.Contains(string(p.Body), "flaky") {
		t.Fatal("the receipt carries the hint")
	}
}

func TestDecideRetention(t *testing.T) {
	j, l := job(t, "codex")
	worker := preflight.WorkerKeyFingerprint("codex", "codex")
	old := func(h, w, id, at, path string) receipt.Entry {
		return receipt.Entry{HarnessID: h, Worker: w, ReceiptID: id, RecordedAt: at, Path: path}
	}
	// Expired: another harness's receipt from 40 days ago (with a file)
	// and one of this worker's (without). Over the limit: this worker holds
	// 101, so with the new receipt its two oldest (the expired one and the
	// next) go.
	l.expired = []receipt.Entry{
		old("pi", "w", "receipt-b", "2026-09-20T00:00:00Z", ".tree-ring/activation/receipts/pi/w/receipt-b.json"),
		old("codex", worker, "receipt-a", "2026-09-21T00:00:00Z", ""),
	}
	l.count = 101
	l.oldest = []receipt.Entry{l.expired[1], old("codex", worker, "receipt-c", "2026-10-30T00:00:00Z", "c.json")}
	p, err := preflight.Decide(l, j, deps())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"harness/codex: preflight.succeeded receipt.recorded receipt.pruned receipt.pruned",
		"harness/pi: receipt.pruned",
	}
	if got := types(p); !slices.Equal(got, want) {
		t.Fatalf("appends %q, want %q", got, want)
	}
	var reasons []string
	for _, a := range p.Appends {
		for _, e := range a.Events {
			if e.Type == events.TypeReceiptPruned {
				pr, _ := events.Payload[events.ReceiptPruned](&e)
				reasons = append(reasons, pr.ReceiptID+" "+pr.Reason)
			}
		}
	}
	if w := []string{"receipt-a expired", "receipt-c over_limit", "receipt-b expired"}; !slices.Equal(reasons, w) {
		t.Errorf("pruned %q, want %q", reasons, w)
	}
	if w := []string{".tree-ring/activation/receipts/pi/w/receipt-b.json", "c.json"}; !slices.Equal(p.Removals, w) {
		t.Errorf("removals %q, want %q", p.Removals, w)
	}
}

func TestStrays(t *testing.T) {
	const own = "receipt-00000000-0000-4000-8000-000000000001"
	const kept = "receipt-00000000-0000-4000-8000-000000000002"
	const stray = "receipt-00000000-0000-4000-8000-000000000003"
	const temp = "." + own + ".json.tree-ring-tmp-0123456789abcdef" // a failed write's leftover
	names := []string{own + ".json", kept + ".json", stray + ".json", "notes.txt", "receipt-x.json", stray, temp}
	got := preflight.Strays("d", names, func(id string) bool { return id == kept }, own)
	if !slices.Equal(got, []string{"d/" + stray + ".json", "d/" + temp}) {
		t.Fatalf("%q", got)
	}
}

func TestAdmit(t *testing.T) {
	plugin := &preflight.Descriptor{PluginVersion: "3.4.1"}
	codex, _ := job(t, "codex")
	az, _ := job(t, "agent-zero")
	notPassive := az.Checked
	notPassive.Record.State = string(fsm.Active)
	for _, c := range []struct {
		name    string
		checked preflight.Checked
		plugin  *preflight.Descriptor
		want    error
	}{
		{"no plugin capability", codex.Checked, nil, nil},
		{"plugin harness without its descriptor", az.Checked, nil, preflight.ErrNotPassive},
		{"not the passive binding", notPassive, plugin, preflight.ErrNotPassive},
		{"descriptor and binding", az.Checked, plugin, nil},
	} {
		if err := preflight.Admit(c.checked, c.plugin); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// A failure after the contract check moves the harness to failed with the
// diagnostic code, from its state at now; needs-user-review stands; the
// refusals that are not failures record nothing.
func TestFailure(t *testing.T) {
	for _, c := range []struct {
		from fsm.State
		code string
		ok   bool
		want string // the recorded reason
	}{
		{fsm.ConfiguredAwaitingProof, "output_failed", true, "output_failed"},
		{fsm.Active, "disk_full", true, "disk_full"},
		{fsm.Failed, "ledger_corrupt", true, "ledger_corrupt"},
		{fsm.NeedsTrust, "error", true, "error"},
		{fsm.Active, "Not A Code /tmp/x", true, "error"},
		{fsm.NeedsUserReview, "disk_full", false, ""},
	} {
		_, l := job(t, "codex")
		l.state = c.from
		f := &events.Factory{Now: eventstest.Clock(eventstest.Epoch, time.Second), NewID: eventstest.IDs(0), Actor: "codex"}
		a, ok, err := preflight.Failure(l, "codex", c.code, eventstest.Epoch, f)
		if err != nil || ok != c.ok {
			t.Fatalf("%s: ok %v err %v", c.from, ok, err)
		}
		if !ok {
			continue
		}
		pf, err := events.Payload[events.PreflightFailed](&a.Events[0])
		if err != nil || a.Stream != "harness/codex" || len(a.Events) != 1 || pf.From != string(c.from) || pf.To != string(fsm.Failed) || pf.Reason != c.want {
			t.Errorf("%s: %+v %+v %v", c.from, a, pf, err)
		}
	}
	for err, want := range map[error]bool{
		preflight.ErrNotEligible: false, preflight.ErrLedgerMismatch: false, context.Canceled: false,
		fmt.Errorf("preflight recall: %w", errors.New("x")): true, syscall.ENOSPC: true, nil: false,
	} {
		if preflight.RecordsFailure(err) != want {
			t.Errorf("RecordsFailure(%v) = %v", err, !want)
		}
	}
}

func TestEmptiedDirs(t *testing.T) {
	w := func(agent string) string { return receipt.WorkerDir("claude-code", agent) }
	got := preflight.EmptiedDirs([]string{
		w("a") + "/receipt-1.json", w("b") + "/receipt-2.json", w("a") + "/receipt-3.json",
		w("keep") + "/receipt-4.json", ".tree-ring/elsewhere/x.json", receipt.Dir + "/claude-code/receipt-5.json",
	}, w("keep"))
	want := []string{w("a"), w("b")}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%q, want %q", got, want)
	}
}
