package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
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
