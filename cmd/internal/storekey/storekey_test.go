package storekey

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/projections"
)

const storeID = "3d1a160e-83e4-4b24-b222-ee5b36ff9ce4"

func initialized(t *testing.T) (string, *bolt.Store, *events.Factory) {
	t.Helper()
	root := filepath.Join(t.TempDir(), ".tree-ring")
	st, err := bolt.OpenRoot(root, bolt.Options{Projections: projections.All()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &events.Factory{Now: eventstest.Clock(eventstest.Epoch, time.Second), NewID: eventstest.IDs(3), Actor: "cli"}
	e, err := f.New(events.StoreStream, events.TypeStoreInitialized, &events.StoreInitialized{StoreID: storeID, Format: 1, ProjectRootFingerprint: "fp", CLIVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(context.Background(), events.StoreStream, 0, e); err != nil {
		t.Fatal(err)
	}
	return root, st, f
}

// Ensure makes the key and its record once; a later call writes nothing;
// a key file that is gone or another key is refused, never replaced.
func TestEnsure(t *testing.T) {
	ctx := context.Background()
	root, st, f := initialized(t)
	if _, _, ok, err := Recorded(ctx, st); ok || err != nil {
		t.Fatalf("recorded before: %v %v", ok, err)
	}
	id, priv, err := Ensure(ctx, root, st, f)
	if err != nil || id != storeID {
		t.Fatalf("ensure: %s %v", id, err)
	}
	rec, pos, ok, err := Recorded(ctx, st)
	if !ok || err != nil || pos != 2 || !rec.Equal(priv.Public()) {
		t.Fatalf("recorded: %v %d %v", ok, pos, err)
	}
	_, again, err := Ensure(ctx, root, st, f)
	head, _, _ := st.Head()
	if err != nil || !again.Equal(priv) || head != 2 {
		t.Fatalf("second ensure: %v, head %d", err, head)
	}
	keyFile := filepath.Join(root, fleetsign.KeyFile)
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	var mm *MismatchError
	if _, _, err := Ensure(ctx, root, st, f); !errors.As(err, &mm) {
		t.Fatalf("without the key file: %v", err)
	}
	if _, err := fleetsign.CreateKey(root, rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Ensure(ctx, root, st, f); !errors.As(err, &mm) {
		t.Fatalf("with another key file: %v", err)
	}
	if head, _, _ := st.Head(); head != 2 {
		t.Fatalf("a refused ensure appended: head %d", head)
	}
}
