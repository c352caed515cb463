package adapters

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// TrustGate is a host's own trust decision standing between our bridge and
// its sessions: until the user trusts the project (or our hooks) in the
// host, it skips the bridge. Tree Ring never changes a host's trust
// settings; it may only read them.
type TrustGate struct {
	// Inspect, when set, reads the host's trust settings read-only and says
	// whether the host would run this adapter's bridge in the project now;
	// it is the one trust capability status asks (Codex's two layers,
	// Gemini CLI's folder trust, Pi's project trust). nil: the host's
	// trust cannot be read from outside (Claude Code's workspace dialog),
	// so the ledger's state stands.
	Inspect func(TrustQuery) Trust
	// Supersedes: the live verdict also replaces a recorded needs-trust
	// (Pi rests there until its host trusts the project); otherwise a
	// recorded needs-trust stands as recorded.
	Supersedes bool
}

// decisionGate is the gate of a host whose verdict is one TrustDecision
// (Gemini CLI, Pi), the steps coming from step.
func decisionGate(check TrustCheck, step func(TrustDecision) string) *TrustGate {
	return &TrustGate{Supersedes: true, Inspect: func(q TrustQuery) Trust {
		return TrustFromDecision(check(q.Getenv, q.Project), step)
	}}
}

// TrustFromDecision is the verdict of decision d: granted when Trusted,
// Unknown (with the step) where Tree Ring cannot tell whether the host
// gates the project, else not granted with step(d).
func TrustFromDecision(d TrustDecision, step func(TrustDecision) string) Trust {
	switch d {
	case Trusted:
		return Trust{Granted: true}
	case GateUnknown:
		return Trust{Unknown: true, Next: step(d)}
	}
	return Trust{Next: step(d)}
}

// TrustQuery is what an inspection may read. Lifetime: one status call.
type TrustQuery struct {
	// Project is the canonical absolute project root. It stays in memory:
	// never logged or recorded (a next step the user reads may name it,
	// because the host's settings are keyed by it).
	Project string
	// Getenv reads the environment (the host's settings location); values
	// are never logged, recorded or echoed.
	Getenv func(string) string
	// Root is the pinned project root, to read the bridge as it is on disk
	// (a host that keys trust by the hooks' position in the file: Codex).
	// nil: the bridge is taken to be the one Tree Ring publishes.
	Root *ProjectRoot
}

// Trust is an inspection's verdict.
type Trust struct {
	// Granted: the host would run the bridge.
	Granted bool
	// Unknown: Tree Ring cannot tell whether the installed host gates
	// projects at all (Pi's version unreadable): a valid receipt shows the
	// host ran the bridge; without one, status reports needs-trust with
	// Next.
	Unknown bool
	// Diagnostic is a code when the settings could not be read or parsed:
	// the verdict is unknown, which status reports as failed (never a
	// guess either way).
	Diagnostic string
	// Next is the exact step that grants it, or repairs the settings.
	Next string
}

// readHostFile reads a host's settings file at an absolute path outside
// the project (symlinks followed, as the host follows them): exists is
// false with a nil error when there is none; a non-regular file or one over
// limit bytes is an error. Errors never name the path. O_NONBLOCK: a fifo
// put there must not hang status.
func readHostFile(path string, limit int) (data []byte, exists bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, pathless(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, pathless(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, false, errors.New("not a regular file")
	}
	data, err = io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, false, pathless(err)
	}
	if len(data) > limit {
		return nil, false, &TooLargeError{Path: fi.Name(), Limit: limit}
	}
	return data, true, nil
}

// pathless drops the path of an *fs.PathError, keeping the operation and
// its cause.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}
