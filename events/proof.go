package events

import "fmt"

// TypeProofRevoked records that the receipts a harness stream holds up to
// this event were not made on this machine: an `events import` brought
// them (a restore of this store's export onto another machine or
// checkout re-materializes their files). They stay history, and prove
// nothing from here on: the harness is configured-awaiting-proof until a
// preflight run here records a new receipt (docs/adoption.md, "What counts
// as proof"). It moves no harness; like the prune of the newest receipt,
// it leaves a proven state without proof, and replay derives the expiry.
const TypeProofRevoked = "harness.proof_revoked"

// ProofRevokedRestored is the one reason: receipts imported by `events
// import`.
const ProofRevokedRestored = "restored"

func init() { register[ProofRevoked](TypeProofRevoked, 1, HarnessPrefix) }

// ProofRevoked names the harness, why its receipts no longer prove, and
// the newest receipt it revokes (its id only: no path, no content).
type ProofRevoked struct {
	HarnessID string `json:"harness_id"`
	Reason    string `json:"reason"`
	ReceiptID string `json:"receipt_id,omitempty"`
}

// Check requires a known reason.
func (p ProofRevoked) Check() error {
	if p.Reason != ProofRevokedRestored {
		return fmt.Errorf("reason %q is not a harness.proof_revoked reason", p.Reason)
	}
	return nil
}
