package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tree-ring/tree-ring/adapters"
)

// Project root discovery. The lifecycle hooks resolve the project as
// `git rev-parse --show-toplevel || pwd` (adapters.HookCommand), so a
// command run from a subdirectory must find the same root, not create a
// second store beside the working directory.

// findProjectRoot returns the project root of directory dir (absolute):
// the nearest ancestor-or-self holding a .git entry (a directory, or the
// file of a linked worktree or submodule: the top level git reports),
// else the nearest holding a .tree-ring entry (a project that is not a git
// checkout), else dir itself. It only stats; it never follows a
// .tree-ring symlink (the store checks refuse one later).
func findProjectRoot(dir string) string {
	storeAt := ""
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if storeAt == "" {
			if _, err := os.Lstat(filepath.Join(d, adapters.StoreDir)); err == nil {
				storeAt = d
			}
		}
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
	}
	if storeAt != "" {
		return storeAt
	}
	return dir
}

// resolveRoots fills in the store root and the project root the user did
// not give. The project root, when not given, is findProjectRoot of the
// working directory; the store, when not given, is its .tree-ring. So
// with neither flag both come from the working directory as the hooks
// find them; with only --root the store must still be that project's
// (resolveProject refuses another's); with only --source-root the store is
// the project's. discovered is the project root found when neither was
// given and it differs from the working directory ("" otherwise).
func (g *Globals) resolveRoots(rootSet, sourceSet bool) (discovered string, err error) {
	if !sourceSet {
		getwd := g.Getwd
		if getwd == nil {
			getwd = os.Getwd
		}
		cwd, err := getwd()
		switch {
		case err != nil && rootSet:
			// The hook names its store; a vanished working directory
			// leaves the project to --root's checks.
		case errors.Is(err, fs.ErrNotExist):
			return "", errors.New("the working directory no longer exists; pass --root and --source-root")
		case err != nil:
			return "", fmt.Errorf("working directory: %w", err)
		default:
			g.SourceRoot = findProjectRoot(cwd)
			if !rootSet && g.SourceRoot != cwd {
				discovered = g.SourceRoot
			}
		}
	}
	if !rootSet {
		g.Root = filepath.Join(g.SourceRoot, adapters.StoreDir)
	}
	return discovered, nil
}
