package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/tree-ring/internal/runrec"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

// recordRefusedRun records a recorded command that failed before its
// work began (a memory import of a bad file, a hook whose input fails
// before a session exists) as a failed run: run.started and run.finished
// with cause's diagnostic, in one commit (seed 003: a setup failure is
// recorded failed). It writes only an existing ledger of this project
// (projectFP; "" checks no root): nothing in a checkout without one, a
// copy of another root's or a replica; a failure to record is the
// recorder's to log, and cause stands. It returns cause.
func recordRefusedRun(ctx context.Context, g *Globals, spec RunSpec, projectFP string, input []byte, cause error) error {
	if _, err := os.Lstat(filepath.Join(g.Root, bolt.LedgerFile)); err != nil {
		return cause
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return cause
	}
	defer st.Close()
	if projectFP != "" && !ledgerOfRoot(st, projectFP) {
		return cause
	}
	if input != nil {
		spec.InputSHA256, spec.InputChars = runrec.InputDigest(input)
	}
	run, err := g.StartRun(ctx, st, spec)
	if err != nil {
		return cause
	}
	failed := cause
	run.End(ctx, &failed)
	return cause
}

// ledgerOfRoot reports whether st's store was initialized for the project
// root whose fingerprint is projectFP.
func ledgerOfRoot(st *bolt.Store, projectFP string) bool {
	ok := false
	_ = st.View(func(r *bolt.Reader) error {
		m, initialized, err := projections.ManifestOf(r.Projection(projections.ManifestName))
		ok = err == nil && initialized && m.ProjectRootFingerprint == projectFP
		return nil
	})
	return ok
}

// hookSetupFailed records a hook that failed before its session scope
// existed (its input too large or refused, its cwd elsewhere, its session
// id unsafe) under the CLI scope, since no session can name it.
func hookSetupFailed(ctx context.Context, g *Globals, loc storeLoc, a *adapters.Adapter, input []byte, cause error) error {
	scope, err := g.CLIScope()
	if err != nil {
		return cause
	}
	return recordRefusedRun(ctx, g, RunSpec{Command: events.RunCmdIntegrationsHook, Scope: scope, Harness: a.ID, Stage: "input"}, adapters.ProjectRootFingerprint(loc.project), input, cause)
}

// refusedImport records a memory import refused before it wrote anything
// (a bad line, a secret-like memory, a file past the bound) as a failed
// run, except a dry run, which writes nothing at all; it returns cause.
func refusedImport(ctx context.Context, g *Globals, o *importOptions, cause error) error {
	if o.DryRun {
		return cause
	}
	scope, err := g.CLIScope()
	if err != nil {
		return cause
	}
	return recordRefusedRun(ctx, g, RunSpec{Command: events.RunCmdImport, Scope: scope, Stage: "read"}, "", nil, cause)
}
