package storekey

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// A rotation is recorded and signed by both keys: the chain moves to the
// new key after the rotation's position, store.key holds the new key and
// store.key.previous the old one, which signs the events up to the
// rotation until Retire drops it once the stream holds the rotation. A
// second rotation waits for that.
func TestRotate(t *testing.T) {
	ctx := context.Background()
	root, st, f := initialized(t)
	_, old, err := Ensure(ctx, root, st, f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Rotate(ctx, root, st, f)
	if err != nil || r.Position != 3 || r.StoreID != storeID {
		t.Fatalf("rotate: %+v %v", r, err)
	}
	chain, err := Chain(ctx, st, storeID)
	if err != nil || len(chain.Keys) != 2 || !chain.First().Equal(old.Public()) || !chain.Current().Equal(r.Key) || !chain.At(3).Equal(old.Public()) || !chain.At(4).Equal(r.Key) {
		t.Fatalf("chain after the rotation: %+v %v", chain, err)
	}
	cur, _, _ := fleetsign.LoadKey(root)
	prev, kept, _ := fleetsign.LoadPreviousKey(root)
	if _, pending, _ := fleetsign.LoadNextKey(root); pending || !cur.Public().(ed25519.PublicKey).Equal(r.Key) || !kept || !prev.Equal(old) {
		t.Fatalf("key files: next pending %v, current is the new key %v, previous kept %v", pending, cur.Public().(ed25519.PublicKey).Equal(r.Key), kept)
	}
	s, ok, err := LoadSigner(ctx, root, st, storeID)
	if err != nil || !ok {
		t.Fatalf("signer: %v %v", ok, err)
	}
	for pos, key := range map[uint64]ed25519.PublicKey{1: old.Public().(ed25519.PublicKey), 3: old.Public().(ed25519.PublicKey), 4: r.Key} {
		sig, pub, err := s.Sign(pos, strings.Repeat("a", 64))
		if err != nil || pub != fleetsign.EncodeKey(key) || fleetsign.Verify(key, storeID, pos, strings.Repeat("a", 64), sig) != nil {
			t.Errorf("position %d: not signed by the key in force (%s, %v)", pos, pub, err)
		}
	}
	if _, err := Rotate(ctx, root, st, f); err == nil || !strings.Contains(err.Error(), "publish, then rotate again") {
		t.Fatalf("a second rotation before publishing: %v", err)
	}
	if err := s.Retire(root, 2); err != nil {
		t.Fatal(err)
	}
	if _, kept, _ := fleetsign.LoadPreviousKey(root); !kept {
		t.Fatal("retired before the stream held the rotation")
	}
	if err := s.Retire(root, 3); err != nil {
		t.Fatal(err)
	}
	if _, kept, _ := fleetsign.LoadPreviousKey(root); kept {
		t.Fatal("the previous key is kept after the stream held the rotation")
	}
	s, _, _ = LoadSigner(ctx, root, st, storeID)
	if _, _, err := s.Sign(2, strings.Repeat("a", 64)); err == nil {
		t.Fatal("signed with a key that was retired")
	}
	if r2, err := Rotate(ctx, root, st, f); err != nil || r2.Position != 4 {
		t.Fatalf("the second rotation: %+v %v", r2, err)
	}
	if chain, err := Chain(ctx, st, storeID); err != nil || len(chain.Keys) != 3 {
		t.Fatalf("chain after two rotations: %d keys, %v", len(chain.Keys), err)
	}
}

// A crash between the steps of a rotation is settled by the next write
// open: a new key whose event never committed is dropped, one the ledger
// names takes store.key's place.
func TestRotateInterrupted(t *testing.T) {
	ctx := context.Background()
	root, st, f := initialized(t)
	_, old, err := Ensure(ctx, root, st, f)
	if err != nil {
		t.Fatal(err)
	}
	// Killed after writing the new key, before the event.
	if _, err := fleetsign.CreateNextKey(root, rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := LoadSigner(ctx, root, st, storeID); ok || err != nil {
		t.Fatalf("a signer with a rotation pending: %v %v", ok, err)
	}
	if _, k, err := Ensure(ctx, root, st, f); err != nil || !k.Equal(old) {
		t.Fatalf("ensure after an uncommitted rotation: %v", err)
	}
	if _, pending, _ := fleetsign.LoadNextKey(root); pending {
		t.Fatal("the uncommitted rotation's key is still there")
	}
	// Killed after the event, before the key files moved.
	next, err := fleetsign.CreateNextKey(root, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := fleetsign.Rotation(storeID, old, next)
	if _, err := st.Append(ctx, events.StoreStream, 2, f.Must(events.StoreStream, events.TypeStoreKeyRotated, &p)); err != nil {
		t.Fatal(err)
	}
	if _, k, err := Ensure(ctx, root, st, f); err != nil || !k.Equal(next) {
		t.Fatalf("ensure after a committed rotation: %v", err)
	}
	if prev, kept, _ := fleetsign.LoadPreviousKey(root); !kept || !prev.Equal(old) {
		t.Fatal("the old key is not kept after settling")
	}
}

// A rotation the previous key did not sign breaks the chain at its
// position.
func TestChainRefusesForgedRotation(t *testing.T) {
	ctx := context.Background()
	root, st, f := initialized(t)
	if _, _, err := Ensure(ctx, root, st, f); err != nil {
		t.Fatal(err)
	}
	_, forger, _ := ed25519.GenerateKey(rand.Reader)
	_, next, _ := ed25519.GenerateKey(rand.Reader)
	p := fleetsign.Rotation(storeID, forger, next)
	if _, err := st.Append(ctx, events.StoreStream, 2, f.Must(events.StoreStream, events.TypeStoreKeyRotated, &p)); err != nil {
		t.Fatal(err)
	}
	var ce *fleetsign.ChainError
	if _, err := Chain(ctx, st, storeID); !errors.As(err, &ce) || ce.Position != 3 || !errors.Is(err, fleetsign.ErrNotPreviousKey) {
		t.Fatalf("a forged rotation: %v", err)
	}
}
