package bolt

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

var bg = context.Background()

// factory mints envelopes with a fixed clock (one millisecond per event)
// and sequential ids; safe for concurrent use.
type factory struct {
	now func() time.Time
	ids func() ulid.ULID
}

func newFactory() *factory {
	return &factory{now: eventstest.Clock(eventstest.Epoch, time.Millisecond), ids: eventstest.IDs(0)}
}

func (f *factory) events() *events.Factory {
	return &events.Factory{Now: f.now, NewID: f.ids, Actor: "test"}
}

// run mints a run.started event on stream run/<name>.
func (f *factory) run(name string, i int) events.Envelope {
	return f.events().Must(events.RunStream(name), events.TypeRunStarted, testRunPayload(name, i))
}

// testRunPayload is a valid run.started payload (run payloads are checked
// on append) that differs by name and i, so events are small and distinct.
func testRunPayload(name string, i int) *events.RunStarted {
	sum := sha256.Sum256([]byte(name))
	var id ulid.ULID
	copy(id[1:], sum[:15])
	return &events.RunStarted{
		RunID: id.String(), ScopeKey: "0123456789abcdef01234567", Command: events.RunCmdEventsImport,
		Stage: fmt.Sprintf("stage-%d", i), PID: i + 1, StartedAt: events.FormatRunTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)),
	}
}

func (f *factory) trust(harness string) events.Envelope {
	return f.events().Must(events.HarnessStream(harness), events.TypeTrustRequired, &events.TrustRequired{
		Transition: events.Transition{From: "unsupported", To: "needs-trust"}, HarnessID: harness,
	})
}

// countProjection is a small realistic projection: events per type, and
// each stream's version and last type.
type countProjection struct {
	name    string
	version int
	failOn  string // Apply fails for events of this actor (tests)
}

func (p *countProjection) Name() string        { return p.name }
func (p *countProjection) Version() int        { return p.version }
func (p *countProjection) Handles(string) bool { return true }
func (p *countProjection) Apply(kv fold.KV, _ fold.Bodies, e *events.Envelope) error {
	if p.failOn != "" && e.Actor == p.failOn {
		return errors.New("refused by test projection")
	}
	k := []byte("type/" + e.Type)
	var n uint64
	if v := kv.Get(k); len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	if err := kv.Put(k, binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
		return err
	}
	v := binary.BigEndian.AppendUint64(nil, e.Version)
	if p.version > 1 {
		v = append(v, e.Type...)
	}
	return kv.Put([]byte("stream/"+e.Stream), v)
}

func testProjection() *countProjection { return &countProjection{name: "test_counts", version: 1} }

// openTest opens a fresh ledger under a temp root. On cleanup the store is
// closed and checked: Verify with the same projections, unless the test
// damaged it on purpose (then only bbolt's page check; see damaged).
func openTest(t *testing.T, opts Options) (*Store, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), ".tree-ring")
	st, err := OpenRoot(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	path := st.Path()
	t.Cleanup(func() {
		st.Close()
		checkLedger(t, path, opts.Projections, !damaged[path])
	})
	return st, path
}

// damaged lists ledgers a test broke on purpose.
var damaged = map[string]bool{}

// checkLedger runs Verify (full) or bbolt's Check (pages only) on a closed
// ledger.
func checkLedger(t *testing.T, path string, projs []fold.Projection, full bool) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		return
	}
	if !full {
		db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			t.Errorf("cleanup: open %s: %v", path, err)
			return
		}
		defer db.Close()
		_ = db.View(func(tx *bbolt.Tx) error {
			for err := range tx.Check() {
				t.Errorf("cleanup: bbolt check: %v", err)
			}
			return nil
		})
		return
	}
	st, err := Open(path, Options{ReadOnly: true, Projections: projs})
	if err != nil {
		t.Errorf("cleanup: open: %v", err)
		return
	}
	defer st.Close()
	if _, err := st.Verify(bg); err != nil {
		t.Errorf("cleanup: verify: %v", err)
	}
}

// rawUpdate changes a closed ledger directly through bbolt.
func rawUpdate(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	damaged[path] = true
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// txID is the id of the last committed transaction: it moves only when
// something was committed.
func txID(t *testing.T, st *Store) int {
	t.Helper()
	var id int
	if err := st.db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "absent: " + err.Error()
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func mustAppend(t *testing.T, st *Store, stream string, expected int64, evs ...events.Envelope) []uint64 {
	t.Helper()
	pos, err := st.Append(bg, stream, expected, evs...)
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

func readAll(t *testing.T, st *Store) []events.Envelope {
	t.Helper()
	var out []events.Envelope
	if err := st.ReadAll(bg, 0, func(e *events.Envelope) error { out = append(out, *e); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
