package fleetcli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/projections"
)

type publishOptions struct {
	connOptions
}

func (o *publishOptions) AddFlags(fs *pflag.FlagSet) { o.connOptions.AddFlags(fs) }

// runPublish records no run: the stream is the record of a publish, and a
// second publish with nothing new must change nothing here.
func runPublish(ctx context.Context, g *Globals, o *publishOptions, args []string) error {
	if len(args) > 0 {
		return cli.Usagef("fleet publish takes no arguments")
	}
	if err := o.check(); err != nil {
		return err
	}
	src := &LedgerSource{Open: func() (*bolt.Store, error) {
		return cli.OpenStore(g.Root, bolt.Options{ReadOnly: true, LockTimeout: g.LockTimeout, Projections: projections.All()})
	}}
	var storeID string
	st, err := src.Open()
	if err != nil {
		return err
	}
	err = st.View(func(r *bolt.Reader) error {
		ms, ok, err := cli.StoreIdentity(r)
		if err == nil && !ok {
			err = fmt.Errorf("%s: the store is not initialized (run `tree-ring init`)", st.Path())
		}
		storeID = ms.StoreID
		return err
	})
	st.Close()
	if err != nil {
		return err
	}
	nc, err := fleet.Connect(o.conn("tree-ring fleet publish"))
	if err != nil {
		return err
	}
	defer nc.Close()
	res, err := fleet.Publish(ctx, nc, src, fleet.PublishOptions{Stream: o.Stream, StoreID: storeID, Replicas: o.Replicas, Timeout: o.Timeout})
	if err != nil {
		return fmt.Errorf("fleet publish: %w", err)
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK bool `json:"ok"`
			fleet.PublishResult
		}{true, res})
	}
	fmt.Fprintf(g.Stdout, "published %d events of store %s to %s (the stream held %d, now %d)\n", res.Published, res.StoreID, res.Subject, res.Held, res.Head)
	return nil
}

// LedgerSource is a project's ledger as fleet.Publish reads it. It opens
// the ledger (read-only, through Open) only while it reads a chunk, so
// hooks that need the write lock are never kept waiting by a long
// publish. Not safe for concurrent use.
type LedgerSource struct {
	Open  func() (*bolt.Store, error)
	buf   [][]byte // events after bufAt
	bufAt uint64
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
