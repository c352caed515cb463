package main

import (
	"fmt"

	"github.com/tree-ring/tree-ring/cmd/internal/cli"
)

// OutputError is a command that did its work but could not write its
// report in full (cli.OutputError).
type OutputError = cli.OutputError

// LedgerMissingError is a write to a root whose activation.json names a
// store but whose ledger is gone (cli.LedgerMissingError).
type LedgerMissingError = cli.LedgerMissingError

// manifestNamesStore reports whether the root holds an activation.json (a
// store was initialized here).
func (g *Globals) manifestNamesStore() bool { return cli.ManifestNamesStore(g.Root) }

// noLedger is the refusal of a command that needs the ledger and finds
// none: *LedgerMissingError when activation.json names a store, else
// generic.
func (g *Globals) noLedger(generic error) error { return cli.NoLedger(g.Root, generic) }

// PartialError is a command that failed after part of its work was
// committed: not "nothing changed" (exit 2) but an outcome the caller must
// look at (exit 4). Done says what was committed and how to go on.
type PartialError struct {
	Err  error
	Done string
}

func (e *PartialError) Error() string { return fmt.Sprintf("%v; %s", e.Err, e.Done) }

func (e *PartialError) Unwrap() error { return e.Err }

// Indeterminate is always true: see the type.
func (e *PartialError) Indeterminate() bool { return true }
