package events

import "fmt"

// ForeignStoreError refuses an import into a project store of events that
// are not that store's. StoreID is the foreign store the export names
// (its store.initialized), "" when the refused events name none. Index is
// the refused envelope's index in the import.
type ForeignStoreError struct {
	Index   int
	Own     string // this store's id
	StoreID string
}

func (e *ForeignStoreError) Error() string {
	if e.StoreID != "" {
		return fmt.Sprintf("the export is of store %s, not this store %s: a project store imports only its own events", e.StoreID, e.Own)
	}
	return fmt.Sprintf("the event is not of this store %s (not in its ledger and not continuing its chain): a project store imports only its own events", e.Own)
}

// Diagnostic is the run diagnostic of a refused foreign import.
func (e *ForeignStoreError) Diagnostic() string { return "foreign_store" }

// CheckOwnImport decides whether envs may be imported into the project
// store own, whose ledger ends at position head with chain hash headHash;
// present[i] reports that envs[i] is already in that ledger with the same
// content. A project store accepts only its own events, so that another
// project's export can never add a second store.initialized or another
// store's harness events to it:
//
//   - a store.initialized must name own (else the foreign store id is
//     named);
//   - an envelope already present is its own (an idempotent re-import: a
//     backup of the store, or any part of its export, imports nothing);
//   - an envelope not present must continue a chain this ledger already
//     holds, in order: either it follows, at the next position and chained
//     by prev_hash, the envelope before it in the input, which is present
//     or admitted (a newer export of the same store onto a copy restored
//     from an older backup, even after that copy recorded events of its
//     own, such as the run record of an earlier failed attempt), or it is
//     at head+1 with prev_hash headHash (an export of only the newer part).
//
// Anything else is refused, before anything is written. Merging other
// stores' ledgers belongs in a separate auditor ledger, never a project's.
func CheckOwnImport(own string, head uint64, headHash string, envs []Envelope, present []bool) error {
	for i := range envs {
		if envs[i].Type != TypeStoreInitialized {
			continue
		}
		v, err := DecodePayload(&envs[i])
		if err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		if id := v.(*StoreInitialized).StoreID; id != own {
			return &ForeignStoreError{Index: i, Own: own, StoreID: id}
		}
	}
	for i := range envs {
		if present[i] {
			continue
		}
		e := &envs[i]
		// envs[i-1] is present or was admitted on an earlier iteration:
		// every refusal returns at once.
		follows := i > 0 && e.Position == envs[i-1].Position+1 && e.PrevHash == envs[i-1].Hash
		atHead := e.Position == head+1 && e.PrevHash == headHash
		if !follows && !atHead {
			return &ForeignStoreError{Index: i, Own: own}
		}
	}
	return nil
}

// ForeignRootError refuses an import into a root that is no project's
// store yet (a fresh checkout's .tree-ring) of an export whose store
// names another project root: the ledger would carry the other store's id
// and root, and init could never adopt it. Index is its store.initialized.
type ForeignRootError struct{ Index int }

func (e *ForeignRootError) Error() string {
	return "the export is of a store of another project root: a fresh checkout takes only its own project's history; " +
		"collect another machine's history with `tree-ring fleet collect`, or import it into a scratch --root (a directory not named .tree-ring)"
}

// Diagnostic is the run diagnostic of a refused foreign root.
func (e *ForeignRootError) Diagnostic() string { return "foreign_root" }

// CheckFreshRoot decides whether envs may be imported into a project
// store directory that holds no store yet, whose project root has
// fingerprint projectFP: the root the export's store names last (its
// store.initialized's, or that of the last store.root_moved from it) must
// be projectFP (the documented restore of this project's own export).
func CheckFreshRoot(projectFP string, envs []Envelope) error {
	root, at := "", -1
	for i := range envs {
		if envs[i].Type != TypeStoreInitialized && envs[i].Type != TypeStoreRootMoved {
			continue
		}
		v, err := DecodePayload(&envs[i])
		if err != nil {
			return err
		}
		switch p := v.(type) {
		case *StoreInitialized:
			if at >= 0 && root != projectFP {
				return &ForeignRootError{Index: at}
			}
			root, at = p.ProjectRootFingerprint, i
		case *StoreRootMoved:
			if at >= 0 && p.PreviousProjectRootFingerprint == root {
				root = p.ProjectRootFingerprint
			}
		}
	}
	if at >= 0 && root != projectFP {
		return &ForeignRootError{Index: at}
	}
	return nil
}
