package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/projections"
)

// fleetConnOptions are the connection flags of fleet publish and collect.
type fleetConnOptions struct {
	URL          string
	CredsFile    string
	NKeySeedFile string
	User         string
	PasswordFile string
	TLSCA        string
	TLSCert      string
	TLSKey       string
	Stream       string
	Replicas     int
	Timeout      time.Duration
}

func (o *fleetConnOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "nats", "", "NATS server URL(s), comma-separated (required)")
	fs.StringVar(&o.CredsFile, "creds", "", "NATS credentials file (JWT and NKey seed)")
	fs.StringVar(&o.NKeySeedFile, "nkey", "", "NKey seed file")
	fs.StringVar(&o.User, "user", "", "user name (with --password-file)")
	fs.StringVar(&o.PasswordFile, "password-file", "", "file whose first line is the password of --user")
	fs.StringVar(&o.TLSCA, "tls-ca", "", "CA certificate file to verify the server")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "client certificate file (with --tls-key)")
	fs.StringVar(&o.TLSKey, "tls-key", "", "client key file (with --tls-cert)")
	fs.StringVar(&o.Stream, "stream", fleet.DefaultStream, "JetStream stream (created if absent, subjects "+fleet.SubjectWildcard+")")
	fs.IntVar(&o.Replicas, "replicas", 1, "replicas of the stream when this command creates it")
	fs.DurationVar(&o.Timeout, "timeout", 30*time.Second, "how long to wait for the server without progress")
}

func (o *fleetConnOptions) conn(name string) fleet.ConnOptions {
	return fleet.ConnOptions{URL: o.URL, Name: name, CredsFile: o.CredsFile, NKeySeedFile: o.NKeySeedFile,
		User: o.User, PasswordFile: o.PasswordFile, TLSCA: o.TLSCA, TLSCert: o.TLSCert, TLSKey: o.TLSKey, Timeout: o.Timeout}
}

func (o *fleetConnOptions) check() error {
	if o.URL == "" {
		return usagef("--nats URL is required")
	}
	if o.Replicas < 1 || o.Replicas > 5 {
		return usagef("--replicas %d: want 1 to 5", o.Replicas)
	}
	if o.Timeout <= 0 {
		return usagef("--timeout must be positive")
	}
	return nil
}

// storeIdentity is the store id and project root fingerprint a ledger's
// store.initialized recorded; ok is false before it.
func storeIdentity(r *bolt.Reader) (projections.ManifestStore, bool, error) {
	raw := r.Projection(projections.ManifestName).Get([]byte("store"))
	if raw == nil {
		return projections.ManifestStore{}, false, nil
	}
	var ms projections.ManifestStore
	if err := json.Unmarshal(raw, &ms); err != nil {
		return projections.ManifestStore{}, false, fmt.Errorf("manifest store: %w", err)
	}
	return ms, true, nil
}

// ledgerSource is the project's ledger as fleet.Publish reads it. It opens
// the ledger read-only only while it reads a chunk, so hooks that need the
// write lock are never kept waiting by a long publish.
type ledgerSource struct {
	g     *Globals
	buf   [][]byte // events after bufAt
	bufAt uint64
}

// sourceChunk is how many events one read-only open copies out.
const sourceChunk = 10_000

func (s *ledgerSource) open() (*bolt.Store, error) { return s.g.OpenStore(true) }

func (s *ledgerSource) Head() (uint64, error) {
	st, err := s.open()
	if err != nil {
		return 0, err
	}
	defer st.Close()
	pos, _, err := st.Head()
	return pos, err
}

var errChunkFull = errors.New("chunk full")

func (s *ledgerSource) Read(ctx context.Context, after uint64, max int) ([][]byte, error) {
	if after < s.bufAt || after >= s.bufAt+uint64(len(s.buf)) || len(s.buf) == 0 {
		st, err := s.open()
		if err != nil {
			return nil, err
		}
		defer st.Close()
		s.buf, s.bufAt = s.buf[:0], after
		want := after + 1
		err = st.ScanRaw(ctx, after, func(pos uint64, raw []byte) error {
			if pos != want {
				return fmt.Errorf("ledger %s: position %d follows %d", st.Path(), pos, want-1)
			}
			s.buf = append(s.buf, append([]byte(nil), raw...))
			want++
			if len(s.buf) == sourceChunk {
				return errChunkFull
			}
			return nil
		})
		if err != nil && !errors.Is(err, errChunkFull) {
			return nil, err
		}
	}
	i := int(after - s.bufAt)
	end := min(i+max, len(s.buf))
	return s.buf[i:end], nil
}

// replicaDir is the collector's directory: one ledger root per store,
// named by the store id, plus a stop record when a replica stopped.
type replicaDir struct {
	g   *Globals
	dir string
}

// stopFile, inside a replica's root, records why the replica stopped.
const stopFile = "fleet-stopped.json"

type stopRecord struct {
	StoreID  string    `json:"store_id"`
	Position uint64    `json:"position"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
}

func (d *replicaDir) root(store string) string { return filepath.Join(d.dir, store) }

func (d *replicaDir) Stopped(store string) (bool, error) {
	_, ok, err := readStop(d.root(store))
	return ok, err
}

func readStop(root string) (stopRecord, bool, error) {
	b, err := os.ReadFile(filepath.Join(root, stopFile))
	if errors.Is(err, fs.ErrNotExist) {
		return stopRecord{}, false, nil
	}
	if err != nil {
		return stopRecord{}, false, err
	}
	var r stopRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return stopRecord{}, true, fmt.Errorf("%s: %w", filepath.Join(root, stopFile), err)
	}
	return r, true, nil
}

func (d *replicaDir) openReplica(store string) (*bolt.Store, error) {
	return bolt.OpenRoot(d.root(store), bolt.Options{LockTimeout: d.g.LockTimeout, Projections: projections.All()})
}

// Replicate opens the store's replica for one commit, so auditors' read
// commands can run between batches of a --follow.
func (d *replicaDir) Replicate(ctx context.Context, store string, raws [][]byte) (fleet.Applied, error) {
	st, err := d.openReplica(store)
	if err != nil {
		return fleet.Applied{}, err
	}
	defer st.Close()
	res, err := st.Replicate(ctx, raws)
	if err != nil {
		return fleet.Applied{}, err
	}
	a := fleet.Applied{Appended: res.Appended, Duplicates: res.Duplicates}
	if r := res.Refused; r != nil {
		a.Refused, a.Gap, a.Position = r, r.Kind == bolt.ReplicaGap, r.Position
	}
	err = st.View(func(r *bolt.Reader) error {
		a.Head, _ = r.Head()
		ms, ok, err := storeIdentity(r)
		if err == nil && ok && ms.StoreID != store && a.Refused == nil {
			// The events are the subject's, faithfully; the subject is
			// not theirs. Stop here; fleet verify names the mismatch.
			a.Refused = fmt.Errorf("the replica's store.initialized says store %s, its subject says %s", ms.StoreID, store)
		}
		return err
	})
	return a, err
}

// Stop writes the stop record create-only: the first reason stays.
func (d *replicaDir) Stop(store string, position uint64, reason string) error {
	root := d.root(store)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(stopRecord{StoreID: store, Position: position, Reason: reason, At: d.g.Now().UTC()})
	if err != nil {
		return err
	}
	canon, err := adapters.CanonicalProjectRoot(root)
	if err != nil {
		return err
	}
	pinned, err := adapters.OpenProjectRoot(canon)
	if err != nil {
		return err
	}
	defer pinned.Close()
	// The project files' create-only publication: a crash never leaves a
	// partial record that "the first reason stays" would keep.
	err = pinned.CreateFile(stopFile, append(b, '\n'), 0o600, 0o700)
	var exists *adapters.ExistsError
	if errors.As(err, &exists) {
		return nil
	}
	return err
}

// replicas lists the store ids that have a replica root under dir, sorted.
func replicas(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("replica directory: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && fleet.ValidStoreID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}
