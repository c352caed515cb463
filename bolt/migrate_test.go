package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/fold"
	bbolt "go.etcd.io/bbolt"
)

// toFormat1 rewrites a closed ledger's indexes as format 1 wrote them: one
// streams key (stream, 0x00, version → position) and one ids key (id →
// position) per event, no block buckets, meta.format "1".
func toFormat1(t *testing.T, path string) {
	t.Helper()
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		streams, err := tx.CreateBucket(bucketStreamsV1)
		if err != nil {
			return err
		}
		ids, err := tx.CreateBucket(bucketIDsV1)
		if err != nil {
			return err
		}
		if err := unpackAll(tx); err != nil { // format 1 stored the JSON
			return err
		}
		err = tx.Bucket(bucketEvents).ForEach(func(k, v []byte) error {
			e, err := events.DecodeStoredRef(v)
			if err != nil {
				return err
			}
			if err := streams.Put(streamKey(e.Stream, e.Version), append([]byte(nil), k...)); err != nil {
				return err
			}
			return ids.Put(e.ID[:], append([]byte(nil), k...))
		})
		if err != nil {
			return err
		}
		for _, b := range [][]byte{bucketIDBlocks, bucketStreamBlocks} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, []byte(formatV1))
	})
}

// unpackAll stores every event value of tx's ledger as its JSON, as
// formats 1 and 2 did.
func unpackAll(tx *bbolt.Tx) error {
	b := tx.Bucket(bucketEvents)
	var keys, vals [][]byte
	err := b.ForEach(func(k, v []byte) error {
		raw, err := unpackEvent(nil, v)
		keys, vals = append(keys, append([]byte(nil), k...)), append(vals, append([]byte(nil), raw...))
		return err
	})
	for i := 0; err == nil && i < len(keys); i++ {
		err = b.Put(keys[i], vals[i])
	}
	return err
}

// ledgerFacts is what a raw look at a closed ledger finds about its format.
func ledgerFacts(t *testing.T, path string) string {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return formatFacts(db)
}

// formatFacts lists meta.format, meta.index_migrated and the keys of every
// index bucket, format 1 or 2, that exists.
func formatFacts(db *bbolt.DB) string {
	var out []string
	_ = db.View(func(tx *bbolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		out = append(out, "format="+string(m.Get(keyFormat)))
		if v := m.Get(keyMigrated); len(v) == 8 {
			out = append(out, fmt.Sprintf("migrated=%d", binary.BigEndian.Uint64(v)))
		}
		for _, b := range [][]byte{bucketStreamsV1, bucketIDsV1, bucketStreamBlocks, bucketIDBlocks} {
			if bk := tx.Bucket(b); bk != nil {
				out = append(out, fmt.Sprintf("%s=%d", b, bk.Stats().KeyN))
			}
		}
		return nil
	})
	return strings.Join(out, " ")
}

func readStream(t *testing.T, st *Store, stream string) []events.Envelope {
	t.Helper()
	var out []events.Envelope
	if err := st.ReadStream(bg, stream, 0, func(e *events.Envelope) error { out = append(out, *e); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameEvents(a, b []events.Envelope) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Hash != b[i].Hash || a[i].Position != b[i].Position {
			return false
		}
	}
	return true
}

// TestMigrateFormat1: a format-1 ledger (written here by rewriting a
// ledger's indexes as format 1 kept them) is refused by a read-only open,
// stays format 1 after a migration stopped between two of its
// transactions, and is migrated by the next write open to a ledger that
// reads, appends, imports and verifies as before.
func TestMigrateFormat1(t *testing.T) {
	defer func(n int) { migrateChunk = n }(migrateChunk)
	migrateChunk = 70
	projs := []fold.Projection{testProjection()}
	st, path := openTest(t, Options{Projections: projs})
	st.db.NoSync = true // not under test
	// Local ids (marker 1) sort after the imported ones (marker 0): the
	// import's ids go before every id block.
	local := &factory{now: eventstest.Clock(eventstest.Epoch, time.Millisecond), ids: eventstest.IDs(1)}
	for i := 0; i < 15; i++ {
		batch := make([]events.Envelope, 10)
		for j := range batch {
			batch[j] = local.run("a", i*10+j)
		}
		mustAppend(t, st, "run/a", int64(i*10), batch...)
		mustAppend(t, st, "run/b", AnyVersion, local.run("b", i))
	}
	foreign := newFactory()
	var imported []events.Envelope
	for i := 0; i < 100; i++ {
		imported = append(imported, foreign.run(fmt.Sprintf("c%d", i%7), i))
	}
	if res, err := st.Import(bg, imported); err != nil || res.Imported != 100 {
		t.Fatalf("import: %+v %v", res, err)
	}
	want, wantA := readAll(t, st), readStream(t, st, "run/a")
	st.Close()
	toFormat1(t, path)
	const n = 265
	if got := ledgerFacts(t, path); got != fmt.Sprintf("format=1 streams=%d ids=%d", n, n) {
		t.Fatalf("format-1 fixture: %s", got)
	}
	before := fileDigest(t, path)

	// Only an open with Migrate (init's) migrates: a read-only open and a
	// plain write open (remember, a hook of a newer build) refuse, so the
	// project's installed older program keeps reading its ledger.
	refused := func(step string) {
		t.Helper()
		for _, opts := range []Options{{ReadOnly: true, Projections: projs}, {Projections: projs}} {
			_, err := Open(path, opts)
			var fe *FormatMigrationError
			if !errors.As(err, &fe) || fe.Found != "1" || !strings.Contains(err.Error(), "run `tree-ring init`") {
				t.Fatalf("%s: open (read-only %v): %v, want a *FormatMigrationError naming the step", step, opts.ReadOnly, err)
			}
		}
	}
	refused("format 1")
	if fileDigest(t, path) != before {
		t.Fatal("a read-only open changed the file")
	}

	// A migration stopped after its first transaction (killed: the next
	// transaction never ran) leaves a format-1 ledger, old indexes intact.
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		done, err := migrateStep(tx, migrateChunk)
		if err == nil && done {
			err = errors.New("one step finished the migration")
		}
		return err
	})
	if got, wantFacts := ledgerFacts(t, path), fmt.Sprintf("format=1 migrated=70 streams=%d ids=%d stream_blocks=", n, n); !strings.HasPrefix(got, wantFacts) {
		t.Fatalf("after one step: %s, want %s...", got, wantFacts)
	}
	refused("midway")

	// The next write open completes it.
	commits := 0
	st, err := Open(path, Options{Migrate: true, Projections: projs, OnCommit: func() { commits++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if commits != 3 { // positions 71..140, 141..210, then 211..265 and the switch to format 3 (its indexes are format 2's)
		t.Errorf("migration took %d commits, want 3", commits)
	}
	// Ids in blocks of 32: the 165 local ones (5 full, 5), the 100
	// imported ones before them (32, 13, then 55 appended: 32, 32, 4).
	if got := formatFacts(st.db); got != "format="+FormatVersion+" stream_blocks=11 id_blocks=10" {
		t.Errorf("after migration: %s", got)
	}
	if got := readAll(t, st); !sameEvents(got, want) {
		t.Error("events differ after the migration")
	}
	if got := readStream(t, st, "run/a"); !sameEvents(got, wantA) || len(got) != 150 {
		t.Errorf("run/a reads %d events after the migration, want the same 150", len(got))
	}
	if _, err := st.Append(bg, "run/a", 149, local.run("a", 999)); !errors.As(err, new(*WrongExpectedVersionError)) {
		t.Errorf("append at a stale version: %v", err)
	}
	mustAppend(t, st, "run/a", 150, local.run("a", 150))
	if res, err := st.Import(bg, imported); err != nil || res.Skipped != 100 {
		t.Errorf("re-import: %+v %v, want all skipped by id", res, err)
	}
	// An indexed id is found: the append of the same event is a retry.
	if pos, err := st.Append(bg, imported[0].Stream, AnyVersion, imported[0]); err != nil || len(pos) != 1 || pos[0] != 166 {
		t.Errorf("append of an imported event again: %v %v, want its position 166", pos, err)
	}
	if _, err := st.Verify(bg); err != nil {
		t.Fatalf("verify after migration: %v", err)
	}
	delete(damaged, path) // a valid format-2 ledger again: the cleanup verifies it
}

const migrateChildEnv = "TREE_RING_MIGRATE_CHILD"

// migrateChild opens the format-1 ledger at path for writing, migrating
// it 7 events per transaction, and prints "done". The parent kills it.
func migrateChild(path string) {
	migrateChunk = 7
	st, err := Open(path, Options{LockTimeout: 10 * time.Second, Migrate: true, Projections: []fold.Projection{testProjection()}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	st.Close()
	fmt.Println("done")
}

// TestCrashDuringMigration kills a process migrating a format-1 ledger
// with SIGKILL at random moments. After every kill the ledger is either
// still format 1 with its old indexes whole (a read-only open refuses it
// with *FormatMigrationError) or format 3; the next write open finishes
// the migration, and the result verifies and holds the same events.
func TestCrashDuringMigration(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	projs := []fold.Projection{testProjection()}
	st, path := openTest(t, Options{Projections: projs})
	st.db.NoSync = true // setup only
	f := newFactory()
	const n = 3000
	envs := make([]events.Envelope, n)
	for i := range envs {
		envs[i] = f.run(fmt.Sprintf("m%d", i%13), i)
	}
	if _, err := st.Import(bg, envs); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, st)
	st.Close()
	toFormat1(t, path)
	// The first kills rounds are killed at a random moment; the next one
	// runs to the end.
	const kills = 8
	kill := func(round int) <-chan time.Time {
		if round >= kills {
			return nil
		}
		return time.After(time.Duration(20+rng.IntN(200)) * time.Millisecond)
	}
	midway := 0
	for round := 0; ; round++ {
		facts := ledgerFacts(t, path)
		if strings.HasPrefix(facts, "format="+FormatVersion) {
			break
		}
		if !strings.Contains(facts, fmt.Sprintf(" streams=%d ids=%d", n, n)) {
			t.Fatalf("round %d: %s: the format-1 indexes are not whole", round, facts)
		}
		if _, err := Open(path, Options{ReadOnly: true, Projections: projs}); !errors.As(err, new(*FormatMigrationError)) {
			t.Fatalf("round %d: read-only open of %s: %v", round, facts, err)
		}
		if strings.Contains(facts, "migrated=") {
			midway++
		}
		if round > kills {
			t.Fatalf("not migrated by an open that was not killed: %s", facts)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), migrateChildEnv+"="+path)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: migration failed: %v %s", round, err, stderr.String())
			}
		case <-kill(round):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
		}
	}
	t.Logf("migration: %d kills found it midway", midway)
	st, err := Open(path, Options{Migrate: true, Projections: projs})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := readAll(t, st); !sameEvents(got, want) {
		t.Fatal("events differ after the migration")
	}
	if _, err := st.Verify(bg); err != nil {
		t.Fatalf("verify: %v", err)
	}
	delete(damaged, path)
}
