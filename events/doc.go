// Package events defines the ledger's vocabulary: the envelope every fact is
// wrapped in, the registry of event types with their typed payloads (decoded
// from outside input by events/strictjson), the canonical bytes the
// hash chain is computed over, and the schema-version check of every payload.
//
// The package is pure: it never touches the disk, the clock or randomness
// except through the Factory a caller hands it, so tests replay exactly.
package events
