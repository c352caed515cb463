//go:build linux

package adapters

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"unsafe"
)

// oPath is O_PATH (asm-generic value, shared by every Linux architecture Go
// supports); package syscall does not export it.
const oPath = 0x200000

// ProjectRoot is a pinned project directory. Every access is relative to the
// directory descriptor opened once, component by component with O_NOFOLLOW,
// so a symlink anywhere below the root (a symlinked .claude, a symlinked
// bridge file) is refused instead of followed, and a rename of an ancestor
// cannot redirect writes. Safe for concurrent use; Close when done.
type ProjectRoot struct {
	fd int
	// FailSync is a test seam: when set it is called with the
	// project-relative directory before each directory fsync, and a non-nil
	// result is treated as that fsync's failure.
	FailSync func(dir string) error
}

// OpenProjectRoot pins canonical, an absolute directory path without
// symlinks (see CanonicalProjectRoot).
func OpenProjectRoot(canonical string) (*ProjectRoot, error) {
	fd, err := syscall.Open(canonical, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open project root: %w", err)
	}
	return &ProjectRoot{fd: fd}, nil
}

// Close releases the directory descriptor.
func (r *ProjectRoot) Close() error { return syscall.Close(r.fd) }

// walk opens the directory made of comps below the root. With create,
// missing directories are made with mode dirPerm and their parent is synced.
// absent is true (with a nil error) when a component is missing and create
// is false. The returned descriptor must be closed by the caller.
func (r *ProjectRoot) walk(comps []string, create bool, dirPerm uint32) (fd int, absent bool, err error) {
	fd, err = syscall.Dup(r.fd)
	if err != nil {
		return -1, false, err
	}
	for i, c := range comps {
		rel := strings.Join(comps[:i+1], "/")
		next, err := syscall.Openat(fd, c, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if errors.Is(err, syscall.ENOENT) && create {
			if err := syscall.Mkdirat(fd, c, dirPerm); err != nil && !errors.Is(err, syscall.EEXIST) {
				syscall.Close(fd)
				return -1, false, fmt.Errorf("create directory %s: %w", rel, err)
			}
			if err := r.syncDir(fd, strings.Join(comps[:i], "/")); err != nil {
				syscall.Close(fd)
				return -1, false, &DurabilityError{Path: rel, Err: err}
			}
			next, err = syscall.Openat(fd, c, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		}
		if err != nil {
			kindErr := classify(fd, c, rel, err)
			syscall.Close(fd)
			if errors.Is(err, syscall.ENOENT) {
				return -1, true, nil
			}
			return -1, false, kindErr
		}
		syscall.Close(fd)
		fd = next
	}
	return fd, false, nil
}

// classify turns an open failure on an existing entry into a typed error.
func classify(dirfd int, name, rel string, err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return &SymlinkError{Path: rel}
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EEXIST):
		pfd, perr := syscall.Openat(dirfd, name, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if perr == nil {
			var st syscall.Stat_t
			serr := syscall.Fstat(pfd, &st)
			syscall.Close(pfd)
			if serr == nil && st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
				return &SymlinkError{Path: rel}
			}
		}
		if errors.Is(err, syscall.EEXIST) {
			return &ExistsError{Path: rel}
		}
		return &NotDirError{Path: rel}
	}
	return fmt.Errorf("open %s: %w", rel, err)
}

func (r *ProjectRoot) syncDir(fd int, rel string) error {
	if rel == "" {
		rel = "."
	}
	if r.FailSync != nil {
		if err := r.FailSync(rel); err != nil {
			return err
		}
	}
	return syscall.Fsync(fd)
}

// ReadFile inspects the final path rel: absent (Exists false), or a regular
// file of at most limit bytes whose content is returned. A symlink in any
// component, a non-directory parent, a non-regular final entry or a larger
// file is a typed error. Nothing is created.
func (r *ProjectRoot) ReadFile(rel string, limit int) (Entry, error) {
	comps, err := splitRel(rel)
	if err != nil {
		return Entry{}, err
	}
	dfd, absent, err := r.walk(comps[:len(comps)-1], false, 0)
	if err != nil || absent {
		return Entry{}, err
	}
	defer syscall.Close(dfd)
	name := comps[len(comps)-1]
	fd, err := syscall.Openat(dfd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return Entry{}, nil
	}
	if err != nil {
		return Entry{}, classify(dfd, name, rel, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Entry{}, fmt.Errorf("stat %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return Entry{}, &NotRegularError{Path: rel}
	}
	if fi.Size() > int64(limit) {
		return Entry{}, &TooLargeError{Path: rel, Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return Entry{}, fmt.Errorf("read %s: %w", rel, err)
	}
	if len(data) > limit {
		return Entry{}, &TooLargeError{Path: rel, Limit: limit}
	}
	return Entry{Exists: true, Data: data}, nil
}

// Exists reports whether the final path rel exists (of any kind), without
// following a symlink in any component; a symlinked parent is an error.
func (r *ProjectRoot) Exists(rel string) (bool, error) {
	comps, err := splitRel(rel)
	if err != nil {
		return false, err
	}
	dfd, absent, err := r.walk(comps[:len(comps)-1], false, 0)
	if err != nil || absent {
		return false, err
	}
	defer syscall.Close(dfd)
	fd, err := syscall.Openat(dfd, comps[len(comps)-1], oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("inspect %s: %w", rel, err)
	}
	syscall.Close(fd)
	return true, nil
}

// CreateFile publishes data at rel create-only and atomically: missing
// parent directories are made (mode dirPerm, parent synced); the bytes go
// to a temporary file beside the final one (O_CREAT|O_EXCL|O_NOFOLLOW,
// mode perm exactly), which is written in full, fsynced and then linked to
// the final name (link(2) fails on an existing name, so nothing is ever
// replaced); the temporary name is removed and the directory fsynced. The
// final path therefore never holds a partial or empty file: a failed write
// or sync, or a process killed mid-write, leaves at most the temporary
// file (named by TempName) and no final path. An existing final path is an
// *ExistsError (or *SymlinkError) and nothing was written. A failure
// before the link changed nothing at rel (a plain error); one after it (the
// temporary name's removal, the directory fsync) is a *DurabilityError: the
// complete file is in place but its durability is indeterminate.
func (r *ProjectRoot) CreateFile(rel string, data []byte, perm, dirPerm uint32) error {
	comps, err := splitRel(rel)
	if err != nil {
		return err
	}
	dfd, _, err := r.walk(comps[:len(comps)-1], true, dirPerm)
	if err != nil {
		return err
	}
	defer syscall.Close(dfd)
	name := comps[len(comps)-1]
	// Refuse an existing name before writing anything.
	if pfd, err := syscall.Openat(dfd, name, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0); err == nil {
		syscall.Close(pfd)
		return classify(dfd, name, rel, syscall.EEXIST)
	} else if !errors.Is(err, syscall.ENOENT) {
		return classify(dfd, name, rel, err)
	}
	tmp, err := TempName(name)
	if err != nil {
		return err
	}
	fd, err := syscall.Openat(dfd, tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
	if err != nil {
		return fmt.Errorf("create %s: nothing changed: %w", rel, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	unchanged := func(step string, err error) error {
		f.Close()
		_ = syscall.Unlinkat(dfd, tmp)
		return fmt.Errorf("create %s: nothing changed: %s: %w", rel, step, errnoOf(err))
	}
	if err := f.Chmod(os.FileMode(perm)); err != nil {
		return unchanged("chmod", err)
	}
	if _, err := f.Write(data); err != nil {
		return unchanged("write", err)
	}
	if err := f.Sync(); err != nil {
		return unchanged("fsync", err)
	}
	if err := f.Close(); err != nil {
		_ = syscall.Unlinkat(dfd, tmp)
		return fmt.Errorf("create %s: nothing changed: close: %w", rel, errnoOf(err))
	}
	if err := linkat(dfd, tmp, dfd, name); err != nil {
		_ = syscall.Unlinkat(dfd, tmp)
		if errors.Is(err, syscall.EEXIST) {
			return classify(dfd, name, rel, err)
		}
		return fmt.Errorf("create %s: nothing changed: link: %w", rel, err)
	}
	if err := syscall.Unlinkat(dfd, tmp); err != nil {
		return &DurabilityError{Path: rel, Err: fmt.Errorf("remove the temporary name: %w", err)}
	}
	if err := r.syncDir(dfd, strings.Join(comps[:len(comps)-1], "/")); err != nil {
		return &DurabilityError{Path: rel, Err: fmt.Errorf("fsync directory: %w", errnoOf(err))}
	}
	return nil
}

// linkat links oldName in olddirfd to newName in newdirfd without following
// symlinks (package syscall has no Linkat on every architecture).
func linkat(olddirfd int, oldName string, newdirfd int, newName string) error {
	oldp, err := syscall.BytePtrFromString(oldName)
	if err != nil {
		return err
	}
	newp, err := syscall.BytePtrFromString(newName)
	if err != nil {
		return err
	}
	_, _, errno := syscall.Syscall6(syscall.SYS_LINKAT, uintptr(olddirfd), uintptr(unsafe.Pointer(oldp)),
		uintptr(newdirfd), uintptr(unsafe.Pointer(newp)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// errnoOf strips the absolute or descriptor-named path an *os.PathError
// carries; the caller names the project-relative path.
func errnoOf(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
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
	dfd, absent, err := r.walk(comps, false, 0)
	if err != nil || absent {
		return nil, absent, err
	}
	f := os.NewFile(uintptr(dfd), rel)
	defer f.Close()
	names, err = f.Readdirnames(limit + 1)
	if err != nil && err != io.EOF {
		return nil, false, fmt.Errorf("list %s: %w", rel, err)
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
	dfd, name, absent, err := r.parentOf(rel)
	if err != nil || absent {
		return false, err
	}
	defer syscall.Close(dfd)
	var st syscall.Stat_t
	if err := fstatat(dfd, name, &st); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("inspect %s: %w", rel, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return false, &NotRegularError{Path: rel}
	}
	if err := syscall.Unlinkat(dfd, name); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("remove %s: %w", rel, err)
	}
	return true, nil
}

// parentOf opens the directory holding rel (never creating one) and
// returns its descriptor, to be closed by the caller, and rel's last
// component; absent is true when the directory does not exist.
func (r *ProjectRoot) parentOf(rel string) (dfd int, name string, absent bool, err error) {
	comps, err := splitRel(rel)
	if err != nil {
		return -1, "", false, err
	}
	dfd, absent, err = r.walk(comps[:len(comps)-1], false, 0)
	return dfd, comps[len(comps)-1], absent, err
}

// fstatat stats name in dirfd without following a final symlink (through
// an O_PATH descriptor: package syscall has no portable fstatat).
func fstatat(dirfd int, name string, st *syscall.Stat_t) error {
	fd, err := syscall.Openat(dirfd, name, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	return syscall.Fstat(fd, st)
}

// RemoveEmptyDir removes directory rel if it is empty, without following a
// symlink in any component. It exists for Tree Ring's own per-worker
// receipt directories (retention). An absent or non-empty directory is not
// an error (removed reports whether this call removed it); a final entry
// that is not a directory is left alone (the kernel refuses to rmdir it).
func (r *ProjectRoot) RemoveEmptyDir(rel string) (removed bool, err error) {
	dfd, name, absent, err := r.parentOf(rel)
	if err != nil || absent {
		return false, err
	}
	defer syscall.Close(dfd)
	if err := rmdirat(dfd, name); err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return false, nil
		}
		return false, fmt.Errorf("remove directory %s: %w", rel, err)
	}
	return true, nil
}

// rmdirat is unlinkat(dirfd, name, AT_REMOVEDIR): package syscall's
// Unlinkat passes no flags.
func rmdirat(dirfd int, name string) error {
	const atRemoveDir = 0x200
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	if _, _, e := syscall.Syscall(syscall.SYS_UNLINKAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), atRemoveDir); e != 0 {
		return e
	}
	return nil
}

// OpenRead opens the regular file rel for reading without following a
// symlink in any component: exists is false (with a nil error) when it is
// absent; a final entry that is not a regular file is a *NotRegularError.
// The caller closes f.
func (r *ProjectRoot) OpenRead(rel string) (f *os.File, exists bool, err error) {
	dfd, name, absent, err := r.parentOf(rel)
	if err != nil || absent {
		return nil, false, err
	}
	defer syscall.Close(dfd)
	fd, err := syscall.Openat(dfd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, classify(dfd, name, rel, err)
	}
	f = os.NewFile(uintptr(fd), rel)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("stat %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, false, &NotRegularError{Path: rel}
	}
	return f, true, nil
}

// fileIdentity is a file's inode and its modification and change times in
// nanoseconds: ctime moves with every write, chmod, link and rename of the
// inode and cannot be set back by a user.
func fileIdentity(fi os.FileInfo) (inode uint64, mtimeNS, ctimeNS int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0
	}
	return st.Ino, st.Mtim.Nano(), st.Ctim.Nano()
}
