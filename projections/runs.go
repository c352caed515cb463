package projections

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/fold"
)

// Runs is the run ledger: per scope key, the latest MaxRunsPerScope run
// records in the order they started, and an index of the runs still
// running (for interrupted recovery).
//
// Keys (scope is 24 hex characters, slot a big-endian uint16):
//
//	s/<scope>           how many runs the scope has started, 8 bytes
//	s/<scope>/<slot>    a run record (encodeRecord); run n of a
//	                    scope lives in slot n % MaxRunsPerScope, so the
//	                    1001st run overwrites the 1st: retention is bounded
//	                    and needs no deletes
//	u/<scope>/<run id>  an unfinished (running) run: pid (8 bytes) and slot
//	                    (2 bytes)
//	x/<scope>/<run id>  an interrupted run whose own process may still
//	                    finish it: slot (2 bytes); dropped when the late
//	                    run.finished arrives or the slot is reused
//
// The fold only Gets, Puts and Deletes known keys and never iterates. Its
// inserts and deletes touch the small running/interrupted sets, whose
// prefixes sort after the records: within one write transaction bbolt
// keeps a leaf's entries in one slice and shifts every later entry on an
// insert or delete, so churn in front of the records would cost O(records)
// per event in a rebuild. Readers visit at most MaxRunsPerScope records of
// a scope. The count sorts just before the scope's records (layout 2; it
// was m/<scope>): a hook's run is the first of a new session scope, so its
// count and record share a page of the commit.
type Runs struct{}

// RunsName is the projection's bucket name.
const RunsName = "runs"

// MaxRunsPerScope is how many run records one scope keeps; older records
// are overwritten in the projection (the events stay in the ledger).
const MaxRunsPerScope = 1000

// RunRecordSchema is the version of RunRecord.
const RunRecordSchema = 1

func init() { register(Runs{}) }

// Name implements Projection.
func (Runs) Name() string { return RunsName }

// Version implements Projection.
func (Runs) Version() int { return 2 }

// Batch implements fold.Batcher: a hook starts and finishes its run in
// one transaction, so its u/ key is put and deleted again; held in an
// overlay it never reaches the bucket, and the commit writes no page for
// it (docs/benchmarks.md, *SessionStart hook*).
func (Runs) Batch(kv KV) fold.Batch { return fold.NewOverlay(kv) }

// Handles implements Projection.
func (Runs) Handles(t string) bool {
	return t == events.TypeRunStarted || t == events.TypeRunFinished || t == events.TypeRunInterrupted
}

// RunRecord is the materialized record of one run. Its JSON is stable: it
// is what `tree-ring runs --json` prints (docs/runs.md). It is stored in a
// compact binary form (encodeRecord), several times cheaper to fold than
// JSON.
type RunRecord struct {
	SchemaVersion int                  `json:"schema_version"`
	RunID         string               `json:"run_id"`
	ScopeKey      string               `json:"scope_key"`
	Command       string               `json:"command"`
	Harness       string               `json:"harness,omitempty"`
	Status        string               `json:"status"`
	Stage         string               `json:"stage"`
	PID           int                  `json:"pid"`
	StartedAt     string               `json:"started_at"`
	UpdatedAt     string               `json:"updated_at"`
	EndedAt       string               `json:"ended_at,omitempty"`
	DurationMS    *int64               `json:"duration_ms,omitempty"`
	Diagnostic    string               `json:"diagnostic,omitempty"`
	InputSHA256   string               `json:"input_sha256,omitempty"`
	InputChars    int64                `json:"input_chars,omitempty"`
	Telemetry     *events.RunTelemetry `json:"telemetry,omitempty"`
}

// Apply implements Projection.
func (Runs) Apply(kv KV, _ Bodies, e *events.Envelope) error {
	v, err := plainPayload(e)
	if err != nil {
		return fmt.Errorf("runs: %w", err)
	}
	switch p := v.(type) {
	case *events.RunStarted:
		if err := onStream(e, p.RunID); err != nil {
			return err
		}
		return runStarted(kv, p)
	case *events.RunFinished:
		if err := onStream(e, p.RunID); err != nil {
			return err
		}
		return runFinished(kv, p)
	case *events.RunInterrupted:
		if err := onStream(e, p.RunID); err != nil {
			return err
		}
		return runInterrupted(kv, p)
	}
	return fmt.Errorf("runs: unexpected payload %T", v)
}

// onStream requires a run event to sit on the stream of its own run id.
func onStream(e *events.Envelope, runID string) error {
	if e.Stream != events.RunStream(runID) {
		return fmt.Errorf("runs: %s for run %s is on stream %s", e.Type, runID, e.Stream)
	}
	return nil
}

func runStarted(kv KV, p *events.RunStarted) error {
	rk := runningKey(p.ScopeKey, p.RunID)
	if kv.Get(rk) != nil || kv.Get(interruptedKey(p.ScopeKey, p.RunID)) != nil {
		return nil // a second run.started of a live run (only via import): first wins
	}
	n := scopeCount(kv, p.ScopeKey)
	slot := uint16(n % MaxRunsPerScope)
	k := recKey(p.ScopeKey, slot)
	if old := kv.Get(k); old != nil {
		// Reusing the slot drops the oldest record. A running run keeps
		// its running entry (recovery still closes it in the ledger); an
		// interrupted one can no longer be finished here.
		id, status, err := peekRecord(old)
		if err != nil {
			return fmt.Errorf("runs: record %s/%d: %w", p.ScopeKey, slot, err)
		}
		if status == events.RunStatusInterrupted {
			if err := kv.Delete(interruptedKey(p.ScopeKey, id)); err != nil {
				return err
			}
		}
	}
	rec := RunRecord{
		SchemaVersion: RunRecordSchema, RunID: p.RunID, ScopeKey: p.ScopeKey, Command: p.Command,
		Harness: p.Harness, Status: events.RunStatusRunning, Stage: p.Stage, PID: p.PID,
		StartedAt: p.StartedAt, UpdatedAt: p.StartedAt, InputSHA256: p.InputSHA256, InputChars: p.InputChars,
	}
	if err := putRecord(kv, k, &rec); err != nil {
		return err
	}
	rv := binary.BigEndian.AppendUint64(make([]byte, 0, 10), uint64(p.PID))
	if err := kv.Put(rk, binary.BigEndian.AppendUint16(rv, slot)); err != nil {
		return err
	}
	return kv.Put(countKey(p.ScopeKey), binary.BigEndian.AppendUint64(nil, n+1))
}

func runFinished(kv KV, p *events.RunFinished) error {
	// The run's own process outranks another's guess that it died: a
	// run.finished also closes an interrupted run.
	for _, k := range [][]byte{runningKey(p.ScopeKey, p.RunID), interruptedKey(p.ScopeKey, p.RunID)} {
		v := kv.Get(k)
		if v == nil {
			continue
		}
		slot := binary.BigEndian.Uint16(v[len(v)-2:])
		if err := kv.Delete(k); err != nil {
			return err
		}
		return updateRecord(kv, p.ScopeKey, slot, p.RunID, func(r *RunRecord) {
			r.Status, r.Stage, r.Diagnostic = p.Status, p.Stage, p.Diagnostic
			r.EndedAt, r.UpdatedAt = p.EndedAt, p.EndedAt
			d := p.DurationMS
			r.DurationMS = &d
			if p.InputSHA256 != "" {
				r.InputSHA256, r.InputChars = p.InputSHA256, p.InputChars
			}
			r.Telemetry = p.Telemetry
		})
	}
	return nil // not running: already ended (first terminal wins) or never started here
}

func runInterrupted(kv KV, p *events.RunInterrupted) error {
	rk := runningKey(p.ScopeKey, p.RunID)
	v := kv.Get(rk)
	if v == nil {
		return nil
	}
	slot := binary.BigEndian.Uint16(v[8:])
	if err := kv.Delete(rk); err != nil {
		return err
	}
	found := false
	err := updateRecord(kv, p.ScopeKey, slot, p.RunID, func(r *RunRecord) {
		found = true
		r.Status, r.UpdatedAt = events.RunStatusInterrupted, p.DetectedAt
	})
	if err != nil || !found {
		return err
	}
	return kv.Put(interruptedKey(p.ScopeKey, p.RunID), binary.BigEndian.AppendUint16(nil, slot))
}

// updateRecord applies fn to the record of runID in slot, if the slot still
// holds it (it may have been reused by a newer run).
func updateRecord(kv KV, scope string, slot uint16, runID string, fn func(*RunRecord)) error {
	k := recKey(scope, slot)
	raw := kv.Get(k)
	if raw == nil {
		return fmt.Errorf("runs: index of run %s points to an empty slot", runID)
	}
	if id, _, err := peekRecord(raw); err != nil || id != runID {
		return err // the slot was reused by a newer run
	}
	rec, err := decodeRecord(raw)
	if err != nil {
		return fmt.Errorf("runs: record %s/%d: %w", scope, slot, err)
	}
	fn(&rec)
	return putRecord(kv, k, &rec)
}

func putRecord(kv KV, k []byte, r *RunRecord) error { return kv.Put(k, encodeRecord(r)) }

func scopeCount(kv KV, scope string) uint64 {
	v := kv.Get(countKey(scope))
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func countKey(scope string) []byte { return []byte("s/" + scope) }

func recKey(scope string, slot uint16) []byte {
	return binary.BigEndian.AppendUint16([]byte("s/"+scope+"/"), slot)
}

func runningKey(scope, runID string) []byte     { return []byte("u/" + scope + "/" + runID) }
func interruptedKey(scope, runID string) []byte { return []byte("x/" + scope + "/" + runID) }

// errStop ends a ForEach early.
var errStop = errors.New("stop")

// LatestRuns returns up to n records of scope, newest first, reading at most
// n records (never more than MaxRunsPerScope). examined is how many
// records it read.
func LatestRuns(kv KV, scope string, n int) (recs []RunRecord, examined int, err error) {
	count := scopeCount(kv, scope)
	for seq := count; seq > 0 && len(recs) < n && examined < MaxRunsPerScope; seq-- {
		slot := uint16((seq - 1) % MaxRunsPerScope)
		raw := kv.Get(recKey(scope, slot))
		examined++
		if raw == nil {
			return nil, examined, fmt.Errorf("runs: scope %s: slot %d is empty", scope, slot)
		}
		r, err := decodeRecord(raw)
		if err != nil {
			return nil, examined, fmt.Errorf("runs: record %s/%d: %w", scope, slot, err)
		}
		recs = append(recs, r)
	}
	return recs, examined, nil
}

// RunningRun is an entry of the running index.
type RunningRun struct {
	RunID string
	PID   int
}

// RunningRuns lists up to limit runs of scope that are still running, in
// run id order.
func RunningRuns(kv KV, scope string, limit int) ([]RunningRun, error) {
	var out []RunningRun
	prefix := []byte("u/" + scope + "/")
	err := kv.ForEach(prefix, func(k, v []byte) error {
		if len(out) >= limit {
			return errStop
		}
		if len(v) != 10 {
			return fmt.Errorf("runs: running index %q: bad value", k)
		}
		out = append(out, RunningRun{RunID: string(k[len(prefix):]), PID: int(binary.BigEndian.Uint64(v))})
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return out, err
}

// AwaitsFinish reports whether run.finished of runID would still change its
// record: the run is running, or interrupted with its record still held.
func AwaitsFinish(kv KV, scope, runID string) bool {
	return kv.Get(runningKey(scope, runID)) != nil || kv.Get(interruptedKey(scope, runID)) != nil
}

// EachRun visits every record of every scope, scope by scope (in scope key
// order). It stops early when fn returns an error.
func EachRun(kv KV, fn func(r *RunRecord) error) error {
	return kv.ForEach([]byte("s/"), func(k, v []byte) error {
		if bytes.IndexByte(k[len("s/"):], '/') < 0 {
			return nil // a scope's count
		}
		r, err := decodeRecord(v)
		if err != nil {
			return fmt.Errorf("runs: record %q: %w", k, err)
		}
		return fn(&r)
	})
}

// Stored record layout, version 1:
//
//	byte 0       recordFormat
//	byte 1       status (index in runStatusCodes)
//	bytes 2..27  run id (26 bytes)
//	byte 28      1 if the record has telemetry
//	then, each as a uvarint length and bytes: scope key, command, harness,
//	stage, started_at, updated_at, ended_at, diagnostic, input_sha256,
//	query_class, receipt_id; then uvarints: pid, input_chars, and
//	duration_ms, result_count and items each plus one (0: absent).
const (
	recordFormat = 1
	recordHeader = 29
)

var runStatusCodes = [...]string{
	events.RunStatusRunning, events.RunStatusSucceeded, events.RunStatusFailed,
	events.RunStatusAborted, events.RunStatusInterrupted,
}

func statusCode(s string) byte {
	for i, v := range runStatusCodes {
		if v == s {
			return byte(i)
		}
	}
	panic("runs: unknown status " + s) // payload Check rules this out
}

func encodeRecord(r *RunRecord) []byte {
	t := r.Telemetry
	var tel events.RunTelemetry
	hasTel := byte(0)
	if t != nil {
		tel, hasTel = *t, 1
	}
	b := make([]byte, 0, 256)
	b = append(b, recordFormat, statusCode(r.Status))
	b = append(b, r.RunID...)
	b = append(b, hasTel)
	for _, f := range []string{r.ScopeKey, r.Command, r.Harness, r.Stage, r.StartedAt, r.UpdatedAt,
		r.EndedAt, r.Diagnostic, r.InputSHA256, tel.QueryClass, tel.ReceiptID} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.AppendUvarint(b, uint64(r.PID))
	b = binary.AppendUvarint(b, uint64(r.InputChars))
	b = binary.AppendUvarint(b, plusOne(r.DurationMS))
	var rc *int64
	if tel.ResultCount != nil {
		v := int64(*tel.ResultCount)
		rc = &v
	}
	b = binary.AppendUvarint(b, plusOne(rc))
	return binary.AppendUvarint(b, plusOne(tel.Items))
}

func plusOne(v *int64) uint64 {
	if v == nil {
		return 0
	}
	return uint64(*v) + 1
}

var errRecord = errors.New("malformed stored record")

// peekRecord reads the run id and status without decoding the rest.
func peekRecord(b []byte) (runID, status string, err error) {
	if len(b) < recordHeader || b[0] != recordFormat || int(b[1]) >= len(runStatusCodes) {
		return "", "", errRecord
	}
	return string(b[2:28]), runStatusCodes[b[1]], nil
}

func decodeRecord(b []byte) (RunRecord, error) {
	id, status, err := peekRecord(b)
	if err != nil {
		return RunRecord{}, err
	}
	r := RunRecord{SchemaVersion: RunRecordSchema, RunID: id, Status: status}
	hasTel := b[28] == 1
	p := b[recordHeader:]
	str := func() string {
		n, k := binary.Uvarint(p)
		if k <= 0 || uint64(len(p)-k) < n {
			err = errRecord
			return ""
		}
		s := string(p[k : k+int(n)])
		p = p[k+int(n):]
		return s
	}
	num := func() uint64 {
		v, k := binary.Uvarint(p)
		if k <= 0 {
			err = errRecord
			return 0
		}
		p = p[k:]
		return v
	}
	opt := func() *int64 {
		v := num()
		if v == 0 {
			return nil
		}
		x := int64(v - 1)
		return &x
	}
	var tel events.RunTelemetry
	r.ScopeKey, r.Command, r.Harness, r.Stage = str(), str(), str(), str()
	r.StartedAt, r.UpdatedAt, r.EndedAt, r.Diagnostic = str(), str(), str(), str()
	r.InputSHA256, tel.QueryClass, tel.ReceiptID = str(), str(), str()
	r.PID, r.InputChars, r.DurationMS = int(num()), int64(num()), opt()
	if rc := opt(); rc != nil {
		v := int(*rc)
		tel.ResultCount = &v
	}
	tel.Items = opt()
	if err != nil || len(p) != 0 {
		return RunRecord{}, errRecord
	}
	if hasTel {
		r.Telemetry = &tel
	}
	return r, nil
}
