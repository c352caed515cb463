package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events/memory"
)

// Flags are the global flags every command of tree-ring and
// tree-ring-fleet accepts, before or after the command words.
type Flags struct {
	Root        string
	SourceRoot  string
	JSON        bool
	LogLevel    string
	LockTimeout time.Duration
}

// AddFlags registers the global flags.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	// Both defaults are ResolveRoots', which --help describes: no
	// literal default would be true from a subdirectory.
	fs.StringVar(&f.Root, "root", "", "memory store root, a directory named .tree-ring (default: the project root's .tree-ring)")
	fs.StringVar(&f.SourceRoot, "source-root", "", "project root (default: the git checkout's top level, else the nearest directory above holding .tree-ring, else the working directory)")
	fs.BoolVar(&f.JSON, "json", false, "machine-readable JSON output")
	fs.StringVar(&f.LogLevel, "log-level", "disabled", "log level on stderr: debug, info, warn, error, disabled")
	fs.DurationVar(&f.LockTimeout, "lock-timeout", 3*time.Second, "how long to wait for another process's ledger lock")
}

// Logger is the --log-level logger on w.
func (f *Flags) Logger(w io.Writer) (zerolog.Logger, error) {
	lvl := zerolog.Disabled
	if f.LogLevel != "disabled" && f.LogLevel != "" {
		l, err := zerolog.ParseLevel(f.LogLevel)
		if err != nil || l == zerolog.NoLevel {
			return zerolog.Nop(), Usagef("--log-level %q: want debug, info, warn, error or disabled", f.LogLevel)
		}
		lvl = l
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// Project root discovery. The lifecycle hooks resolve the project as
// `git rev-parse --show-toplevel || pwd` (adapters.HookCommand), so a
// command run from a subdirectory must find the same root, not create a
// second store beside the working directory.

// FindProjectRoot returns the project root of directory dir (absolute):
// the nearest ancestor-or-self holding a .git entry (a directory, or the
// file of a linked worktree or submodule: the top level git reports),
// else the nearest holding a .tree-ring entry (a project that is not a git
// checkout), else dir itself. It only stats; it never follows a
// .tree-ring symlink (the store checks refuse one later).
func FindProjectRoot(dir string) string {
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

// ResolveRoots fills in the store root and the project root the user did
// not give. The project root, when not given, is FindProjectRoot of the
// working directory (getwd, os.Getwd when nil); the store, when not given,
// is its .tree-ring. So with neither flag both come from the working
// directory as the hooks find them; with only --root the store must still
// be that project's (tree-ring's resolveProject refuses another's); with
// only --source-root the store is the project's. discovered is the project
// root found when neither was given and it differs from the working
// directory ("" otherwise).
func (f *Flags) ResolveRoots(getwd func() (string, error), rootSet, sourceSet bool) (discovered string, err error) {
	if !sourceSet {
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
			f.SourceRoot = FindProjectRoot(cwd)
			if !rootSet && f.SourceRoot != cwd {
				discovered = f.SourceRoot
			}
		}
	}
	if !rootSet {
		f.Root = filepath.Join(f.SourceRoot, adapters.StoreDir)
	}
	return discovered, nil
}

// FlagError rewrites a flag-parse error so that it never echoes what was
// typed: a SUMMARY that starts with "-" (a private key block, say) reaches
// the flag parser as a flag, and pflag's messages quote the argument and
// flag values verbatim. Only a flag's registered name, or a typed name
// that looks like a flag name and not like a secret, appears. where is the
// command's name, "" before the command words.
func FlagError(where string, err error) error {
	prefix := ""
	if where != "" {
		prefix = where + ": "
	}
	var (
		notExist *pflag.NotExistError
		invalid  *pflag.InvalidValueError
		required *pflag.ValueRequiredError
	)
	switch {
	case errors.As(err, &invalid):
		return Usagef("%sinvalid value for --%s (the value is not shown; see --help)", prefix, invalid.GetFlag().Name)
	case errors.As(err, &required):
		return Usagef("%sflag --%s needs a value", prefix, required.GetFlag().Name)
	case errors.As(err, &notExist) && notExist.GetSpecifiedShortnames() == "" && PrintableFlagName(notExist.GetSpecifiedName()):
		return Usagef("%sunknown flag --%s (see --help)", prefix, notExist.GetSpecifiedName())
	}
	return Usagef(`%san argument that starts with "-" is not a known flag (it is not shown); put text that starts with "-" after "--", flags first, e.g. tree-ring remember --event-type lesson -- "-x ..."`, prefix)
}

// flagNameForm reports whether name has the form of our flag names,
// ^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$: lower-case words joined by single
// hyphens. Written out rather than a package-level regexp, whose
// compilation at init cost every process (every hook) 0.3 M instructions.
func flagNameForm(name string) bool {
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && name[i-1] != '-' && i < len(name)-1:
		default:
			return false
		}
	}
	return true
}

// PrintableFlagName reports whether a typed flag name may be echoed: the
// form of our flag names, short, and not secret-like.
func PrintableFlagName(name string) bool {
	return len(name) <= 32 && flagNameForm(name) && !memory.IsSecretLike(name)
}
