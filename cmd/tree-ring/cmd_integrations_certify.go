package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/fsm"
)

type certifyOptions struct{ OutDir string }

func (o *certifyOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.OutDir, "out-dir", "", "where to write the evidence (default <root>/certification, inside the store)")
}

func init() {
	register("integrations certify", "", "certify each harness (pass only with a verified receipt tuple) and write JSON and Markdown evidence", runCertify)
}

// Certification verdicts.
const (
	certPass = "pass"
	certFail = "fail"
	certSkip = "skip"
)

// certRecord is one harness's verdict in the report.
type certRecord struct {
	HarnessID  string   `json:"harness_id"`
	Name       string   `json:"name"`
	Status     string   `json:"status"`
	Activation string   `json:"activation"`
	Markers    []string `json:"markers"`
	Summary    string   `json:"summary"`
	NextStep   string   `json:"next_step"`
}

type certReport struct {
	PassCount int          `json:"pass_count"`
	FailCount int          `json:"fail_count"`
	SkipCount int          `json:"skip_count"`
	Records   []certRecord `json:"records"`
}

// certEvidence is harness/<id>.json: the verdict and what it rests on. It
// holds identifiers, digests and counts only (no path outside the
// project, no memory text).
type certEvidence struct {
	certRecord
	Evidence struct {
		Manifest          string       `json:"manifest"`
		Record            bool         `json:"record"`
		LedgerState       string       `json:"ledger_state"`
		Bridge            string       `json:"bridge,omitempty"`
		BridgeFingerprint string       `json:"bridge_fingerprint,omitempty"`
		RecomputedOnDisk  string       `json:"recomputed_on_disk,omitempty"`
		ChangedPaths      []string     `json:"changed_paths,omitempty"`
		Plugin            string       `json:"plugin,omitempty"`
		RejectedReceipts  int          `json:"rejected_receipts"`
		Receipt           *certReceipt `json:"receipt"`
	} `json:"evidence"`
}

// certReceipt is the verified receipt a passing record cites: its
// identifiers, digests and counts (no session identity).
type certReceipt struct {
	ReceiptID            string `json:"receipt_id"`
	RecordedAt           string `json:"recorded_at"`
	WorkerKeyFingerprint string `json:"worker_key_fingerprint"`
	StoreID              string `json:"store_id"`
	State                string `json:"state"`
	QueryClass           string `json:"query_class"`
	ResultCount          int    `json:"result_count"`
	RulesPassed          int    `json:"rules_passed"`
}

// certReceiptOf cites r, which passed all eight rules (preflight.Verify).
func certReceiptOf(r *receipt.Receipt) *certReceipt {
	return &certReceipt{r.ReceiptID, r.RecordedAt, r.WorkerKeyFingerprint, r.StoreID, r.State, r.QueryClass, r.ResultCount, 8}
}

func runCertify(ctx context.Context, g *Globals, o *certifyOptions, args []string) error {
	if len(args) > 0 {
		return usagef("integrations certify takes no arguments")
	}
	pr, err := resolveProject(g)
	if err != nil {
		return err
	}
	defer pr.root.Close()
	now := g.Now()
	ev, err := evaluate(ctx, g, pr, now)
	if err != nil {
		return err
	}
	if !ev.ledger {
		return g.noLedger(fmt.Errorf("no Tree Ring store at %s; run `tree-ring init` first", g.Root))
	}
	rep, evidence, results := certifyAll(ev)
	dir := o.OutDir
	if dir == "" {
		dir = filepath.Join(g.Root, "certification")
	}
	if err := writeEvidence(dir, rep, evidence, now.UTC().Format("2006-01-02T15:04:05Z")); err != nil {
		return err
	}
	// Everything so far held the ledger lock only to read it (evaluate):
	// hooks and `runs` were never kept waiting by the file checks and the
	// evidence. The verdict is one short write transaction.
	g.Log.Debug().Int("pass", rep.PassCount).Int("fail", rep.FailCount).Int("skip", rep.SkipCount).Msg("certify: evidence written, recording the verdict")
	if err := recordCertification(ctx, g, rep, results); err != nil {
		return err
	}
	if g.JSON {
		if err := writeJSON(g.Stdout, struct {
			OK     bool       `json:"ok"`
			Report certReport `json:"report"`
		}{rep.FailCount == 0, rep}); err != nil {
			return err
		}
		return certifyVerdict(rep)
	}
	shown := o.OutDir // as the user gave it; the default relative to the source root
	if shown == "" {
		shown = "certification/ under --root" // never an absolute path
		if rel, err := filepath.Rel(pr.canonical, dir); err == nil && filepath.IsLocal(rel) {
			shown = rel
		}
	}
	fmt.Fprintf(g.Stdout, "Tree Ring harness certification: pass=%d fail=%d skip=%d evidence=%s\n", rep.PassCount, rep.FailCount, rep.SkipCount, shown)
	for _, r := range rep.Records {
		fmt.Fprintf(g.Stdout, "%s: %s (%s)\n  %s\n", r.Name, r.Status, r.Activation, r.Summary)
		if r.Status != certPass {
			printNext(g.Stdout, r.NextStep)
		}
	}
	return certifyVerdict(rep)
}

// certifyVerdict makes certify a gate: a harness that fails certification
// is a failed verification (exit 3, after the report and the evidence are
// written); skipped harnesses pass the gate.
func certifyVerdict(rep certReport) error {
	if rep.FailCount == 0 {
		return nil
	}
	var names []string
	for _, r := range rep.Records {
		if r.Status == certFail {
			names = append(names, r.HarnessID)
		}
	}
	return &bolt.VerifyError{Detail: fmt.Sprintf("certification failed for %s (the report above names each next step)", strings.Join(names, ", "))}
}

// certifyAll decides every assessed harness's verdict.
func certifyAll(ev *evaluation) (certReport, []certEvidence, []events.CertificationResult) {
	var rep certReport
	var evidence []certEvidence
	var results []events.CertificationResult
	for _, h := range ev.harnesses {
		c := certify(h, ev)
		switch c.Status {
		case certPass:
			rep.PassCount++
		case certFail:
			rep.FailCount++
		default:
			rep.SkipCount++
		}
		rep.Records = append(rep.Records, c.certRecord)
		evidence = append(evidence, c)
		r := events.CertificationResult{HarnessID: h.adapter.ID, Status: c.Status, State: string(h.State)}
		if c.Status == certPass {
			r.ReceiptID = h.Receipt.ReceiptID
		}
		results = append(results, r)
	}
	return rep, evidence, results
}

// recordCertification appends certification.recorded; the recorded run
// rides the one transaction that records the verdict.
func recordCertification(ctx context.Context, g *Globals, rep certReport, results []events.CertificationResult) error {
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	e, err := g.Factory("cli").New(events.StoreStream, events.TypeCertificationRecorded, &events.CertificationRecorded{
		PassCount: rep.PassCount, FailCount: rep.FailCount, SkipCount: rep.SkipCount, Records: results,
	})
	if err != nil {
		return err
	}
	scope, err := g.CLIScope()
	if err != nil {
		return err
	}
	return st.Update(ctx, func(tx *bolt.Tx) error {
		run, err := g.StartRunIn(tx, st, RunSpec{Command: events.RunCmdIntegrationsCertify, Scope: scope, Stage: "certify"})
		if err != nil {
			return err
		}
		if _, err := tx.Append(events.StoreStream, bolt.AnyVersion, e); err != nil {
			return err
		}
		run.SetItems(int64(len(results)))
		return run.FinishIn(tx, nil)
	})
}

// certify decides a harness's verdict. Pass needs the verified tuple:
// manifest, bridge on disk and a receipt passing the eight rules (status
// active or active-isolated); a marker, a bridge or a manifest record alone
// never passes. Skip: nothing of the harness is here (no marker, record
// or event), a guidance-only adapter nobody uses, or Agent Zero without its
// plugin available to this command. Anything else fails.
func certify(h *harnessEval, ev *evaluation) certEvidence {
	var c certEvidence
	c.certRecord = certRecord{
		HarnessID: h.adapter.ID, Name: h.adapter.Name, Activation: string(h.State), Markers: h.markers, NextStep: h.Next,
	}
	if c.Markers == nil {
		c.Markers = []string{}
	}
	x := &c.Evidence
	x.Manifest, x.Record, x.LedgerState = ev.manifest, h.Record != nil, string(h.LedgerState)
	x.Bridge, x.RecomputedOnDisk, x.ChangedPaths = h.Bridge, h.Recomputed, h.Changed
	if h.Record != nil {
		x.BridgeFingerprint = h.Record.BridgeFingerprint
	}
	x.Plugin, x.RejectedReceipts = h.Plugin, h.Rejected
	switch {
	case h.Receipt != nil && fsm.Proven(h.State):
		c.Status = certPass
		c.Summary = fmt.Sprintf("verified receipt %s (%s, %d results) matches the manifest, the bridge on disk and store %s", h.Receipt.ReceiptID, h.Receipt.QueryClass, h.Receipt.ResultCount, h.Receipt.StoreID)
		x.Receipt = certReceiptOf(h.Receipt)
	case len(h.markers) == 0 && h.Record == nil && !h.Events:
		c.Status, c.Summary = certSkip, "not installed here: no marker, manifest record or ledger event"
	case h.adapter.Support == adapters.Unsupported && h.Record == nil:
		c.Status, c.Summary = certSkip, "guidance-only adapter: detected ("+strings.Join(h.markers, ", ")+") but no maintained adapter can prove it"
	case h.adapter.PluginDescriptor && h.State == fsm.NeedsPlugin:
		c.Status, c.Summary = certSkip, "the separate tree_ring_memory plugin is not available to this command"
	case len(h.markers) > 0 && h.Record == nil:
		c.Status, c.Summary = certFail, "marker only ("+strings.Join(h.markers, ", ")+"): no bridge and no receipt"
	default:
		c.Status, c.Summary = certFail, "no verified receipt tuple: state "+string(h.State)
	}
	c.certRecord.Status = c.Status
	return c
}

// writeEvidence writes harness/<id>.json, harness-activation-summary.md
// and evidence-index.json under dir (created if needed). These are reports:
// each file is replaced atomically (temporary file, fsync, rename).
func writeEvidence(dir string, rep certReport, ev []certEvidence, at string) error {
	if err := os.MkdirAll(filepath.Join(dir, "harness"), 0o755); err != nil {
		return fmt.Errorf("--out-dir: %w", unwrapPath(err))
	}
	index := map[string]any{"generated_at": at, "pass_count": rep.PassCount, "fail_count": rep.FailCount, "skip_count": rep.SkipCount}
	var md bytes.Buffer
	fmt.Fprintf(&md, "# Tree Ring harness activation certification\n\nGenerated %s. pass %d, fail %d, skip %d.\n\n", at, rep.PassCount, rep.FailCount, rep.SkipCount)
	md.WriteString("A harness passes only with a verified receipt tuple: the manifest, the bridge bytes on disk and a fresh receipt that passes all eight verification rules. A marker, a copied skill or a bridge alone never passes.\n\n")
	md.WriteString("| harness | status | state | summary |\n|---|---|---|---|\n")
	for _, e := range ev {
		b, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			return err
		}
		if err := writeReplace(filepath.Join(dir, "harness", e.HarnessID+".json"), append(b, '\n')); err != nil {
			return err
		}
		index["harness."+e.HarnessID+".status"] = e.Status
		fmt.Fprintf(&md, "| %s | %s | %s | %s |\n", e.Name, e.Status, e.Activation, strings.ReplaceAll(e.Summary, "|", "\\|"))
	}
	if err := writeReplace(filepath.Join(dir, "harness-activation-summary.md"), md.Bytes()); err != nil {
		return err
	}
	b, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		return err
	}
	return writeReplace(filepath.Join(dir, "evidence-index.json"), append(b, '\n'))
}

func writeReplace(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".certify-*")
	if err != nil {
		return fmt.Errorf("write evidence: %w", unwrapPath(err))
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write evidence: %w", unwrapPath(err))
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write evidence: %w", unwrapPath(err))
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write evidence: %w", unwrapPath(err))
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write evidence: %w", unwrapPath(err))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write evidence: %w", unwrapPath(err))
	}
	return nil
}
