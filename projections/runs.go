package projections

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tree-ring/tree-ring/events"
)

// Runs is the run ledger: per scope key, the latest MaxRunsPerScope run
// records in the order they started, and an index of the runs still
// running (for interrupted recovery).
//
// Keys (scope is 24 hex characters, seq a big-endian uint64):
//
//	m/<scope>          head seq (oldest kept) and next seq, 16 bytes
//	s/<scope>/<seq>    the run record, compact JSON (RunRecord)
//	i/<run id>         scope and seq of the run's record, 24+8 bytes
//	r/<scope>/<run id> pid of a running run, 8 bytes
//
// Every write is a Get/Put/Delete on a known key: the fold never iterates,
// so it costs the same on the hook path and in verify's in-memory re-fold
// whatever the size of the ledger. Readers iterate at most
// MaxRunsPerScope records of one scope.
type Runs struct{}

// RunsName is the projection's bucket name.
const RunsName = "runs"

// MaxRunsPerScope is how many run records one scope keeps; older records
// are dropped from the projection (the events stay in the ledger).
const MaxRunsPerScope = 1000

// RunRecordSchema is the version of RunRecord.
const RunRecordSchema = 1

func init() { register(Runs{}) }

// Name implements Projection.
func (Runs) Name() string { return RunsName }

// Version implements Projection.
func (Runs) Version() int { return 1 }

// Handles implements Projection.
func (Runs) Handles(t string) bool {
	return t == events.TypeRunStarted || t == events.TypeRunFinished || t == events.TypeRunInterrupted
}

// RunRecord is the materialized record of one run. Its JSON is stable: it
// is what `tree-ring runs --json` prints (docs/runs.md).
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
	v, err := events.DecodePayload(e)
	if err != nil {
		return err
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
		return runEnded(kv, p.RunID, p.ScopeKey, func(r *RunRecord) bool {
			// The run's own process outranks another's guess that it died.
			if r.Status != events.RunStatusRunning && r.Status != events.RunStatusInterrupted {
				return false
			}
			r.Status, r.Stage, r.Diagnostic = p.Status, p.Stage, p.Diagnostic
			r.EndedAt, r.UpdatedAt = p.EndedAt, p.EndedAt
			d := p.DurationMS
			r.DurationMS = &d
			if p.InputSHA256 != "" {
				r.InputSHA256, r.InputChars = p.InputSHA256, p.InputChars
			}
			r.Telemetry = p.Telemetry
			return true
		})
	case *events.RunInterrupted:
		if err := onStream(e, p.RunID); err != nil {
			return err
		}
		return runEnded(kv, p.RunID, p.ScopeKey, func(r *RunRecord) bool {
			if r.Status != events.RunStatusRunning {
				return false
			}
			r.Status, r.UpdatedAt = events.RunStatusInterrupted, p.DetectedAt
			return true
		})
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
	if kv.Get(idxKey(p.RunID)) != nil {
		return nil // a second run.started of one run (only via import): first wins
	}
	head, next := scopeMeta(kv, p.ScopeKey)
	rec := RunRecord{
		SchemaVersion: RunRecordSchema, RunID: p.RunID, ScopeKey: p.ScopeKey, Command: p.Command,
		Harness: p.Harness, Status: events.RunStatusRunning, Stage: p.Stage, PID: p.PID,
		StartedAt: p.StartedAt, UpdatedAt: p.StartedAt, InputSHA256: p.InputSHA256, InputChars: p.InputChars,
	}
	if err := putRecord(kv, recKey(p.ScopeKey, next), &rec); err != nil {
		return err
	}
	idx := make([]byte, 0, events.RunScopeKeyLen+8)
	idx = binary.BigEndian.AppendUint64(append(idx, p.ScopeKey...), next)
	if err := kv.Put(idxKey(p.RunID), idx); err != nil {
		return err
	}
	if err := kv.Put(runningKey(p.ScopeKey, p.RunID), binary.BigEndian.AppendUint64(nil, uint64(p.PID))); err != nil {
		return err
	}
	next++
	for next-head > MaxRunsPerScope {
		if err := dropRecord(kv, p.ScopeKey, head); err != nil {
			return err
		}
		head++
	}
	return kv.Put(metaKey(p.ScopeKey), meta(head, next))
}

// dropRecord removes the oldest record of a scope. A running run keeps its
// entry in the running index, so recovery still closes it in the ledger.
func dropRecord(kv KV, scope string, seq uint64) error {
	k := recKey(scope, seq)
	raw := kv.Get(k)
	if raw == nil {
		return nil
	}
	var id struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal(raw, &id); err != nil {
		return fmt.Errorf("runs: record %s/%d: %w", scope, seq, err)
	}
	if err := kv.Delete(idxKey(id.RunID)); err != nil {
		return err
	}
	return kv.Delete(k)
}

// runEnded applies a terminal event: update changes the record and reports
// whether it did. A run whose record was dropped only leaves the running
// index.
func runEnded(kv KV, runID, scope string, update func(*RunRecord) bool) error {
	idx := kv.Get(idxKey(runID))
	if idx != nil && len(idx) == events.RunScopeKeyLen+8 && string(idx[:events.RunScopeKeyLen]) == scope {
		k := recKey(scope, binary.BigEndian.Uint64(idx[events.RunScopeKeyLen:]))
		raw := kv.Get(k)
		if raw == nil {
			return fmt.Errorf("runs: index of run %s points to a missing record", runID)
		}
		var rec RunRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fmt.Errorf("runs: record of run %s: %w", runID, err)
		}
		if !update(&rec) {
			return nil
		}
		if err := putRecord(kv, k, &rec); err != nil {
			return err
		}
	}
	return kv.Delete(runningKey(scope, runID))
}

func putRecord(kv KV, k []byte, r *RunRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("runs: encode record %s: %w", r.RunID, err)
	}
	return kv.Put(k, b)
}

func scopeMeta(kv KV, scope string) (head, next uint64) {
	v := kv.Get(metaKey(scope))
	if len(v) != 16 {
		return 0, 0
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])
}

func meta(head, next uint64) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16), head)
	return binary.BigEndian.AppendUint64(b, next)
}

func metaKey(scope string) []byte { return []byte("m/" + scope) }
func idxKey(runID string) []byte  { return []byte("i/" + runID) }

func recKey(scope string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("s/"+scope+"/"), seq)
}

func runningKey(scope, runID string) []byte { return []byte("r/" + scope + "/" + runID) }

// errStop ends a ForEach early.
var errStop = errors.New("stop")

// LatestRuns returns up to n records of scope, newest first, reading at most
// n records. examined is how many records it read.
func LatestRuns(kv KV, scope string, n int) (recs []RunRecord, examined int, err error) {
	head, next := scopeMeta(kv, scope)
	for seq := next; seq > head && len(recs) < n && examined < MaxRunsPerScope; seq-- {
		raw := kv.Get(recKey(scope, seq-1))
		examined++
		if raw == nil {
			continue
		}
		var r RunRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, examined, fmt.Errorf("runs: record %s/%d: %w", scope, seq-1, err)
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
	prefix := []byte("r/" + scope + "/")
	err := kv.ForEach(prefix, func(k, v []byte) error {
		if len(out) >= limit {
			return errStop
		}
		if len(v) != 8 {
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

// RunRecordOf returns the record of one run, if the projection still holds it.
func RunRecordOf(kv KV, runID string) (RunRecord, bool, error) {
	idx := kv.Get(idxKey(runID))
	if len(idx) != events.RunScopeKeyLen+8 {
		return RunRecord{}, false, nil
	}
	raw := kv.Get(recKey(string(idx[:events.RunScopeKeyLen]), binary.BigEndian.Uint64(idx[events.RunScopeKeyLen:])))
	if raw == nil {
		return RunRecord{}, false, nil
	}
	var r RunRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return RunRecord{}, false, fmt.Errorf("runs: record of run %s: %w", runID, err)
	}
	return r, true, nil
}

// EachRun visits every record of every scope, scope by scope (in scope key
// order), oldest first within a scope. It stops early when fn returns an
// error.
func EachRun(kv KV, fn func(r *RunRecord) error) error {
	return kv.ForEach([]byte("s/"), func(k, v []byte) error {
		var r RunRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("runs: record %q: %w", k, err)
		}
		return fn(&r)
	})
}
