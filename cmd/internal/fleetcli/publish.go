package fleetcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
	"github.com/tree-ring/tree-ring/cmd/internal/storekey"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

type publishOptions struct {
	connOptions
	Watch    bool
	Interval time.Duration
}

func (o *publishOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Watch, "watch", false, "keep publishing as events land, until interrupted (SIGINT or SIGTERM: the batch in flight finishes or is abandoned whole)")
	fs.DurationVar(&o.Interval, "interval", time.Second, "with --watch: how often to look at the ledger's head")
	o.connOptions.AddFlags(fs)
}

// runPublish records no run: the stream is the record of a publish, and a
// second publish with nothing new must change nothing here.
func runPublish(ctx context.Context, g *Globals, o *publishOptions, args []string) error {
	if len(args) > 0 {
		return cli.Usagef("fleet publish takes no arguments")
	}
	if err := o.check(g.Getenv); err != nil {
		return err
	}
	signer, err := signingKey(ctx, g)
	if err != nil {
		return err
	}
	storeID := signer.StoreID
	src := &LedgerSource{Signer: signer, Open: func() (*bolt.Store, error) {
		return cli.OpenStore(g.Root, bolt.Options{ReadOnly: true, LockTimeout: g.LockTimeout, Projections: projections.All()})
	}}
	nc, err := fleet.Connect(o.conn("tree-ring fleet publish", g.debugLog()))
	if err != nil {
		return err
	}
	defer nc.Close()
	po := fleet.PublishOptions{Stream: o.Stream, StoreID: storeID, Replicas: o.Replicas, Timeout: o.Timeout, Log: g.debugLog()}
	if o.Watch {
		return watch(g, po, o.Interval, func(wo fleet.WatchOptions) error {
			published := wo.OnPublish
			wo.OnPublish = func(res fleet.PublishResult) {
				published(res)
				retire(g, signer, res)
			}
			return fleet.Watch(ctx, nc, src, wo)
		})
	}
	res, err := fleet.Publish(ctx, nc, src, po)
	if err != nil {
		return fmt.Errorf("fleet publish: %w", err)
	}
	retire(g, signer, res)
	return printPublished(g, res)
}

// retire removes a rotated-out key once the stream holds everything it
// signs; failing to is said on stderr (the next publish tries again).
func retire(g *Globals, signer *storekey.Signer, res fleet.PublishResult) {
	if err := signer.Retire(g.Root, res.Head); err != nil {
		fmt.Fprintf(g.Stderr, "%s: fleet publish: the rotated-out key stays: %s\n", cli.Fleet.Program, cli.OneLine(err.Error()))
	}
}

// watch is publish --watch: one line (or JSON object) per publish that
// sent events, one stderr line per failed one, which the next look
// retries.
func watch(g *Globals, po fleet.PublishOptions, interval time.Duration, run func(fleet.WatchOptions) error) error {
	if interval <= 0 {
		return cli.Usagef("--interval must be positive")
	}
	var werr error
	err := run(fleet.WatchOptions{PublishOptions: po, Interval: interval,
		OnPublish: func(res fleet.PublishResult) {
			if err := printPublished(g, res); err != nil && werr == nil {
				werr = err
			}
		},
		OnError: func(err error) {
			fmt.Fprintf(g.Stderr, "%s: fleet publish --watch: %s (trying again)\n", cli.Fleet.Program, cli.OneLine(err.Error()))
		},
	})
	if err != nil {
		return fmt.Errorf("fleet publish --watch: %w", err)
	}
	return werr
}

func printPublished(g *Globals, res fleet.PublishResult) error {
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK bool `json:"ok"`
			fleet.PublishResult
		}{true, res})
	}
	_, err := fmt.Fprintf(g.Stdout, "published %d events of store %s to %s (the stream held %d, now %d)\n", res.Published, res.StoreID, res.Subject, res.Held, res.Head)
	return err
}

// signingKey returns the store's signer (its id and keys). A store
// without a key gets one here (storekey.Ensure): the one write publish
// makes to the ledger, store.key_recorded, once per store; a rotation a
// crash interrupted is finished here too.
func signingKey(ctx context.Context, g *Globals) (*storekey.Signer, error) {
	load := func(write bool) (*storekey.Signer, bool, error) {
		st, err := cli.OpenStore(g.Root, bolt.Options{ReadOnly: !write, LockTimeout: g.LockTimeout, Projections: projections.All()})
		if err != nil {
			return nil, false, err
		}
		defer st.Close()
		storeID, err := storekey.StoreID(st)
		if err != nil {
			return nil, false, err
		}
		if write {
			f := &events.Factory{Now: g.Now, NewID: g.NewID, Actor: "fleet"}
			if _, _, err := storekey.Ensure(ctx, g.Root, st, f); err != nil {
				return nil, false, err
			}
		}
		return storekey.LoadSigner(ctx, g.Root, st, storeID)
	}
	if s, ok, err := load(false); err != nil || ok {
		return s, err
	}
	// Only now the write lock: the common case above waits for no hook.
	if err := replica.RefuseWrite(g.Root); err != nil {
		return nil, err
	}
	s, ok, err := load(true)
	if err == nil && !ok {
		err = errors.New("the store's signing key is not usable after recording it")
	}
	return s, err
}

// LedgerSource is a project's ledger as fleet.Publish reads it. It opens
// the ledger (read-only, through Open) only while it reads a chunk, so
// hooks that need the write lock are never kept waiting by a long
// publish. Not safe for concurrent use.
type LedgerSource struct {
	Open func() (*bolt.Store, error)
	// Signer signs each event with the key in force at its position;
	// the keys never leave it.
	Signer *storekey.Signer
	buf    [][]byte // events after bufAt
	bufAt  uint64
}

// Sign signs one event's statement with the store's key in force there.
func (s *LedgerSource) Sign(position uint64, hash string) (string, string, error) {
	return s.Signer.Sign(position, hash)
}

// sourceChunk is how many events one read-only open copies out.
const sourceChunk = 10_000

func (s *LedgerSource) Head() (uint64, error) {
	st, err := s.Open()
	if err != nil {
		return 0, err
	}
	defer st.Close()
	pos, _, err := st.Head()
	return pos, err
}

var errChunkFull = errors.New("chunk full")

func (s *LedgerSource) Read(ctx context.Context, after uint64, max int) ([][]byte, error) {
	if after < s.bufAt || after >= s.bufAt+uint64(len(s.buf)) || len(s.buf) == 0 {
		st, err := s.Open()
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
