package events

import (
	"errors"
	"fmt"
	"strings"
)

// Adoption of a project the Rust Tree Ring initialized: its
// .tree-ring/activation.json (and receipts) exist, but no ledger does.
// init keeps the manifest's store id and records what it found; it
// rewrites and deletes nothing (docs/adoption.md).
const (
	TypeStoreAdopted    = "store.adopted"
	TypeReceiptAdopted  = "receipt.adopted"
	TypeReceiptForeign  = "receipt.foreign"
	maxAdoptedHarnesses = 64
)

func init() {
	register[StoreAdopted](TypeStoreAdopted, 1, StoreStream)
	register[ReceiptAdopted](TypeReceiptAdopted, 1, HarnessPrefix)
	register[ReceiptForeign](TypeReceiptForeign, 1, HarnessPrefix)
}

// StoreAdopted records that the store adopted an existing activation
// manifest: the digest of its exact bytes, the store id it states (the
// store.initialized before it carries the same id), the CLI version that
// wrote it, its harness ids, and how many receipt files were found and how
// many of them passed verification. No path and no content.
type StoreAdopted struct {
	StoreID           string   `json:"store_id"`
	ManifestSHA256    string   `json:"manifest_sha256"`
	CLIVersion        string   `json:"cli_version"`
	Harnesses         []string `json:"harnesses"`
	ReceiptsFound     int      `json:"receipts_found"`
	ReceiptsVerified  int      `json:"receipts_verified"`
	ReceiptsUntrusted int      `json:"receipts_untrusted"`
}

// Check validates the store id, the digest and the counts.
func (p StoreAdopted) Check() error {
	switch {
	case !uuidV4(p.StoreID):
		return fmt.Errorf("store_id %q is not a hyphenated lowercase version-4 UUID", p.StoreID)
	case !isHex64(p.ManifestSHA256):
		return errors.New("manifest_sha256 is not 64 lowercase hex")
	case len(p.Harnesses) > maxAdoptedHarnesses:
		return errors.New("too many harnesses")
	case p.ReceiptsFound < 0 || p.ReceiptsVerified < 0 || p.ReceiptsUntrusted < 0 || p.ReceiptsVerified+p.ReceiptsUntrusted != p.ReceiptsFound:
		return errors.New("receipt counts do not add up")
	}
	return nil
}

// ReceiptAdopted is what adoption recorded, before issue 24, for a
// receipt file another writer left that passed the eight verification
// rules: the receipt as receipt.recorded states it (Path is the existing
// file, SHA256 its bytes), and a prove transition. It is no longer
// written (such a file is now receipt.foreign, ForeignOtherWriter) and, in
// the ledgers that hold it, proves nothing: a receipt this store's own
// preflight did not record is history, never proof (docs/adoption.md).
// Replay keeps its recorded transition and derives the lapse of the proof
// at once. The ledger did not create the file, so nothing removes it.
type ReceiptAdopted struct {
	Transition
	ReceiptRecorded
}

// Reasons a receipt file found at adoption proves nothing
// (receipt.foreign).
const (
	ForeignMalformed  = "malformed"  // not a receipt the strict decoder accepts
	ForeignMisplaced  = "misplaced"  // its directory or file name disagrees with its content
	ForeignIneligible = "ineligible" // valid, but the harness's adopted state cannot be proven by it
	// ForeignOtherWriter: it passes the eight rules, but another writer
	// (the Rust Tree Ring, or whoever made the clone) recorded it, not a
	// preflight of this store: history, never proof.
	ForeignOtherWriter = "other_writer"
	ForeignRulePrefix  = "rule_" // fails verification rule N: "rule_1" .. "rule_8"
)

// ReceiptForeign is a receipt file found at adoption, which proves
// nothing here, with the reason code. It is recorded only so that nothing ever removes
// it as a stray: the ledger did not create it.
type ReceiptForeign struct {
	HarnessID string `json:"harness_id"`
	ReceiptID string `json:"receipt_id"`
	Path      string `json:"path"`
	SHA256    string `json:"sha256"`
	Reason    string `json:"reason"`
}

// Check requires a known reason code.
func (p ReceiptForeign) Check() error {
	switch p.Reason {
	case ForeignMalformed, ForeignMisplaced, ForeignIneligible, ForeignOtherWriter:
		return nil
	}
	if n, ok := strings.CutPrefix(p.Reason, ForeignRulePrefix); ok && len(n) == 1 && n[0] >= '1' && n[0] <= '8' {
		return nil
	}
	return fmt.Errorf("reason %q is not a receipt.foreign reason", p.Reason)
}
