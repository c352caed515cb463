package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/receipt"
	"github.com/tree-ring/tree-ring/projections"
)

// receiptDrift is where the receipt index and the receipt files disagree
// (issue 12, item 10: what the next command reconciles after a fault).
// Missing are retained receipts whose file is gone: a proof recorded for a
// file that is not there (a commit whose sync failed and was undone by a
// crash leaves the opposite). Strays are files under the receipts
// directory that no retained receipt names: a file whose commit never
// happened, a temporary file of a killed write, a file retention failed to
// remove. A stray proves nothing; the next preflight of its worker removes
// it. Both lists hold project-relative paths, sorted.
type receiptDrift struct {
	Missing []string `json:"receipts_without_files,omitempty"`
	Strays  []string `json:"files_without_receipts,omitempty"`
}

func (d receiptDrift) empty() bool { return len(d.Missing) == 0 && len(d.Strays) == 0 }

func (d receiptDrift) String() string {
	var parts []string
	if n := len(d.Missing); n > 0 {
		parts = append(parts, fmt.Sprintf("%d retained receipt(s) without their file (%s)", n, strings.Join(d.Missing, ", ")))
	}
	if n := len(d.Strays); n > 0 {
		parts = append(parts, fmt.Sprintf("%d file(s) without a retained receipt (%s)", n, strings.Join(d.Strays, ", ")))
	}
	return strings.Join(parts, "; ")
}

// checkReceiptFiles compares st's receipt index with the files under the
// project root, read-only and without following symlinks. Each directory
// listing is bounded (preflight.MaxWorkerFiles names).
func checkReceiptFiles(st *bolt.Store, root *adapters.ProjectRoot) (receiptDrift, error) {
	var retained []receipt.Entry
	err := st.View(func(r *bolt.Reader) error {
		var err error
		retained, err = projections.AllReceipts(r.Projection(projections.ReceiptsName))
		return err
	})
	if err != nil {
		return receiptDrift{}, err
	}
	w := driftWalk{root: root, named: map[string]bool{}}
	for _, e := range retained {
		if e.Path == "" {
			continue
		}
		w.named[e.Path] = true
		ok, err := root.Exists(e.Path)
		if err != nil {
			return w.d, err
		}
		if !ok {
			w.d.Missing = append(w.d.Missing, e.Path)
		}
	}
	harnesses, absent, err := root.ListDir(receipt.Dir, preflight.MaxWorkerFiles)
	if err != nil || absent {
		return w.d, err
	}
	for _, h := range harnesses {
		if err := w.harness(receipt.Dir + "/" + h); err != nil {
			return w.d, err
		}
	}
	return w.d, nil
}

// driftWalk collects the strays of the receipt tree: files no retained
// receipt names.
type driftWalk struct {
	root  *adapters.ProjectRoot
	named map[string]bool // the retained receipts' paths
	d     receiptDrift
}

// harness walks one harness directory's worker directories.
func (w *driftWalk) harness(hdir string) error {
	workers, _, err := w.list(hdir)
	if err != nil {
		return err
	}
	for _, wk := range workers {
		wdir := hdir + "/" + wk
		files, isDir, err := w.list(wdir)
		if err != nil {
			return err
		}
		if !isDir {
			continue
		}
		for _, f := range files {
			if p := wdir + "/" + f; !w.named[p] {
				w.d.Strays = append(w.d.Strays, p)
			}
		}
	}
	return nil
}

// list reads a directory; an entry that is not a directory (a file or
// symlink where a harness or worker directory belongs) is a stray.
func (w *driftWalk) list(dir string) ([]string, bool, error) {
	names, _, err := w.root.ListDir(dir, preflight.MaxWorkerFiles)
	var nd *adapters.NotDirError
	var sl *adapters.SymlinkError
	if errors.As(err, &nd) || errors.As(err, &sl) {
		w.d.Strays = append(w.d.Strays, dir)
		return nil, false, nil
	}
	return names, err == nil, err
}

// projectOfRoot pins the project directory that holds the store root
// (its parent), for commands that take only --root.
func projectOfRoot(storeRoot string) (*adapters.ProjectRoot, error) {
	abs, err := filepath.Abs(storeRoot)
	if err != nil {
		return nil, err
	}
	dir, err := adapters.CanonicalProjectRoot(filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	return adapters.OpenProjectRoot(dir)
}

// lostReceipts are the strays that are receipts of this store (storeID)
// whose receipt id the ledger never recorded (no receipt.recorded or
// receipt.adopted names it, so it is no pruned receipt either): a file
// written with a commit the ledger no longer holds, its last commit(s)
// lost (bbolt opened an older meta page, or the file was restored over
// by an older copy), or the leftover of a preflight killed between its
// file and its commit. Each is named "PATH (receipt ID, recorded_at T)".
func lostReceipts(ctx context.Context, st *bolt.Store, root *adapters.ProjectRoot, storeID string, strays []string) ([]string, error) {
	type found struct{ path, id, at string }
	var cands []found
	for _, p := range strays {
		e, err := root.ReadFile(p, receipt.MaxBytes)
		if err != nil || !e.Exists {
			continue // not a regular receipt-sized file: a stray, no more
		}
		rc, err := receipt.Decode(e.Data)
		if err != nil || rc.StoreID != storeID || rc.Path() != p {
			continue
		}
		cands = append(cands, found{p, rc.ReceiptID, rc.RecordedAt})
	}
	if len(cands) == 0 {
		return nil, nil
	}
	known := map[string]bool{}
	err := st.ReadAll(ctx, 0, func(e *events.Envelope) error {
		if e.Type != events.TypeReceiptRecorded && e.Type != events.TypeReceiptAdopted {
			return nil
		}
		id, err := receiptIDOf(e)
		known[id] = true
		return err
	})
	if err != nil {
		return nil, err
	}
	var lost []string
	for _, c := range cands {
		if !known[c.id] {
			lost = append(lost, fmt.Sprintf("%s (receipt %s, recorded_at %s)", c.path, c.id, c.at))
		}
	}
	return lost, nil
}

// receiptIDOf is the receipt id of a receipt.recorded or receipt.adopted.
func receiptIDOf(e *events.Envelope) (string, error) {
	v, err := events.DecodePayload(e)
	if err != nil {
		return "", err
	}
	switch p := v.(type) {
	case *events.ReceiptRecorded:
		return p.ReceiptID, nil
	case *events.ReceiptAdopted:
		return p.ReceiptID, nil
	}
	return "", nil
}

// rematerializeReceipts writes again, create-only, the file of every
// retained receipt whose file is missing, from its receipt.recorded
// (preflight.Materialize: only when the rebuilt bytes are the recorded
// file's sha256). A receipt file is a materialization of its event, so a
// restore (an export imported into an emptied store or onto an older
// copy, or a rebuild) puts back the files its events name. An existing
// file is never replaced. It returns how many files it wrote.
func rematerializeReceipts(st *bolt.Store, root *adapters.ProjectRoot) (int, error) {
	drift, err := checkReceiptFiles(st, root)
	if err != nil || len(drift.Missing) == 0 {
		return 0, err
	}
	files, err := materialized(st, drift.Missing)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		err := root.CreateFile(f.path, f.body, preflight.FilePerm, preflight.DirPerm)
		var exists *adapters.ExistsError
		switch {
		case err == nil:
			n++
		case !errors.As(err, &exists):
			return n, fmt.Errorf("restore receipt file %s: %w", f.path, err)
		}
	}
	return n, nil
}

// receiptFile is a receipt file rebuilt from its event.
type receiptFile struct {
	path string
	body []byte
}

// materialized rebuilds the files of the retained receipts at paths
// (preflight.Materialize); an adopted receipt (another writer's file) or
// one whose bytes cannot be rebuilt exactly is left out.
func materialized(st *bolt.Store, paths []string) ([]receiptFile, error) {
	var out []receiptFile
	err := st.View(func(r *bolt.Reader) error {
		retained, err := projections.AllReceipts(r.Projection(projections.ReceiptsName))
		if err != nil {
			return err
		}
		for _, e := range retained {
			if e.Adopted || !slices.Contains(paths, e.Path) {
				continue
			}
			env, ok, err := r.Event(e.Position)
			if err != nil || !ok || env.Type != events.TypeReceiptRecorded {
				return err
			}
			v, err := events.DecodePayload(&env)
			if err != nil {
				return err
			}
			if p, body, ok := receipt.Materialize(v.(*events.ReceiptRecorded)); ok && p == e.Path {
				out = append(out, receiptFile{p, body})
			}
		}
		return nil
	})
	return out, err
}

// restoreReceiptFiles re-materializes the missing receipt files of the
// project whose .tree-ring is --root (rematerializeReceipts), after a
// restore; a scratch root or a fleet replica has no project files.
func restoreReceiptFiles(g *Globals, st *bolt.Store) (int, error) {
	abs, err := filepath.Abs(g.Root)
	if err != nil || filepath.Base(abs) != adapters.StoreDir {
		return 0, nil
	}
	root, err := projectOfRoot(g.Root)
	if err != nil {
		return 0, fmt.Errorf("receipt files: %w", err)
	}
	defer root.Close()
	return rematerializeReceipts(st, root)
}
