package activation

import (
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

// HarnessProof is a harness's state at the end of an events import and
// the newest receipt proving it (as the receipt index holds them).
type HarnessProof struct {
	ID     string
	State  fsm.State
	Newest string // receipt id; "" when none
}

// RevokeRestored is what an `events import` records after it lands: for
// every harness left proven by a receipt the import file carries
// (imported: the receipt ids of its preflight.succeeded and
// receipt.recorded events), harness.proof_revoked. Those receipts came in
// an export (a restore on another machine or checkout re-materializes
// their files), so they are history, not this machine's proof; the
// harness waits for a preflight here (docs/adoption.md). An import cannot
// tell an export taken here from one taken on a copy, so importing a file
// that holds the current proof revokes it too; a harness proven by a
// receipt the file does not carry, or already waiting, gets nothing (a
// second import of the same file records nothing, and the same command
// run again after a crash between the import and this commit records it).
func RevokeRestored(hs []HarnessProof, imported map[string]bool) []Pending {
	var out []Pending
	for _, h := range hs {
		if !fsm.Proven(h.State) || !imported[h.Newest] {
			continue
		}
		out = append(out, Pending{Stream: events.HarnessStream(h.ID), Type: events.TypeProofRevoked,
			Payload: &events.ProofRevoked{HarnessID: h.ID, Reason: events.ProofRevokedRestored, ReceiptID: h.Newest}})
	}
	return out
}

// ImportedProofs is the set of receipt ids envs' proof events carry
// (preflight.succeeded, receipt.recorded); a payload that does not decode
// is left out (the import refuses it before this is asked).
func ImportedProofs(envs []events.Envelope) map[string]bool {
	ids := map[string]bool{}
	for i := range envs {
		if envs[i].Type != events.TypePreflightSucceeded && envs[i].Type != events.TypeReceiptRecorded {
			continue
		}
		switch p, _ := events.DecodePayload(&envs[i]); p := p.(type) {
		case *events.PreflightSucceeded:
			ids[p.ReceiptID] = true
		case *events.ReceiptRecorded:
			ids[p.ReceiptID] = true
		}
	}
	return ids
}
