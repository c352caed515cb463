package adapters

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

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
)

// ProgramError is an installed program that is not the recorded one, with
// the exact repair. Tree Ring never replaces or removes the file
// (create-only): the repair moves it aside and lets `tree-ring init`
// install and record a build.
type ProgramError struct {
	Code string
	// Have is what is there, when it could be read.
	Have events.ProgramIdentity
	Want events.ProgramIdentity
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
// Quick (full false), as the hook does on every session start: the file
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
