package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

// installProgram makes adapters.BinaryPath the recorded program every
// bridge runs, create-only (docs/reliability.md, "The installed program"):
//
//   - absent: the running build is installed and recorded (installed; or,
//     after the user moved a recorded one aside, reinstalled with the same
//     digest or upgraded with another one, naming the previous digest);
//   - present and recorded with the same digest: nothing happens;
//   - present with none recorded: recorded as adopted only when it is
//     byte-identical to the running build (an interrupted init of this
//     build left it); a partial copy of it (an older build's interrupted
//     install) is refused with the repair (adapters.CheckOwnCopy); any
//     other file (a clone committed it: issue 24 item 1) is never adopted
//     nor run: nothing is recorded, and the plan publishes no bridge that
//     would run it (foreignProgram);
//   - present and different from the record: an *adapters.ProgramError
//     with the repair; the file is never replaced.
//
// The file is created before its event is appended: a failure in between
// leaves an unrecorded copy of the running build, which the next init
// adopts.
func (pr *project) installProgram(ctx context.Context, g *Globals) error {
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	rec, version, err := recordedProgram(st)
	if err != nil {
		return err
	}
	have, exists, err := adapters.IdentifyProgram(pr.root)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", adapters.BinaryPath, err)
	}
	switch {
	case exists && rec != nil && have.SHA256 == rec.SHA256:
		return nil
	case exists && rec != nil:
		return &adapters.ProgramError{Code: adapters.ProgramDiffers, Have: have, Want: rec.ProgramIdentity}
	}
	have, reason, err := pr.installRunningBuild(g, rec, have)
	if err != nil || reason == "" {
		return err
	}
	e, err := g.Factory("cli").New(events.StoreStream, events.TypeProgramInstalled, programInstalled(have, reason, rec))
	if err != nil {
		return err
	}
	if _, err := st.Append(ctx, events.StoreStream, int64(version), e); err != nil {
		return fmt.Errorf("record %s: %w", adapters.BinaryPath, err)
	}
	return nil
}

// programInstalled is the event recording have, installed for reason,
// naming the previous digest when it replaces another record (rec).
func programInstalled(have events.ProgramIdentity, reason string, rec *projections.Program) *events.ProgramInstalled {
	p := &events.ProgramInstalled{Path: adapters.BinaryPath, ProgramIdentity: have, Reason: reason, CLIVersion: Version()}
	if rec != nil && rec.SHA256 != have.SHA256 {
		p.PreviousSHA256 = rec.SHA256
	}
	return p
}

// recordedProgram is the program the ledger records (nil: none) and the
// store stream's version.
func recordedProgram(st *bolt.Store) (rec *projections.Program, version uint64, err error) {
	err = st.View(func(r *bolt.Reader) error {
		version = r.StreamVersion(events.StoreStream)
		p, ok, err := projections.ProgramOf(r.Projection(projections.ManifestName))
		if ok {
			rec = &p
		}
		return err
	})
	return rec, version, err
}

// installRunningBuild installs the running build at adapters.BinaryPath
// when it is absent, or adopts what is there (have) when it is
// byte-identical to it, and says why against the record rec (nil: none).
// A partial copy of it is refused with the repair (installOwn); any other
// file gets no reason (""): it is not recorded.
func (pr *project) installRunningBuild(g *Globals, rec *projections.Program, have events.ProgramIdentity) (events.ProgramIdentity, string, error) {
	data, err := g.runningBuild()
	if err != nil {
		return have, "", err
	}
	created, err := pr.installOwn(adapters.BinaryPath, data, 0o755)
	switch {
	case err != nil:
		return have, "", err
	case !created && have.SHA256 == adapters.SHA256Hex(data):
		return have, events.ProgramReasonAdopted, nil
	case !created:
		return have, "", nil
	}
	if have, err = pr.identifyProgram(); err != nil {
		return have, "", err
	}
	switch {
	case rec == nil:
		return have, events.ProgramReasonInstalled, nil
	case rec.SHA256 == have.SHA256:
		return have, events.ProgramReasonReinstalled, nil
	}
	return have, events.ProgramReasonUpgraded, nil
}

// programAllowsMigration is nil when the installed program is absent (init
// installs the running build after migrating) or is the running build.
func (pr *project) programAllowsMigration(g *Globals) error {
	have, other, err := pr.otherProgram(g)
	if err != nil || !other {
		return err
	}
	return &adapters.ProgramError{Code: adapters.ProgramBeforeMigration, Have: have}
}

// foreignProgram is an *adapters.ProgramError (adapters.ProgramForeign)
// when a program stands at adapters.BinaryPath that the ledger does not
// record (rec nil) and that is not the running build: every bridge would
// run it, so none is published and the harnesses that would are
// needs-user-review (issue 24 item 1). nil otherwise; a recorded program
// is checked against its record instead (adapters.InspectProgram).
func (pr *project) foreignProgram(g *Globals, rec *events.ProgramIdentity) error {
	if rec != nil {
		return nil
	}
	have, other, err := pr.otherProgram(g)
	if err != nil || !other {
		return err
	}
	return &adapters.ProgramError{Code: adapters.ProgramForeign, Have: have}
}

// otherProgram reports whether a program stands at adapters.BinaryPath
// that is not the running build, with its identity.
func (pr *project) otherProgram(g *Globals) (events.ProgramIdentity, bool, error) {
	have, exists, err := adapters.IdentifyProgram(pr.root)
	if err != nil {
		return have, false, fmt.Errorf("inspect %s: %w", adapters.BinaryPath, err)
	}
	if !exists {
		return have, false, nil
	}
	data, err := g.runningBuild()
	if err != nil {
		return have, false, err
	}
	return have, have.SHA256 != adapters.SHA256Hex(data), nil
}

// programFinding is the plan's conflict for a foreign program
// (foreignProgram) against the program st records (st nil: no ledger).
func (pr *project) programFinding(g *Globals, st *bolt.Store) (*adapters.Finding, error) {
	var rec *events.ProgramIdentity
	if st != nil {
		p, _, err := recordedProgram(st)
		if err != nil {
			return nil, err
		}
		if p != nil {
			r := p.ProgramIdentity
			rec = &r
		}
	}
	var pe *adapters.ProgramError
	if err := pr.foreignProgram(g, rec); !errors.As(err, &pe) {
		return nil, err
	}
	f := adapters.ForeignProgramFinding(pe)
	return &f, nil
}

// runningBuild is the bytes of the running tree-ring.
func (g *Globals) runningBuild() ([]byte, error) {
	if g.seams.RunningBuild != nil {
		return g.seams.RunningBuild()
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locate the running binary: %w", err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		return nil, fmt.Errorf("read the running binary: %w", unwrapPath(err))
	}
	return data, nil
}

// identifyProgram reads back what landed at adapters.BinaryPath.
func (pr *project) identifyProgram() (events.ProgramIdentity, error) {
	have, exists, err := adapters.IdentifyProgram(pr.root)
	if err == nil && !exists {
		err = errors.New("it vanished right after it was created")
	}
	if err != nil {
		return have, fmt.Errorf("inspect %s: %w", adapters.BinaryPath, err)
	}
	return have, nil
}
