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
//   - present with none recorded (a project initialized before programs
//     were recorded): it is recorded as adopted, unless it is a partial
//     copy of the running build (an older build's interrupted install),
//     which is refused with the repair (adapters.CheckOwnCopy);
//   - present and different from the record: an *adapters.ProgramError
//     with the repair; the file is never replaced.
//
// The file is created before its event is appended: a failure in between
// leaves an unrecorded program, which the next init adopts.
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
	have, reason, err := pr.installRunningBuild(rec, have)
	if err != nil {
		return err
	}
	p := &events.ProgramInstalled{Path: adapters.BinaryPath, ProgramIdentity: have, Reason: reason, CLIVersion: Version()}
	if rec != nil && rec.SHA256 != have.SHA256 {
		p.PreviousSHA256 = rec.SHA256
	}
	e, err := g.Factory("cli").New(events.StoreStream, events.TypeProgramInstalled, p)
	if err != nil {
		return err
	}
	if _, err := st.Append(ctx, events.StoreStream, int64(version), e); err != nil {
		return fmt.Errorf("record %s: %w", adapters.BinaryPath, err)
	}
	return nil
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
// when it is absent, or adopts what is there (have) unless it is a partial
// copy of this build (installOwn refuses that with the repair), and says
// why against the record rec (nil: none).
func (pr *project) installRunningBuild(rec *projections.Program, have events.ProgramIdentity) (events.ProgramIdentity, string, error) {
	data, err := runningBuild()
	if err != nil {
		return have, "", err
	}
	created, err := pr.installOwn(adapters.BinaryPath, data, 0o755)
	if err != nil || !created {
		return have, events.ProgramReasonAdopted, err
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
func (pr *project) programAllowsMigration() error {
	have, exists, err := adapters.IdentifyProgram(pr.root)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", adapters.BinaryPath, err)
	}
	if !exists {
		return nil
	}
	data, err := runningBuild()
	if err != nil {
		return err
	}
	if have.SHA256 == adapters.SHA256Hex(data) {
		return nil
	}
	return &adapters.ProgramError{Code: adapters.ProgramBeforeMigration, Have: have}
}

// runningBuild is the bytes of the running tree-ring.
func runningBuild() ([]byte, error) {
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
