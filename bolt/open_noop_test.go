package bolt

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

// Opening an up-to-date ledger for writing writes nothing (a no-op write
// transaction would cost two fdatasyncs on every command).
func TestOpenUpToDateWritesNothing(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".tree-ring")
	st, err := OpenRoot(root, Options{Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	f := &events.Factory{Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }, NewID: ulid.Make, Actor: "t"}
	e, err := f.New(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{StoreID: "01234567-89ab-4def-8123-456789abcdef", Format: 1, ProjectRootFingerprint: "x", CLIVersion: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(context.Background(), events.StoreStream, 0, e); err != nil {
		t.Fatal(err)
	}
	st.Close()
	before, _ := os.ReadFile(filepath.Join(root, LedgerFile))
	st, err = OpenRoot(root, Options{Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if after, _ := os.ReadFile(filepath.Join(root, LedgerFile)); !bytes.Equal(before, after) {
		t.Fatal("opening an up-to-date ledger wrote to it")
	}
	// A projection missing its checkpoint (a new projection) is still
	// caught up on open.
	st, err = OpenRoot(root, Options{Projections: append(projections.All(), extraProjection{})})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ok, err := st.ready(); err != nil || !ok {
		t.Fatalf("after catch-up: ready %v %v", ok, err)
	}
}

type extraProjection struct{}

func (extraProjection) Name() string                                                     { return "extra" }
func (extraProjection) Version() int                                                     { return 1 }
func (extraProjection) Handles(string) bool                                              { return true }
func (extraProjection) Apply(projections.KV, projections.Bodies, *events.Envelope) error { return nil }
