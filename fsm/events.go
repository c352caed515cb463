package fsm

import (
	"fmt"
	"strings"

	"github.com/tree-ring/tree-ring/events"
)

// TransitionOf names the transition an event of type eventType records.
// payload is the decoded payload (as events.DecodePayload returns it) or
// nil; it disambiguates the two event types that carry two transitions:
// bridge.published to needs-plugin is require_plugin (the passive Agent Zero
// binding), otherwise publish; preflight.succeeded to active-isolated is
// prove_isolated, otherwise prove. ok is false for events that move no
// harness (preflight.started, receipt.recorded, receipt.pruned and every
// non-harness type). Expire has no event: it is derived by replay.
func TransitionOf(eventType string, payload any) (string, bool) {
	var to State
	if t, ok := events.Moves(payload); ok {
		to = State(t.To)
	}
	return transitionName(eventType, to)
}

func transitionName(eventType string, to State) (string, bool) {
	switch eventType {
	case events.TypeHarnessDetected:
		return Detect, true
	case events.TypeBridgePublished:
		if to == NeedsPlugin {
			return RequirePlugin, true
		}
		return Publish, true
	case events.TypePublicationReviewRequired:
		return RequireReview, true
	case events.TypeTrustRequired:
		return RequireTrust, true
	case events.TypePluginDescriptorFound:
		return FindPlugin, true
	case events.TypePluginDescriptorLost:
		return LosePlugin, true
	case events.TypePreflightSucceeded, events.TypeReceiptAdopted:
		if to == ActiveIsolated {
			return ProveIsolated, true
		}
		return Prove, true
	case events.TypePreflightFailed:
		return Fail, true
	case events.TypeProjectUnreachable:
		return LoseMount, true
	case events.TypeHarnessDeactivationRequested:
		return Deactivate, true
	case events.TypeBridgeDriftDetected:
		return Drift, true
	case events.TypeHarnessDeactivated:
		return Remove, true
	}
	return "", false
}

// EventTypesOf lists the event types that record transition t (none for
// Expire, which is derived).
func EventTypesOf(t string) []string {
	var out []string
	for _, typ := range events.Types() {
		if name, ok := TransitionOf(typ, nil); ok && name == t {
			out = append(out, typ)
		}
	}
	switch t {
	case RequirePlugin:
		out = append(out, events.TypeBridgePublished)
	case ProveIsolated:
		out = append(out, events.TypePreflightSucceeded, events.TypeReceiptAdopted)
	}
	return out
}

// harnessOf returns the harness_id a harness payload names, if any.
func harnessOf(p any) (string, bool) {
	switch p := p.(type) {
	case *events.HarnessDetected:
		return p.HarnessID, true
	case *events.BridgePlanned:
		return p.HarnessID, true
	case *events.BridgePublished:
		return p.HarnessID, true
	case *events.PublicationReviewRequired:
		return p.HarnessID, true
	case *events.HarnessDeactivationRequested:
		return p.HarnessID, true
	case *events.HarnessDeactivated:
		return p.HarnessID, true
	case *events.BridgeDriftDetected:
		return p.HarnessID, true
	case *events.PluginDescriptorFound:
		return p.HarnessID, true
	case *events.PluginDescriptorLost:
		return p.HarnessID, true
	case *events.TrustRequired:
		return p.HarnessID, true
	case *events.ProjectUnreachable:
		return p.HarnessID, true
	case *events.PreflightStarted:
		return p.HarnessID, true
	case *events.PreflightSucceeded:
		return p.HarnessID, true
	case *events.PreflightFailed:
		return p.HarnessID, true
	case *events.ReceiptRecorded:
		return p.HarnessID, true
	case *events.ReceiptPruned:
		return p.HarnessID, true
	case *events.ReceiptAdopted:
		return p.HarnessID, true
	case *events.ReceiptForeign:
		return p.HarnessID, true
	case *events.ProofRevoked:
		return p.HarnessID, true
	}
	return "", false
}

// reason is the short, privacy-safe explanation of an event: codes, ids,
// digests (shortened), counts. Payloads never hold prompts or memory text;
// free-form codes are cleaned and bounded anyway, since they are printed.
func reason(p any) string {
	switch p := p.(type) {
	case *events.HarnessDetected:
		return fmt.Sprintf("%s adapter %s", clean(p.Capability), clean(p.AdapterVersion))
	case *events.BridgePublished:
		s := fmt.Sprintf("bridge %s, %s changed", short(p.BridgeFingerprint), paths(len(p.ChangedPaths)))
		if p.Recognized {
			s += ", user snippet recognized"
		}
		return s
	case *events.PublicationReviewRequired:
		return fmt.Sprintf("reason %s, %s", clean(p.Reason), paths(len(p.Paths)))
	case *events.HarnessDeactivationRequested:
		return paths(len(p.Paths)) + " kept for review"
	case *events.HarnessDeactivated:
		return "bridge removed by the user"
	case *events.BridgeDriftDetected:
		return paths(len(p.Paths)) + " changed on disk"
	case *events.PluginDescriptorFound:
		return "plugin " + clean(p.PluginVersion)
	case *events.PluginDescriptorLost:
		return "reason " + clean(p.Reason)
	case *events.TrustRequired:
		return "the harness must grant trust"
	case *events.ProjectUnreachable:
		return "reason " + clean(p.Reason)
	case *events.PreflightStarted:
		return "worker " + short(p.WorkerKeyFingerprint)
	case *events.PreflightSucceeded:
		return fmt.Sprintf("receipt %s, worker %s, %s, %d results", clean(p.ReceiptID), short(p.WorkerKeyFingerprint), clean(p.QueryClass), p.ResultCount)
	case *events.PreflightFailed:
		return "reason " + clean(p.Reason)
	case *events.ReceiptRecorded:
		return fmt.Sprintf("receipt %s, worker %s, %s %s, %s, %d results", clean(p.ReceiptID), short(p.WorkerKeyFingerprint), clean(p.Status), clean(p.State), clean(p.QueryClass), p.ResultCount)
	case *events.ReceiptPruned:
		return fmt.Sprintf("receipt %s, reason %s", clean(p.ReceiptID), clean(p.Reason))
	case *events.ReceiptAdopted:
		return fmt.Sprintf("adopted receipt %s of %s (not proof here), worker %s, %s, %d results", clean(p.ReceiptID), clean(p.RecordedAt), short(p.WorkerKeyFingerprint), clean(p.QueryClass), p.ResultCount)
	case *events.ReceiptForeign:
		return fmt.Sprintf("untrusted receipt file %s kept, reason %s", clean(p.ReceiptID), clean(p.Reason))
	case *events.ProofRevoked:
		return fmt.Sprintf("receipts up to %s revoked, reason %s", clean(p.ReceiptID), clean(p.Reason))
	}
	return ""
}

func paths(n int) string {
	if n == 1 {
		return "1 path"
	}
	return fmt.Sprintf("%d paths", n)
}

// short shortens a digest or fingerprint for display.
func short(h string) string {
	h = clean(h)
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Printable is clean for callers that print other payload strings (receipt
// ids, fingerprints) next to a Reason.
func Printable(s string) string { return clean(s) }

// maxReasonField bounds one free-form field in a reason, in runes.
const maxReasonField = 64

// clean keeps a payload string printable on one line: control characters
// become '?', and it is cut at maxReasonField runes.
func clean(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == maxReasonField {
			b.WriteString("…")
			break
		}
		if r < 0x20 || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
