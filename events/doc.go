// Package events defines the ledger's vocabulary: the envelope every fact is
// wrapped in, the registry of event types with their typed payloads, the strict
// codec used for every byte that comes from outside, the canonical bytes the
// hash chain is computed over, and the schema-version check of every payload.
//
// The package is pure: it never touches the disk, the clock or randomness
// except through the Factory a caller hands it, so tests replay exactly.
package events
