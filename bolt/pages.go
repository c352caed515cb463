package bolt

import (
	"encoding/binary"
	"fmt"
	"os"

	bbolt "go.etcd.io/bbolt"
)

// Pages is where a ledger's trees lie: for each top-level bucket the ids
// of the pages its tree occupies (branch, leaf and overflow pages, nested
// buckets included), under "" the root bucket's own pages and under
// "(freelist)" the freelist's (the meta page is not counted). bbolt
// writes every page a commit changes to a new id, so two snapshots taken
// around a commit tell which pages of each bucket it wrote (Written): the
// hook's budget of pages per commit is measured with it
// (docs/benchmarks.md, *SessionStart hook*).
type Pages map[string]map[uint64]bool

// bbolt's page layout (go.etcd.io/bbolt internal/common), in the
// machine's byte order: a 16-byte header (id, flags, count, overflow),
// then count 16-byte elements; a branch element is (pos, ksize, child
// page id), a leaf element (flags, pos, ksize, vsize), pos counted from
// the element. A bucket's value is its root page id and sequence (16
// bytes), then, when the root is 0, the inline bucket's page.
const (
	pageBranch     = 0x01
	pageLeaf       = 0x02
	leafBucketFlag = 0x01
	pageHeader     = 16
	pageElement    = 16
	bucketHeader   = 16
	metaRoot       = metaOffset + 16
	freelistNone   = ^uint64(0) // the freelist's page id when it is not synced
)

// Pages walks the ledger's trees in one read transaction. It reads the
// file, page by page: for tests and benchmarks, not for a hook.
func (s *Store) Pages() (Pages, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := Pages{}
	err = s.db.View(func(tx *bbolt.Tx) error {
		w := pageWalker{f: f, size: tx.DB().Info().PageSize}
		meta := make([]byte, metaRoot+24)
		if _, err := f.ReadAt(meta, int64(tx.ID()%2*w.size)); err != nil {
			return fmt.Errorf("read meta page: %w", err)
		}
		if fl := binary.NativeEndian.Uint64(meta[metaRoot+16:]); fl != 0 && fl != freelistNone {
			buf, err := w.page(fl)
			if err != nil {
				return err
			}
			out["(freelist)"] = map[uint64]bool{}
			for i := range len(buf) / w.size {
				out["(freelist)"][fl+uint64(i)] = true
			}
		}
		root := map[uint64]bool{}
		out[""] = root
		// The root bucket's leaves hold the top-level buckets: each one's
		// pages go under its own name.
		return w.walk(binary.NativeEndian.Uint64(meta[metaRoot:]), root, func(name []byte) map[uint64]bool {
			set := map[uint64]bool{}
			out[string(name)] = set
			return set
		})
	})
	return out, err
}

// Written returns, for each bucket of after, how many of its pages are
// not in p: the pages the commits between the two snapshots wrote.
func (p Pages) Written(after Pages) map[string]int {
	n := map[string]int{}
	for name, set := range after {
		for id := range set {
			if !p[name][id] {
				n[name]++
			}
		}
	}
	return n
}

type pageWalker struct {
	f    *os.File
	size int
}

// page reads page id with its overflow pages.
func (w pageWalker) page(id uint64) ([]byte, error) {
	buf := make([]byte, w.size)
	if _, err := w.f.ReadAt(buf, int64(id)*int64(w.size)); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	if over := binary.NativeEndian.Uint32(buf[12:]); over > 0 {
		buf = make([]byte, (1+int(over))*w.size)
		if _, err := w.f.ReadAt(buf, int64(id)*int64(w.size)); err != nil {
			return nil, fmt.Errorf("read page %d: %w", id, err)
		}
	}
	return buf, nil
}

// walk adds the pages of the tree at page id to set; a bucket found in
// its leaves goes into child(its key) when child is set, else into set.
func (w pageWalker) walk(id uint64, set map[uint64]bool, child func(name []byte) map[uint64]bool) error {
	buf, err := w.page(id)
	if err != nil {
		return err
	}
	for i := range len(buf) / w.size {
		set[id+uint64(i)] = true
	}
	return w.elements(buf, set, child)
}

// elements follows the elements of the page in buf (a branch's children,
// a leaf's buckets).
func (w pageWalker) elements(buf []byte, set map[uint64]bool, child func(name []byte) map[uint64]bool) error {
	o := binary.NativeEndian
	flags, count := o.Uint16(buf[8:]), int(o.Uint16(buf[10:]))
	if pageHeader+count*pageElement > len(buf) {
		return fmt.Errorf("page %d: %d elements overrun it", o.Uint64(buf), count)
	}
	for i := range count {
		e := buf[pageHeader+i*pageElement:]
		switch flags {
		case pageBranch:
			if err := w.walk(o.Uint64(e[8:]), set, child); err != nil {
				return err
			}
		case pageLeaf:
			if o.Uint32(e)&leafBucketFlag == 0 {
				continue
			}
			at := pageHeader + i*pageElement + int(o.Uint32(e[4:]))
			ksize, vsize := int(o.Uint32(e[8:])), int(o.Uint32(e[12:]))
			if at+ksize+vsize > len(buf) || vsize < bucketHeader {
				return fmt.Errorf("page %d: element %d overruns it", o.Uint64(buf), i)
			}
			into := set
			if child != nil {
				into = child(buf[at : at+ksize])
			}
			v := buf[at+ksize : at+ksize+vsize]
			if root := o.Uint64(v); root != 0 {
				if err := w.walk(root, into, nil); err != nil {
					return err
				}
			} else if err := w.elements(v[bucketHeader:], into, nil); err != nil {
				return err // an inline bucket: its own buckets, if any
			}
		default:
			return fmt.Errorf("page %d: flags %#x where a branch or leaf belongs", o.Uint64(buf), flags)
		}
	}
	return nil
}
