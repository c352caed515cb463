package adapters

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"strings"

	"github.com/tree-ring/tree-ring/events"
)

// The program the bridges run is BinaryPath: every hook command line and
// the Pi extension prefer it to a tree-ring on PATH. It is part of the
// proof: init records its SHA-256 (the ledger's program.installed), and a
// missing, non-executable or different file makes status and the hook's
// contract check report failed with the repair (docs/reliability.md, "The
// installed program").

// Diagnostic codes of the installed program.
const (
	ProgramMissing       = "program_missing"
	ProgramNotRegular    = "program_not_regular"
	ProgramNotExecutable = "program_not_executable"
	ProgramDiffers       = "program_differs"
	ProgramUnreadable    = "program_unreadable"
	// ProgramBeforeMigration: init would migrate the ledger to a format
	// the installed program (another build) may not read; it refuses first.
	ProgramBeforeMigration = "program_before_migration"
	// ProgramUnsafeMode: the program, or the directory holding it, is
	// writable by group or others, or the program is setuid or setgid:
	// another account could change what every hook runs, whatever its
	// digest is now.
	ProgramUnsafeMode = "program_unsafe_mode"
	// ProgramForeign: a program is there that this store never installed
	// and that is not the running build (a clone committed it): init
	// never adopts it and publishes no bridge that would run it.
	ProgramForeign = "program_foreign"
)

// BinaryDir is the directory holding BinaryPath.
var BinaryDir = path.Dir(BinaryPath)

// ProgramError is an installed program that is not the recorded one, with
// the exact repair. Tree Ring never replaces or removes the file
// (create-only): the repair moves it aside and lets `tree-ring init`
// install and record a build.
type ProgramError struct {
	Code string
	// Have is what is there, when it could be read.
	Have events.ProgramIdentity
	Want events.ProgramIdentity
	// Path and Mode are the unsafe entry of ProgramUnsafeMode (BinaryPath
	// or BinaryDir) and its mode.
	Path string
	Mode fs.FileMode
}

const programReinstall = "move it aside (`mv " + BinaryPath + " " + BinaryPath + ".replaced`; Tree Ring never replaces it) and run `tree-ring init`: it installs the running tree-ring there and records its digest"

func (e *ProgramError) Error() string {
	switch e.Code {
	case ProgramMissing:
		return "the installed program " + BinaryPath + " is missing (every hook falls back to a tree-ring on PATH); repair: run `tree-ring init`: it installs the running tree-ring there and records its digest"
	case ProgramNotRegular:
		return "the installed program " + BinaryPath + " is not a regular file; repair: " + programReinstall
	case ProgramNotExecutable:
		return "the installed program " + BinaryPath + " is the recorded build but not executable (every hook falls back to a tree-ring on PATH); repair: `chmod 755 " + BinaryPath + "`"
	case ProgramUnreadable:
		return "the installed program " + BinaryPath + " cannot be read; repair: make it readable, or " + programReinstall
	case ProgramUnsafeMode:
		what := "writable by group or others"
		if e.Mode&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
			what = "setuid or setgid"
		}
		name := "the installed program " + BinaryPath
		if e.Path != BinaryPath {
			name = e.Path + ", the directory of the installed program " + BinaryPath + ","
		}
		return fmt.Sprintf("%s is %s (mode %04o), so it cannot vouch for what every hook runs; repair: `chmod 755 %s`",
			name, what, uint32(e.Mode.Perm())|setIDBits(e.Mode), e.Path)
	case ProgramForeign:
		return "the program " + BinaryPath + " was not installed by this store and is not the running tree-ring (a clone or a copy brought it?), so no bridge that would run it is published; repair: " + ForeignProgramStep
	case ProgramBeforeMigration:
		return "the ledger is in an older format, which this init migrates, and the installed program " + BinaryPath +
			" (which every hook runs) is another build, which may read only the older format; nothing was changed; repair: " + programReinstall +
			": it migrates the ledger and installs the running tree-ring in one run"
	}
	what := "differs from the program init recorded"
	if e.Have.Size < e.Want.Size {
		what = "is shorter than the program init recorded (a partial copy?)"
	}
	return fmt.Sprintf("the installed program %s %s: %d bytes, SHA-256 %s; recorded %d bytes, SHA-256 %s; repair: %s",
		BinaryPath, what, e.Have.Size, short(e.Have.SHA256), e.Want.Size, short(e.Want.SHA256), programReinstall)
}

// ForeignProgramStep moves a program Tree Ring did not install aside, so
// that init installs and records the running build.
const ForeignProgramStep = "review it, move it aside (`mv " + BinaryPath + " " + BinaryPath + ".foreign`; Tree Ring never replaces it) and run `tree-ring init`: it installs the running tree-ring there and records its digest; then `tree-ring integrations reconcile --apply` publishes the bridges this review held back (recorded, with the previous manifest digest)"

// ForeignProgramFinding is a foreign program (an ProgramForeign error) as
// a conflict of every bridge that would run it: publication stops short of
// it and the harness needs review, with the step that moves it aside.
func ForeignProgramFinding(err *ProgramError) Finding {
	msg := err.Error()
	return Finding{Path: BinaryPath, State: PathConflict, Reason: ReasonForeignProgram,
		Detail: strings.ToUpper(msg[:1]) + msg[1:] + "."}
}

func setIDBits(m fs.FileMode) uint32 {
	var b uint32
	if m&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	return b
}

// CheckProgramModes refuses a program (fi, the file at BinaryPath) or a
// BinaryDir that another account could change: either writable by group
// or others, or a setuid or setgid program. A setgid directory alone is
// not refused: Linux gives it to every directory made below one (shared
// group trees). Windows has no such bits (every writable file reports
// 0666), so nothing is checked there.
func CheckProgramModes(root *ProjectRoot, fi fs.FileInfo) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	if m := fi.Mode(); m.Perm()&0o022 != 0 || m&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		return &ProgramError{Code: ProgramUnsafeMode, Path: BinaryPath, Mode: m}
	}
	di, exists, err := root.Lstat(BinaryDir)
	if err != nil || !exists {
		return &ProgramError{Code: ProgramUnreadable}
	}
	if di.Mode().Perm()&0o022 != 0 {
		return &ProgramError{Code: ProgramUnsafeMode, Path: BinaryDir, Mode: di.Mode()}
	}
	return nil
}

// Diagnostic is the code (cmd's diagnostic column).
func (e *ProgramError) Diagnostic() string { return e.Code }

func short(sha string) string {
	if len(sha) > 16 {
		return sha[:16] + "…"
	}
	if sha == "" {
		return "unknown"
	}
	return sha
}

// InspectProgram checks the installed program under root against want.
// First, always, its modes and its directory's (CheckProgramModes). Quick (full false), as the hook does on every session start: the file
// must be a regular, executable file of the recorded size, and its
// identity (inode, mtime, ctime) equal to the recorded one, else its
// digest is computed and compared. Full (status, audit): the digest is
// always computed. hashed reports whether it was. The observed identity is
// returned for a caller that records it.
func InspectProgram(root *ProjectRoot, want events.ProgramIdentity, full bool) (have events.ProgramIdentity, hashed bool, err error) {
	f, exists, err := root.OpenRead(BinaryPath)
	var nr *NotRegularError
	var sl *SymlinkError
	switch {
	case errors.As(err, &nr), errors.As(err, &sl):
		return have, false, &ProgramError{Code: ProgramNotRegular, Want: want}
	case err != nil:
		return have, false, &ProgramError{Code: ProgramUnreadable, Want: want}
	case !exists:
		return have, false, &ProgramError{Code: ProgramMissing, Want: want}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return have, false, &ProgramError{Code: ProgramUnreadable, Want: want}
	}
	have.Size = fi.Size()
	have.Inode, have.MtimeNS, have.CtimeNS = fileIdentity(fi)
	if err := CheckProgramModes(root, fi); err != nil {
		return have, false, err
	}
	executable := fi.Mode().Perm()&0o111 == 0o111
	if !full && have.Size != want.Size {
		return have, false, &ProgramError{Code: ProgramDiffers, Have: have, Want: want}
	}
	if !full && executable && untouched(have, want) {
		have.SHA256 = want.SHA256
		return have, false, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return have, true, &ProgramError{Code: ProgramUnreadable, Have: have, Want: want}
	}
	have.SHA256 = hex.EncodeToString(h.Sum(nil))
	if have.SHA256 != want.SHA256 || have.Size != want.Size {
		return have, true, &ProgramError{Code: ProgramDiffers, Have: have, Want: want}
	}
	if !executable {
		return have, true, &ProgramError{Code: ProgramNotExecutable, Have: have, Want: want}
	}
	return have, true, nil
}

// untouched reports whether the file's identity (inode, mtime, ctime) is
// the recorded one, which lets the quick check skip the digest.
func untouched(have, want events.ProgramIdentity) bool {
	return have.Inode != 0 && have.Inode == want.Inode && have.MtimeNS == want.MtimeNS && have.CtimeNS == want.CtimeNS
}

// IdentifyProgram reads the installed program's record as it is now (its
// digest, size and identity); exists is false when there is none.
func IdentifyProgram(root *ProjectRoot) (rec events.ProgramIdentity, exists bool, err error) {
	f, exists, err := root.OpenRead(BinaryPath)
	if err != nil || !exists {
		return rec, exists, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return rec, true, fmt.Errorf("stat %s: %w", BinaryPath, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return rec, true, fmt.Errorf("read %s: %w", BinaryPath, err)
	}
	rec.SHA256, rec.Size = hex.EncodeToString(h.Sum(nil)), fi.Size()
	rec.Inode, rec.MtimeNS, rec.CtimeNS = fileIdentity(fi)
	return rec, true, nil
}
