package adapters

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ProjectRoot is a pinned project directory. It is built on os.Root
// (openat-style resolution that cannot leave the root) and goes one
// component at a time through a Root per directory, so a rename of an
// ancestor cannot redirect an access, and a symlink anywhere below the root
// (a symlinked .claude, a symlinked bridge file) is refused instead of
// followed: each component is inspected without following it (Lstat) and
// what was then opened is checked to be that same file (os.SameFile), so a
// symlink swapped in between is refused too. Safe for concurrent use;
// Close when done. docs/platforms.md says what each system guarantees.
type ProjectRoot struct {
	root *os.Root
	// FailSync is a test seam: when set it is called with the
	// project-relative directory before each directory fsync, and a non-nil
	// result is treated as that fsync's failure.
	FailSync func(dir string) error
}

// OpenProjectRoot pins canonical, an absolute directory path without
// symlinks (see CanonicalProjectRoot).
func OpenProjectRoot(canonical string) (*ProjectRoot, error) {
	fi, err := os.Lstat(canonical)
	if err != nil {
		return nil, fmt.Errorf("open project root: %w", errnoOf(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("open project root: %w", &SymlinkError{Path: filepath.Base(canonical)})
	}
	root, err := os.OpenRoot(canonical)
	if err != nil {
		return nil, fmt.Errorf("open project root: %w", errnoOf(err))
	}
	if opened, err := root.Stat("."); err != nil || !os.SameFile(fi, opened) {
		root.Close()
		return nil, fmt.Errorf("open project root: %w", &SymlinkError{Path: filepath.Base(canonical)})
	}
	return &ProjectRoot{root: root}, nil
}

// Close releases the directory handle.
func (r *ProjectRoot) Close() error { return r.root.Close() }

// walk opens the directory made of comps below the root. With create,
// missing directories are made with mode dirPerm and their parent is synced.
// absent is true (with a nil error) when a component is missing and create
// is false. The caller closes the returned Root.
func (r *ProjectRoot) walk(comps []string, create bool, dirPerm uint32) (dir *os.Root, absent bool, err error) {
	if len(comps) == 0 { // the caller closes what it gets: a second handle
		if dir, err = r.root.OpenRoot("."); err != nil {
			return nil, false, fmt.Errorf("open project root: %w", errnoOf(err))
		}
		return dir, false, nil
	}
	dir = r.root
	for i, c := range comps {
		rel := strings.Join(comps[:i+1], "/")
		next, absent, err := r.step(dir, c, rel, create, dirPerm)
		if dir != r.root {
			dir.Close()
		}
		if err != nil || absent {
			return nil, absent, err
		}
		dir = next
	}
	return dir, false, nil
}

// step opens directory c of dir (rel below the root), making it when create
// is set and it is missing.
func (r *ProjectRoot) step(dir *os.Root, c, rel string, create bool, dirPerm uint32) (next *os.Root, absent bool, err error) {
	fi, err := dir.Lstat(c)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := dir.Mkdir(c, os.FileMode(dirPerm)); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, false, fmt.Errorf("create directory %s: %w", rel, errnoOf(err))
		}
		if err := r.syncDir(dir, parentRel(rel)); err != nil {
			return nil, false, &DurabilityError{Path: rel, Err: err}
		}
		fi, err = dir.Lstat(c)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("open %s: %w", rel, errnoOf(err))
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, false, &SymlinkError{Path: rel}
	case !fi.IsDir():
		return nil, false, &NotDirError{Path: rel}
	}
	next, err = dir.OpenRoot(c)
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", rel, errnoOf(err))
	}
	if opened, err := next.Stat("."); err != nil || !os.SameFile(fi, opened) {
		next.Close()
		return nil, false, &SymlinkError{Path: rel} // swapped since the Lstat
	}
	return next, false, nil
}

func parentRel(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return "."
}

// syncDir fsyncs dir (rel below the root) so that an entry just made in it
// is durable, where the system can (dirSyncs; docs/platforms.md).
func (r *ProjectRoot) syncDir(dir *os.Root, rel string) error {
	if r.FailSync != nil {
		if err := r.FailSync(rel); err != nil {
			return err
		}
	}
	if !dirSyncs {
		return nil
	}
	d, err := dir.Open(".")
	if err != nil {
		return errnoOf(err)
	}
	defer d.Close()
	return errnoOf(d.Sync())
}

// parentOf opens the directory holding rel (never creating one) and
// returns it, to be closed by the caller, and rel's last component; absent
// is true when the directory does not exist.
func (r *ProjectRoot) parentOf(rel string) (dir *os.Root, name string, absent bool, err error) {
	comps, err := splitRel(rel)
	if err != nil {
		return nil, "", false, err
	}
	dir, absent, err = r.walk(comps[:len(comps)-1], false, 0)
	return dir, comps[len(comps)-1], absent, err
}

// refusal is the typed error for an existing entry fi at rel that is not a
// regular file.
func refusal(fi fs.FileInfo, rel string) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &SymlinkError{Path: rel}
	}
	return &NotRegularError{Path: rel}
}

// openRegular opens the regular file name of dir (rel below the root) for
// reading without following a symlink: exists is false (with a nil error)
// when it is absent. The open is non-blocking where the system has that
// (oNonblock), so a fifo swapped in after the Lstat cannot hang the caller.
func openRegular(dir *os.Root, name, rel string) (f *os.File, exists bool, err error) {
	fi, err := dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("inspect %s: %w", rel, errnoOf(err))
	case !fi.Mode().IsRegular():
		return nil, false, refusal(fi, rel)
	}
	f, err = dir.OpenFile(name, os.O_RDONLY|oNonblock, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("open %s: %w", rel, errnoOf(err))
	}
	if opened, err := f.Stat(); err != nil || !os.SameFile(fi, opened) {
		f.Close()
		if now, err := dir.Lstat(name); err == nil && !now.Mode().IsRegular() {
			return nil, false, refusal(now, rel)
		}
		return nil, false, fmt.Errorf("open %s: it was replaced while being opened", rel)
	}
	return f, true, nil
}

// ReadFile inspects the final path rel: absent (Exists false), or a regular
// file of at most limit bytes whose content is returned. A symlink in any
// component, a non-directory parent, a non-regular final entry or a larger
// file is a typed error. Nothing is created.
func (r *ProjectRoot) ReadFile(rel string, limit int) (Entry, error) {
	f, exists, err := r.OpenRead(rel)
	if err != nil || !exists {
		return Entry{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Entry{}, fmt.Errorf("stat %s: %w", rel, errnoOf(err))
	}
	if fi.Size() > int64(limit) {
		return Entry{}, &TooLargeError{Path: rel, Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return Entry{}, fmt.Errorf("read %s: %w", rel, errnoOf(err))
	}
	if len(data) > limit {
		return Entry{}, &TooLargeError{Path: rel, Limit: limit}
	}
	return Entry{Exists: true, Data: data}, nil
}

// OpenRead opens the regular file rel for reading without following a
// symlink in any component: exists is false (with a nil error) when it is
// absent; a final entry that is not a regular file is a *NotRegularError
// (a symlink a *SymlinkError). The caller closes f.
func (r *ProjectRoot) OpenRead(rel string) (f *os.File, exists bool, err error) {
	dir, name, absent, err := r.parentOf(rel)
	if err != nil || absent {
		return nil, false, err
	}
	defer dir.Close()
	return openRegular(dir, name, rel)
}

// Exists reports whether the final path rel exists (of any kind), without
// following a symlink in any component; a symlinked parent is an error.
func (r *ProjectRoot) Exists(rel string) (bool, error) {
	dir, name, absent, err := r.parentOf(rel)
	if err != nil || absent {
		return false, err
	}
	defer dir.Close()
	_, err = dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("inspect %s: %w", rel, errnoOf(err))
	}
	return true, nil
}

// Lstat describes the final path rel without following it (a symlinked
// parent is an error); exists is false with a nil error when it is absent.
func (r *ProjectRoot) Lstat(rel string) (fi fs.FileInfo, exists bool, err error) {
	dir, name, absent, err := r.parentOf(rel)
	if err != nil || absent {
		return nil, false, err
	}
	defer dir.Close()
	fi, err = dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("inspect %s: %w", rel, errnoOf(err))
	}
	return fi, true, nil
}

// CreateFile publishes data at rel create-only and atomically: missing
// parent directories are made (mode dirPerm, parent synced); the bytes go
// to a temporary file beside the final one (exclusive create, which never
// follows a symlink, mode perm exactly), which is written in full, fsynced
// and then hard-linked to the final name (a link fails on an existing name,
// so nothing is ever replaced); the temporary name is removed and the
// directory fsynced. The final path therefore never holds a partial or
// empty file: a failed write or sync, or a process killed mid-write,
// leaves at most the temporary file (named by TempName) and no final path.
// An existing final path is an *ExistsError (or *SymlinkError) and nothing
// was written. A failure before the link changed nothing at rel (a plain
// error); one after it (the temporary name's removal, the directory fsync)
// is a *DurabilityError: the complete file is in place but its durability
// is indeterminate.
func (r *ProjectRoot) CreateFile(rel string, data []byte, perm, dirPerm uint32) error {
	comps, err := splitRel(rel)
	if err != nil {
		return err
	}
	dir, _, err := r.walk(comps[:len(comps)-1], true, dirPerm)
	if err != nil {
		return err
	}
	defer dir.Close()
	name := comps[len(comps)-1]
	// Refuse an existing name before writing anything.
	if err := absentEntry(dir, name, rel); err != nil {
		return err
	}
	tmp, err := TempName(name)
	if err != nil {
		return err
	}
	if err := writeTemp(dir, tmp, data, perm); err != nil {
		return fmt.Errorf("create %s: nothing changed: %w", rel, err)
	}
	if err := dir.Link(tmp, name); err != nil {
		_ = dir.Remove(tmp)
		if errors.Is(err, fs.ErrExist) {
			if err := absentEntry(dir, name, rel); err != nil {
				return err
			}
		}
		return fmt.Errorf("create %s: nothing changed: link: %w", rel, errnoOf(err))
	}
	if err := dir.Remove(tmp); err != nil {
		return &DurabilityError{Path: rel, Err: fmt.Errorf("remove the temporary name: %w", errnoOf(err))}
	}
	if err := r.syncDir(dir, strings.Join(comps[:len(comps)-1], "/")); err != nil {
		return &DurabilityError{Path: rel, Err: fmt.Errorf("fsync directory: %w", err)}
	}
	return nil
}

// absentEntry is nil when name (rel) does not exist in dir, else the typed
// refusal: a *SymlinkError for a symlink, an *ExistsError for anything else.
func absentEntry(dir *os.Root, name, rel string) error {
	fi, err := dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("inspect %s: %w", rel, errnoOf(err))
	case fi.Mode()&fs.ModeSymlink != 0:
		return &SymlinkError{Path: rel}
	}
	return &ExistsError{Path: rel}
}

// writeTemp creates tmp in dir exclusively with mode perm exactly (the
// umask does not apply), writes data, fsyncs and closes it; on any failure
// tmp is removed again. Its errors name the failed step, not a path.
func writeTemp(dir *os.Root, tmp string, data []byte, perm uint32) error {
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, os.FileMode(perm)&fs.ModePerm)
	if err != nil {
		return errnoOf(err)
	}
	step, err := "chmod", f.Chmod(os.FileMode(perm)&fs.ModePerm)
	if err == nil {
		step = "write"
		_, err = f.Write(data)
	}
	if err == nil {
		step, err = "fsync", f.Sync()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		step, err = "close", cerr
	}
	if err != nil {
		_ = dir.Remove(tmp)
		return fmt.Errorf("%s: %w", step, errnoOf(err))
	}
	return nil
}

// errnoOf strips the absolute or descriptor-named path an *os.PathError
// (or *os.LinkError) carries; the caller names the project-relative path.
func errnoOf(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// ListDir returns the names of the entries of directory rel, sorted, with
// absent false; a missing directory (or missing parent) gives absent true
// and no error. A symlink in any component is a *SymlinkError. At most
// limit names are returned (more is a *TooLargeError), so a directory
// filled by someone else cannot make a caller allocate without bound.
func (r *ProjectRoot) ListDir(rel string, limit int) (names []string, absent bool, err error) {
	comps, err := splitRel(rel)
	if err != nil {
		return nil, false, err
	}
	dir, absent, err := r.walk(comps, false, 0)
	if err != nil || absent {
		return nil, absent, err
	}
	defer dir.Close()
	f, err := dir.Open(".")
	if err != nil {
		return nil, false, fmt.Errorf("list %s: %w", rel, errnoOf(err))
	}
	defer f.Close()
	names, err = f.Readdirnames(limit + 1)
	if err != nil && err != io.EOF {
		return nil, false, fmt.Errorf("list %s: %w", rel, errnoOf(err))
	}
	if len(names) > limit {
		return nil, false, &TooLargeError{Path: rel, Limit: limit}
	}
	slices.Sort(names)
	return names, false, nil
}

// RemoveFile unlinks the regular file rel without following a symlink in
// any component. It exists for Tree Ring's own receipt files (retention),
// never for bridge material, which is create-only. An absent file is not an
// error (removed reports whether this call removed it); a final entry that
// is not a regular file is a *NotRegularError and is left alone. The
// directory is not fsynced: a removal that does not survive a crash is
// repeated by the next retention pass.
func (r *ProjectRoot) RemoveFile(rel string) (removed bool, err error) {
	dir, name, absent, err := r.parentOf(rel)
	if err != nil || absent {
		return false, err
	}
	defer dir.Close()
	fi, err := dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("inspect %s: %w", rel, errnoOf(err))
	case !fi.Mode().IsRegular():
		return false, &NotRegularError{Path: rel}
	}
	if err := dir.Remove(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("remove %s: %w", rel, errnoOf(err))
	}
	return true, nil
}

// RemoveEmptyDir removes directory rel if it is empty, without following a
// symlink in any component. It exists for Tree Ring's own per-worker
// receipt directories (retention). An absent or non-empty directory is not
// an error (removed reports whether this call removed it); a final entry
// that is not a directory is left alone and refused.
func (r *ProjectRoot) RemoveEmptyDir(rel string) (removed bool, err error) {
	dir, name, absent, err := r.parentOf(rel)
	if err != nil || absent {
		return false, err
	}
	defer dir.Close()
	fi, err := dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("inspect %s: %w", rel, errnoOf(err))
	case fi.Mode()&fs.ModeSymlink != 0:
		return false, &SymlinkError{Path: rel}
	case !fi.IsDir():
		return false, &NotDirError{Path: rel}
	}
	// Root.Remove removes a file or an empty directory: had a file been
	// swapped in since the Lstat, it could remove that, which is why the
	// retention callers only ever pass their own receipt directories.
	if err := dir.Remove(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) || isNotEmpty(dir, name) {
			return false, nil
		}
		return false, fmt.Errorf("remove directory %s: %w", rel, errnoOf(err))
	}
	return true, nil
}

// isNotEmpty reports whether name in dir is a directory with an entry (the
// reason a removal failed; the errno differs between systems).
func isNotEmpty(dir *os.Root, name string) bool {
	d, err := dir.Open(name)
	if err != nil {
		return false
	}
	defer d.Close()
	names, _ := d.Readdirnames(1)
	return len(names) > 0
}

// ChangedError reports that the file to replace no longer holds the bytes
// the caller planned against: nothing was replaced.
type ChangedError struct{ Path string }

func (e *ChangedError) Error() string {
	return fmt.Sprintf("%s changed since it was read; nothing was replaced", e.Path)
}

// ReplaceFile replaces the existing regular file rel, whose SHA-256 (hex)
// must still be previous, with data: a temporary file in the same
// directory is written with mode perm and fsynced, renamed over rel, and
// the directory fsynced. It is the one replacing primitive, for the
// explicit, recorded reconciliation a user asks for (integrations
// reconcile --apply); creation stays CreateFile's. A symlink or
// non-regular rel is refused, an absent or changed one is a *ChangedError;
// either way nothing was written. A failure after the rename is a
// *DurabilityError: the new bytes are in place, their durability
// indeterminate.
func (r *ProjectRoot) ReplaceFile(rel string, data []byte, perm uint32, previous string) error {
	dir, name, absent, err := r.parentOf(rel)
	if err != nil {
		return err
	}
	if absent {
		return &ChangedError{Path: rel}
	}
	defer dir.Close()
	f, exists, err := openRegular(dir, name, rel)
	if err != nil {
		return err
	}
	if !exists {
		return &ChangedError{Path: rel}
	}
	have, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, errnoOf(err))
	}
	if SHA256Hex(have) != previous {
		return &ChangedError{Path: rel}
	}
	tmp, err := TempName(name)
	if err != nil {
		return err
	}
	if err := writeTemp(dir, tmp, data, perm); err != nil {
		return fmt.Errorf("replace %s: nothing changed: %w", rel, err)
	}
	if err := dir.Rename(tmp, name); err != nil {
		_ = dir.Remove(tmp)
		return fmt.Errorf("replace %s: nothing changed: rename: %w", rel, errnoOf(err))
	}
	if err := r.syncDir(dir, dirOf(rel)); err != nil {
		return &DurabilityError{Path: rel, Err: fmt.Errorf("fsync directory: %w", err)}
	}
	return nil
}

// RemoveOwned removes the regular file rel only while its SHA-256 (hex) is
// still previous, the digest Tree Ring recorded when it published the
// file, and fsyncs the directory: exactly the bytes it owns, never a file
// the user changed (a *ChangedError, nothing removed). An absent rel is
// not an error (removed is false).
func (r *ProjectRoot) RemoveOwned(rel, previous string) (removed bool, err error) {
	e, err := r.ReadFile(rel, MaxBridgeFileBytes)
	if err != nil || !e.Exists {
		return false, err
	}
	if SHA256Hex(e.Data) != previous {
		return false, &ChangedError{Path: rel}
	}
	if removed, err = r.RemoveFile(rel); err != nil || !removed {
		return removed, err
	}
	dir, _, _, err := r.parentOf(rel)
	if err != nil {
		return true, &DurabilityError{Path: rel, Err: err}
	}
	defer dir.Close()
	if err := r.syncDir(dir, dirOf(rel)); err != nil {
		return true, &DurabilityError{Path: rel, Err: fmt.Errorf("fsync directory: %w", err)}
	}
	return true, nil
}

// dirOf is the directory of rel as CreateFile names it to syncDir ("" for
// the root itself).
func dirOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}
