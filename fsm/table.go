// Package fsm is the harness state machine: one transition table over the
// protocol's nine states, used to decide new states (with looplab/fsm), to
// replay the ledger and to draw the diagrams. It is pure: no I/O, no clock
// (callers pass the instant).
package fsm

import (
	"context"
	"fmt"
	"sync"

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
func Valid(s State) bool { return stateIndex(s) >= 0 }

func stateIndex(s State) int {
	for i, v := range States {
		if v == s {
			return i
		}
	}
	return -1
}

// Proven reports whether s is a state that only a fresh receipt can hold.
func Proven(s State) bool { return s == Active || s == ActiveIsolated }

// Transition names: what happened to the harness. docs/fsm.md explains each.
const (
	Detect        = "detect"         // read-only discovery; never changes a state
	Publish       = "publish"        // bridge published (or exact user-added snippet recognized)
	RequireReview = "require_review" // publication would need mutation; review required
	RequireTrust  = "require_trust"  // the harness must grant its own trust first
	RequirePlugin = "require_plugin" // passive Agent Zero binding published; the plugin must prove it
	FindPlugin    = "find_plugin"    // a valid plugin descriptor appeared
	LosePlugin    = "lose_plugin"    // the plugin descriptor is gone or disabled
	Prove         = "prove"          // preflight succeeded against the canonical store
	ProveIsolated = "prove_isolated" // preflight succeeded against an isolated store
	Fail          = "fail"           // a concrete diagnostic
	LoseMount     = "lose_mount"     // the project root is unreachable
	Deactivate    = "deactivate"     // deactivation requested; nothing is removed
	Drift         = "drift"          // bridge bytes on disk changed
	Remove        = "remove"         // the user removed the reviewed bridge; back to the start
	Expire        = "expire"         // the newest receipt is 30 days old (derived, never appended)
)

// Transitions lists every transition name in the table's order.
var Transitions = []string{Detect, Publish, RequireReview, RequireTrust, RequirePlugin, FindPlugin, LosePlugin, Prove, ProveIsolated, Fail, LoseMount, Deactivate, Drift, Remove, Expire}

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

// selfLoops gives t a no-op row in every state: looplab keys rows by
// (name, source), so "stays where it is" needs one row per state.
func selfLoops(t string) lfsm.Events {
	out := make(lfsm.Events, len(States))
	for i, s := range States {
		out[i] = lfsm.EventDesc{Name: t, Src: []string{string(s)}, Dst: string(s)}
	}
	return out
}

// Table is the one transition table, in looplab's form: the rows Decide's
// machines are built from. Each row: a transition, the states it may leave,
// the state it enters. A row whose sources include its destination is an
// allowed no-op there (Decide returns the same state). docs/fsm.md explains
// every row; table_test.go pins every cell. Callers must not modify it.
func Table() lfsm.Events { return table() }

// table is built on first use, so that a command that decides no state
// change (version, recall, export) does not build it at start-up.
var table = sync.OnceValue(func() lfsm.Events {
	return append(selfLoops(Detect), lfsm.Events{
		{Name: Publish, Src: from(Unsupported, Failed, NeedsProjectMount, NeedsUserReview, ConfiguredAwaitingProof), Dst: string(ConfiguredAwaitingProof)},
		{Name: RequireReview, Src: all(), Dst: string(NeedsUserReview)},
		{Name: RequireTrust, Src: from(Unsupported, Failed, NeedsTrust, NeedsProjectMount, ConfiguredAwaitingProof, ActiveIsolated, Active), Dst: string(NeedsTrust)},
		{Name: RequirePlugin, Src: from(Unsupported, Failed, NeedsProjectMount, NeedsPlugin, NeedsUserReview), Dst: string(NeedsPlugin)},
		{Name: FindPlugin, Src: from(NeedsPlugin, ConfiguredAwaitingProof), Dst: string(ConfiguredAwaitingProof)},
		{Name: LosePlugin, Src: from(Failed, NeedsProjectMount, NeedsPlugin, ConfiguredAwaitingProof, ActiveIsolated, Active), Dst: string(NeedsPlugin)},
		{Name: Prove, Src: from(Failed, NeedsTrust, NeedsProjectMount, ConfiguredAwaitingProof, ActiveIsolated, Active), Dst: string(Active)},
		{Name: ProveIsolated, Src: from(Failed, NeedsTrust, NeedsProjectMount, ConfiguredAwaitingProof, ActiveIsolated, Active), Dst: string(ActiveIsolated)},
		{Name: Fail, Src: all(NeedsUserReview), Dst: string(Failed)},
		{Name: LoseMount, Src: all(Unsupported), Dst: string(NeedsProjectMount)},
		{Name: Deactivate, Src: all(Unsupported), Dst: string(NeedsUserReview)},
		{Name: Drift, Src: all(Unsupported), Dst: string(NeedsUserReview)},
		{Name: Remove, Src: from(NeedsUserReview), Dst: string(Unsupported)},
		{Name: Expire, Src: from(ActiveIsolated, Active), Dst: string(ConfiguredAwaitingProof)},
	}...)
})

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

// UnknownStateError is returned for a state outside the nine.
type UnknownStateError struct{ State State }

func (e *UnknownStateError) Error() string { return fmt.Sprintf("unknown state %q", e.State) }

// Decide returns the state after applying transition t in state cur. An
// allowed self-loop (a second successful preflight while active, detection
// in any state) is not an error: it returns cur. Decide is for writers
// deciding a new event; replay never calls it (history is not re-validated
// against today's table). Writers should pass the state at their instant
// (see StateAt), so that a receipt's expiry is taken into account.
//
// looplab decides every call: a machine built from Table() is set to cur
// and sent t (Event with context.Background()), and its answer and error
// are translated to this package's. Decide is safe for concurrent use (see
// machines).
func Decide(cur State, t string) (State, error) {
	if !Valid(cur) {
		return cur, &UnknownStateError{State: cur}
	}
	m := machines.Get().(*lfsm.FSM)
	m.SetState(string(cur))
	// looplab returns its errors as plain values, never wrapped.
	err := m.Event(context.Background(), t)
	switch e := err.(type) {
	case nil:
		to := State(m.Current())
		machines.Put(m)
		return to, nil
	case lfsm.NoTransitionError:
		if e.Err == nil { // an allowed self-loop
			machines.Put(m)
			return cur, nil
		}
	case lfsm.InvalidEventError:
		machines.Put(m)
		return cur, &IllegalTransitionError{From: cur, Transition: t}
	case lfsm.UnknownEventError:
		machines.Put(m)
		return cur, &UnknownTransitionError{Transition: t}
	}
	// Not expected without callbacks (InTransitionError, InternalError...):
	// the machine is dropped rather than reused in a state we did not put
	// it in.
	return cur, fmt.Errorf("decide %s from %s: %w", t, cur, err)
}

// machines holds looplab machines built from Table(). A looplab FSM is
// stateful (SetState, then Event: two locked steps, not one), so each
// Decide takes a machine for itself and returns it afterwards; a process
// builds one machine per goroutine deciding at the same time (a hook: one;
// a GC may drop an idle one, and the next call builds it again), not one
// per call (10–40 µs and 30 allocations each, docs/fsm.md).
// Without callbacks a machine is never left "in transition" (looplab issue
// #115): Event returns with the transition done or refused, and SetState
// overwrites whatever the previous caller left.
var machines = sync.Pool{New: func() any { return lfsm.NewFSM(string(Initial), Table(), nil) }}

// Edge is one allowed cell of the table: From --Transition--> To.
type Edge struct {
	From, To   State
	Transition string
}

// Edges lists every allowed (state, transition) cell, sorted by source
// state (protocol order), then destination, then transition name.
func Edges() []Edge {
	var out []Edge
	for _, row := range Table() {
		for _, s := range row.Src {
			out = append(out, Edge{From: State(s), To: State(row.Dst), Transition: row.Name})
		}
	}
	sortEdges(out)
	return out
}
