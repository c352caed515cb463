// Package memory is the published memory model: the record (Record, its
// defaults, limits and Validate), sensitivity detection and the secret
// guard, the JSONL export/import wire format, the content-addressed body
// format, redaction, and the write rules of remember, capture and import
// as pure functions (rules.go) that return what should happen; cmd opens
// the store and applies it.
//
// The memory facts themselves (events.MemoryCaptured, MemorySuperseded,
// MemoryForgotten) and the field rules their Check shares with Validate
// stay in package events, so that the ledger validates every memory event
// without this package. Everything here is pure (no disk, no clock, no
// randomness of its own) and safe for concurrent use.
package memory
