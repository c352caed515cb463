// Package fsm is the harness state machine: one transition table over the
// protocol's nine states, used to decide new states (with looplab/fsm), to
// replay the ledger and to draw the diagrams. It is pure: no I/O.
package fsm

import (
	"context"
	"errors"
	"fmt"

	lfsm "github.com/looplab/fsm"
)

// State is one of the protocol's nine activation states.
type State string

// The nine states, exactly as the protocol spells them.
const (
	Unsupported             State = "unsupported"
	Failed                  State = "failed"
	NeedsTrust              State = "needs-trust"
	NeedsProjectMount       State = "needs-project-mount"
	NeedsPlugin             State = "needs-plugin"
	NeedsUserReview         State = "needs-user-review"
	ConfiguredAwaitingProof State = "configured-awaiting-proof"
	ActiveIsolated          State = "active-isolated"
	Active                  State = "active"
)

// States lists the nine states in the protocol's order.
var States = []State{Unsupported, Failed, NeedsTrust, NeedsProjectMount, NeedsPlugin, NeedsUserReview, ConfiguredAwaitingProof, ActiveIsolated, Active}

// Initial is the state of a harness with no events.
const Initial = Unsupported

// Valid reports whether s is one of the nine states.
func Valid(s State) bool {
	for _, v := range States {
		if v == s {
			return true
		}
	}
	return false
}

// Transition names: what happened to the harness.
const (
	Publish       = "publish"        // bridge published (or exact user-added snippet recognized)
	RequireReview = "require_review" // publication would need mutation; review required
	RequireTrust  = "require_trust"  // the harness must grant its own trust first
	RequirePlugin = "require_plugin" // passive binding without a valid plugin descriptor
	FindPlugin    = "find_plugin"    // a valid plugin descriptor appeared
	LosePlugin    = "lose_plugin"    // the plugin descriptor is gone or disabled
	Prove         = "prove"          // preflight succeeded against the canonical store
	ProveIsolated = "prove_isolated" // preflight succeeded against an isolated store
	Fail          = "fail"           // a concrete diagnostic
	LoseMount     = "lose_mount"     // the project root is unreachable
	Deactivate    = "deactivate"     // deactivation requested; nothing is removed
	Drift         = "drift"          // bridge bytes on disk changed
	Expire        = "expire"         // the newest receipt is older than 30 days (derived, never appended)
)

func all(except ...State) []string {
	var out []string
next:
	for _, s := range States {
		for _, e := range except {
			if s == e {
				continue next
			}
		}
		out = append(out, string(s))
	}
	return out
}

func from(ss ...State) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// Table is the one transition table. Each row: a transition, the states it
// may leave, the state it enters. docs/fsm.md explains every row.
var Table = lfsm.Events{
	{Name: Publish, Src: from(Unsupported, Failed, NeedsUserReview, NeedsProjectMount), Dst: string(ConfiguredAwaitingProof)},
	{Name: RequireReview, Src: all(NeedsUserReview), Dst: string(NeedsUserReview)},
	{Name: RequireTrust, Src: from(Unsupported, ConfiguredAwaitingProof, Failed, NeedsProjectMount), Dst: string(NeedsTrust)},
	{Name: RequirePlugin, Src: from(Unsupported, Failed, NeedsProjectMount), Dst: string(NeedsPlugin)},
	{Name: FindPlugin, Src: from(NeedsPlugin), Dst: string(ConfiguredAwaitingProof)},
	{Name: LosePlugin, Src: from(ConfiguredAwaitingProof, Active, ActiveIsolated, Failed), Dst: string(NeedsPlugin)},
	{Name: Prove, Src: from(ConfiguredAwaitingProof, NeedsTrust, ActiveIsolated), Dst: string(Active)},
	{Name: ProveIsolated, Src: from(ConfiguredAwaitingProof, NeedsTrust, Active), Dst: string(ActiveIsolated)},
	{Name: Fail, Src: from(ConfiguredAwaitingProof, NeedsTrust, NeedsPlugin, Active, ActiveIsolated), Dst: string(Failed)},
	{Name: LoseMount, Src: all(NeedsProjectMount, Unsupported), Dst: string(NeedsProjectMount)},
	{Name: Deactivate, Src: from(ConfiguredAwaitingProof, Active, ActiveIsolated, NeedsTrust, NeedsPlugin, Failed), Dst: string(NeedsUserReview)},
	{Name: Drift, Src: from(ConfiguredAwaitingProof, Active, ActiveIsolated, NeedsTrust), Dst: string(NeedsUserReview)},
	{Name: Expire, Src: from(Active, ActiveIsolated), Dst: string(ConfiguredAwaitingProof)},
}

// IllegalTransitionError is returned when a transition is not allowed from
// the current state.
type IllegalTransitionError struct {
	From       State
	Transition string
}

func (e *IllegalTransitionError) Error() string {
	return fmt.Sprintf("transition %s is not allowed from state %s", e.Transition, e.From)
}

// UnknownTransitionError is returned for a name outside the table.
type UnknownTransitionError struct{ Transition string }

func (e *UnknownTransitionError) Error() string {
	return fmt.Sprintf("unknown transition %q", e.Transition)
}

// Decide returns the state after applying transition t in state cur. A
// transition that leaves the state unchanged (the same state again, such as
// a second successful preflight while active) is not an error: it returns
// cur. Each call uses a fresh FSM and context.Background(), so no shared
// machine can be left "in transition" (looplab/fsm issue #115).
func Decide(cur State, t string) (State, error) {
	if !Valid(cur) {
		return cur, fmt.Errorf("unknown state %q", cur)
	}
	if Idempotent(cur, t) {
		return cur, nil
	}
	m := lfsm.NewFSM(string(cur), Table, nil)
	err := m.Event(context.Background(), t)
	var inv lfsm.InvalidEventError
	var unk lfsm.UnknownEventError
	var nt lfsm.NoTransitionError
	switch {
	case err == nil:
		return State(m.Current()), nil
	case errors.As(err, &nt) && nt.Err == nil:
		return cur, nil
	case errors.As(err, &inv):
		return cur, &IllegalTransitionError{From: cur, Transition: t}
	case errors.As(err, &unk):
		return cur, &UnknownTransitionError{Transition: t}
	default:
		return cur, fmt.Errorf("decide %s from %s: %w", t, cur, err)
	}
}

// Idempotent reports whether t repeated in the state it leads to is a no-op
// (for example prove while already active): the table lists each
// transition's destination, and a self-loop is never an error.
func Idempotent(cur State, t string) bool {
	for _, row := range Table {
		if row.Name == t {
			return row.Dst == string(cur)
		}
	}
	return false
}
