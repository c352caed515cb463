package activation

import (
	"fmt"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/fsm"
)

// Next-step strings shared with the status command; they match the Rust
// implementation's wording for output parity.
const (
	NextActive         = "No action required for the receipt-backed session."
	NextActiveIsolated = "Bind the harness to this project's canonical store before claiming shared use."
	NextNeedsPlugin    = "Install or enable the compatible separate tree_ring_memory Agent Zero plugin."
	NextUnsupported    = "Author and register a native harness adapter before claiming Tree Ring activation."
	NextPlan           = "Apply the reviewed bridge plan, then complete adapter-specific preflight and receipt verification."
	NextStale          = "The installed adapter definition is out of date. Run `tree-ring integrations reconcile` to see the files and Tree Ring block the current definition rewrites, then `tree-ring integrations reconcile --apply` to rewrite them (only while they hold the bytes Tree Ring recorded; nothing outside a Tree Ring block is touched); preserve the memory database."
	NextFailed         = "Inspect the harness's preflight diagnostic, repair it, then run a new harness session."
	NextMount          = "Make the canonical project root reachable from the harness runtime, then start a new session."
)

// NextFailedWith is the step of a harness whose last preflight failed
// with diagnostic code (a bounded code, never error text).
func NextFailedWith(a *adapters.Adapter, code string) string {
	return "The last preflight failed (diagnostic " + code + "; `tree-ring runs` lists the failed run). Repair the cause, then open a new " +
		a.Name + " session: a successful preflight clears it."
}

// NextReview is the creation-only review sentence for harness id.
func NextReview(id string) string {
	return "Tree Ring will not replace or remove an existing " + id + " bridge entry; review and reconcile it before retrying."
}

// NextAwaitingProof is the step of a harness whose bridge is in place
// without proof: the harness itself must run it. (The Rust
// implementation's "Run the adapter preflight ..." read as an invitation
// to run `integrations preflight` by hand, which proves nothing about the
// harness.)
func NextAwaitingProof(name string) string {
	return "Open a new " + name + " session: its bridge runs the preflight and records the receipt. Then check `tree-ring integrations status --verbose`."
}

// NextNotProof is the step of a harness whose receipts came from another
// store or machine (adopted, or brought by an events import): they are
// history, and a session here proves it.
func NextNotProof(name string) string {
	return "Receipts from another store or machine are not proof; open a new " + name + " session: its bridge runs the preflight here and records the receipt. Then check `tree-ring integrations status --verbose`."
}

// NextAfterActivate is the step after a successful activate or link without
// a receipt: prove it in a new session, then check status.
func NextAfterActivate(name string) string {
	return "Open a new " + name + " session so its preflight runs, then check `tree-ring integrations status --verbose` for the receipt."
}

// NextTrust is the step of a harness behind a trust gate Tree Ring cannot
// read: trust is the user's decision in the host itself.
func NextTrust(name string) string {
	return "Trust this project in " + name + " itself (Tree Ring never changes " + name + "'s trust settings), then open a new " + name + " session and check `tree-ring integrations status --verbose`."
}

// NextFor is the next step for a harness resting in state s, for a status
// listing (init) or after activate/link (afterActivate).
func NextFor(a *adapters.Adapter, s fsm.State, afterActivate bool) string {
	switch s {
	case fsm.Active:
		return NextActive
	case fsm.ActiveIsolated:
		return NextActiveIsolated
	case fsm.ConfiguredAwaitingProof:
		if afterActivate {
			return NextAfterActivate(a.Name)
		}
		return NextAwaitingProof(a.Name)
	case fsm.NeedsTrust:
		if a.TrustStep != nil {
			// Not read live here: the step that covers every host release.
			return a.TrustStep(adapters.GateUnknown)
		}
		return NextTrust(a.Name)
	case fsm.NeedsPlugin:
		return NextNeedsPlugin
	case fsm.Failed:
		return NextFailed
	case fsm.NeedsProjectMount:
		return NextMount
	case fsm.NeedsUserReview:
		return NextReview(a.ID)
	}
	if a.Publishes() {
		// A native adapter back at the start (its deactivation finished).
		return NextActivate(a.ID)
	}
	return NextGuidance(a)
}

// NextGuidance is the step of a harness without a native adapter: the
// published sentence and, for a guidance-only adapter, what would make it
// native.
func NextGuidance(a *adapters.Adapter) string {
	if a.NativeGap == "" {
		return NextUnsupported
	}
	return NextUnsupported + " " + a.NativeGap
}

func settledNext(o *Outcome, c Command) string {
	if o.State == fsm.NeedsUserReview {
		return reviewNext(o)
	}
	next := NextFor(o.Adapter, o.State, c == Activate)
	if o.State == fsm.ConfiguredAwaitingProof && o.Adapter.TrustStep != nil {
		// Publication cannot see the host's trust decision (status reads
		// it); say what the host needs before its hooks run at all.
		next += " Until " + o.Adapter.Name + " trusts this folder it skips the project's hooks. " + o.Adapter.TrustStep(adapters.TrustUnknown)
	}
	return next
}

func retryCommand(o *Outcome) string {
	cmd := "tree-ring integrations activate --harness " + o.Adapter.ID
	if o.planned() {
		// The manifest holds the planned record as needs-user-review:
		// publishing changes its state there, which only reconcile may.
		cmd = "tree-ring integrations reconcile --apply --harness " + o.Adapter.ID
	}
	for _, t := range o.Adapter.ManagedBlocks {
		if t.Format == adapters.MarkdownBlock {
			for _, p := range o.Paths {
				if p == t.Path {
					return cmd + " --accept-managed-block"
				}
			}
		}
	}
	return cmd
}

// reviewNext explains a review: the creation-only sentence, what is in the
// way (never file content), and the exact snippet to add by hand when
// adding it resolves the review.
func reviewNext(o *Outcome) string {
	if o.Reason == adapters.ReasonAdapterChanged {
		return staleNext(o)
	}
	l := &stepLines{said: map[string]bool{}}
	l.b.WriteString(NextReview(o.Adapter.ID))
	retry := retryCommand(o)
	if !reasonStep(l, o, retry) {
		snippetLines(l, o, findingLines(l, o), retry)
	}
	return l.b.String()
}

// staleNext is the step of an out-of-date definition: reconcile rewrites
// it, unless what Tree Ring wrote was changed since.
func staleNext(o *Outcome) string {
	if len(o.stuck) == 0 {
		return NextStale
	}
	return "The installed adapter definition is out of date, and Tree Ring does not find the bytes it recorded in " + strings.Join(o.stuck, ", ") +
		" (changed since it wrote them, or an older definition's handler entries in your own settings file, which it never rewrites). " +
		"Restore Tree Ring's bytes there and run `tree-ring integrations reconcile --apply` again, or run `tree-ring integrations deactivate --harness " + o.Adapter.ID +
		"`, follow its steps, then `tree-ring integrations activate --harness " + o.Adapter.ID + "` (it names the exact entries to merge)."
}

// stepLines is a next step built line by line, each line once.
type stepLines struct {
	b    strings.Builder
	said map[string]bool
}

func (l *stepLines) line(format string, args ...any) {
	if s := fmt.Sprintf(format, args...); !l.said[s] {
		l.said[s] = true
		l.b.WriteString("\n" + s)
	}
}

// reasonStep adds the step of a review whose reason alone says what to do,
// and reports whether it did.
func reasonStep(l *stepLines, o *Outcome, retry string) bool {
	a := o.Adapter
	switch o.Reason {
	case adapters.ReasonDeactivation:
		deactivationNext(o, l.line)
	case adapters.ReasonUnaccepted:
		l.line("%s holds the Tree Ring block, in a file Tree Ring did not create. Adopt it as Tree Ring-managed with `%s`.", strings.Join(o.Paths, ", "), retry)
	case adapters.ReasonManifest:
		l.line("%s already exists and would need a different %s record; init and activate never rewrite it. Run `tree-ring integrations reconcile --harness %s` to see the change, then the same with `--apply` to make it (recorded, with the previous digest).", adapters.ManifestPath, a.ID, a.ID)
	case adapters.ReasonForeignProgram, adapters.ReasonForeignGuidance:
		// Its repair is init (which installs Tree Ring's file), never
		// activate: the findings' details are the whole step.
		var guidance []adapters.Finding
		for _, f := range o.findings {
			switch f.Reason {
			case adapters.ReasonForeignProgram:
				l.line("%s", f.Detail)
			case adapters.ReasonForeignGuidance:
				guidance = append(guidance, f)
			}
		}
		if len(guidance) > 0 {
			l.line("%s", GuidanceNext(guidance))
		}
	case ReasonForeignHooks:
		l.line("%s", NextForeignHooks(a.ID, strings.Join(o.Paths, ", ")))
	case adapters.ReasonDurability:
		l.line("Publication durability is indeterminate for: %s. Nothing was rolled back; check those files, then run `%s`.", strings.Join(o.Paths, ", "), retry)
	default:
		return false
	}
	return true
}

// findingLines adds what is in the way, finding by finding, and returns
// the conflicting blocks whose snippet resolves the review.
func findingLines(l *stepLines, o *Outcome) []adapters.Finding {
	var snippets []adapters.Finding
	for _, f := range o.findings {
		if f.State == adapters.PathMatch {
			continue
		}
		if f.Detail != "" {
			l.line("%s", f.Detail)
		} else if f.State == adapters.PathAbsent && settled(o.From) {
			l.line("%s is missing.", f.Path)
		}
		if f.Block != nil && f.State == adapters.PathConflict && f.Reason != adapters.ReasonMalformed && f.Reason != adapters.ReasonSymlink && f.Reason != adapters.ReasonNotRegular {
			snippets = append(snippets, f)
		}
	}
	return snippets
}

// snippetLines ends the step with the exact text to paste (one retry
// covers them all), or with the retry alone when there is none.
func snippetLines(l *stepLines, o *Outcome, snippets []adapters.Finding, retry string) {
	a := o.Adapter
	if len(snippets) == 0 {
		l.line("Reconcile %s, then run `%s`.", strings.Join(o.Paths, ", "), retry)
		return
	}
	l.line("After the retry below, `tree-ring integrations status --verbose` shows %s %s (or %s's trust step) until a new %s session proves it.",
		a.ID, fsm.ConfiguredAwaitingProof, a.Name, a.Name)
	then := ", then run `" + retry + "`"
	if len(snippets) > 1 {
		l.line("Make all of these changes by hand%s:", then)
		then = ""
	}
	for _, f := range snippets {
		sn, text := f.Block, strings.TrimSuffix(f.Block.Snippet, "\n")
		switch {
		case sn.Format.HookSettings():
			l.line("Merge these entries into %s by hand (append each entry to hooks.<Event>, keeping your own)%s:\n%s", sn.Path, then, text)
		case f.Reason == adapters.ReasonBlockChanged || f.Reason == adapters.ReasonMarkers:
			l.line("Make the Tree Ring block in %s exactly this (one begin and one end marker, each on its own line)%s:\n%s", sn.Path, then, text)
		default:
			l.line("Add exactly this block to %s by hand (it may sit anywhere, on its own lines)%s:\n%s", sn.Path, then, text)
		}
	}
}

var entryCount = map[int]string{2: "two", 4: "four"}

// describeOwned names what rec holds at path p: the whole file, Tree
// Ring's handler entries in it, or its Markdown block.
func describeOwned(a *adapters.Adapter, rec adapters.Record, p string) string {
	for _, b := range rec.ManagedBlocks {
		for _, t := range a.ManagedBlocks {
			if b.Path != p || t.Path != p || t.BlockID != b.BlockID {
				continue
			}
			if t.Format.HookSettings() {
				return "Tree Ring's " + entryCount[t.Format.Entries()] + " handler entries in " + p
			}
			return "the Tree Ring block in " + p
		}
	}
	return p
}

// deactivationNext is the step of a requested deactivation: what the user
// removes by hand (Tree Ring's entries in their own files, owned files
// they changed) and the reconcile that removes the rest and records it.
func deactivationNext(o *Outcome, line func(string, ...any)) {
	a := o.Adapter
	reconcile := "tree-ring integrations reconcile --harness " + a.ID
	keep := "To keep it instead, run `tree-ring integrations activate --harness " + a.ID + "`."
	var byHand, files []string
	for _, p := range o.Paths {
		if d := describeOwned(a, o.oldRecord, p); d != p {
			byHand = append(byHand, d)
		} else {
			files = append(files, p)
		}
	}
	switch {
	case o.gone || len(o.Paths) == 0:
		line("Nothing Tree Ring published for %s is left on disk. Run `%s --apply` to record the deactivation. %s", a.Name, reconcile, keep)
	case len(byHand) > 0:
		line("To finish deactivating %s, remove by hand (Tree Ring never edits your files): %s. Then run `%s --apply`: it removes the files Tree Ring created while they hold the bytes it published (%s), and records the deactivation. %s",
			a.Name, strings.Join(byHand, "; "), reconcile, pathsOrNone(files), keep)
	default:
		line("To finish deactivating %s, run `%s --apply`: it removes the files Tree Ring created while they hold the bytes it published (%s), and records the deactivation; files you changed are left for you to remove. %s",
			a.Name, reconcile, strings.Join(files, ", "), keep)
	}
}

func pathsOrNone(ps []string) string {
	if len(ps) == 0 {
		return "none left"
	}
	return strings.Join(ps, ", ")
}
