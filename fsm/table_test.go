package fsm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	lfsm "github.com/looplab/fsm"
	"github.com/tree-ring/tree-ring/events"
)

// abbrev names the states in the matrix below.
var abbrev = map[string]State{
	"U": Unsupported, "F": Failed, "T": NeedsTrust, "M": NeedsProjectMount, "P": NeedsPlugin,
	"R": NeedsUserReview, "C": ConfiguredAwaitingProof, "I": ActiveIsolated, "A": Active,
}

// matrix is the table written out a second time, by hand, cell by cell:
// "S>D" means the transition is allowed from S and leads to D. Every cell
// not listed must be refused. Changing fsm.Table without changing this (and
// docs/fsm.md) fails TestEveryCell.
var matrix = map[string]string{
	Detect:        "U>U F>F T>T M>M P>P R>R C>C I>I A>A",
	Publish:       "U>C F>C M>C R>C C>C",
	RequireReview: "U>R F>R T>R M>R P>R R>R C>R I>R A>R",
	RequireTrust:  "U>T F>T T>T M>T C>T I>T A>T",
	RequirePlugin: "U>P F>P M>P P>P R>P",
	FindPlugin:    "P>C C>C",
	LosePlugin:    "F>P M>P P>P C>P I>P A>P",
	Prove:         "F>A T>A M>A C>A I>A A>A",
	ProveIsolated: "F>I T>I M>I C>I I>I A>I",
	Fail:          "U>F F>F T>F M>F P>F C>F I>F A>F",
	LoseMount:     "F>M T>M M>M P>M R>M C>M I>M A>M",
	Deactivate:    "F>R T>R M>R P>R R>R C>R I>R A>R",
	Drift:         "F>R T>R M>R P>R R>R C>R I>R A>R",
	Remove:        "R>U",
	Expire:        "I>C A>C",
}

func TestEveryCell(t *testing.T) {
	if len(matrix) != len(Transitions) {
		t.Fatalf("matrix has %d transitions, Transitions %d", len(matrix), len(Transitions))
	}
	cells := 0
	for _, tr := range Transitions {
		want := map[State]State{}
		for _, cell := range strings.Fields(matrix[tr]) {
			s, d, _ := strings.Cut(cell, ">")
			want[abbrev[s]] = abbrev[d]
		}
		for _, cur := range States {
			cells++
			got, err := Decide(cur, tr)
			dst, allowed := want[cur]
			switch {
			case allowed && err != nil:
				t.Errorf("%s from %s: want %s, got error %v", tr, cur, dst, err)
			case allowed && got != dst:
				t.Errorf("%s from %s: want %s, got %s", tr, cur, dst, got)
			case !allowed:
				var ill *IllegalTransitionError
				if !errors.As(err, &ill) || ill.From != cur || ill.Transition != tr {
					t.Errorf("%s from %s: want *IllegalTransitionError, got %s, %v", tr, cur, got, err)
				}
				if got != cur {
					t.Errorf("%s from %s refused but returned %s, want the unchanged state", tr, cur, got)
				}
			}
		}
	}
	if cells != 9*15 {
		t.Fatalf("visited %d cells", cells)
	}
	// Edges (what the diagrams draw) lists exactly the allowed cells, each
	// as Decide answers it.
	n := 0
	for _, tr := range Transitions {
		n += len(strings.Fields(matrix[tr]))
	}
	if len(Edges()) != n {
		t.Errorf("Edges() has %d cells, matrix %d", len(Edges()), n)
	}
	for _, e := range Edges() {
		if got, err := Decide(e.From, e.Transition); err != nil || got != e.To {
			t.Errorf("edge %s --%s--> %s, Decide gives %s, %v", e.From, e.Transition, e.To, got, err)
		}
	}
}

func TestDecideErrors(t *testing.T) {
	var unk *UnknownTransitionError
	if _, err := Decide(Active, "teleport"); !errors.As(err, &unk) || unk.Transition != "teleport" {
		t.Errorf("unknown transition: %v", err)
	}
	var us *UnknownStateError
	if _, err := Decide("activ", Prove); !errors.As(err, &us) || us.State != "activ" {
		t.Errorf("unknown state: %v", err)
	}
	// Decide must not share a machine between calls: a refused cell does not
	// poison the next decision.
	if _, err := Decide(Unsupported, Prove); err == nil {
		t.Fatal("prove from unsupported allowed")
	}
	if got, err := Decide(ConfiguredAwaitingProof, Prove); err != nil || got != Active {
		t.Fatalf("after a refusal: %s %v", got, err)
	}
}

func TestStatesAndTable(t *testing.T) {
	want := "unsupported failed needs-trust needs-project-mount needs-plugin needs-user-review configured-awaiting-proof active-isolated active"
	var got []string
	for _, s := range States {
		got = append(got, string(s))
	}
	if strings.Join(got, " ") != want {
		t.Fatalf("states: %v", got)
	}
	if Valid("") || Valid("Active") || !Valid(Active) {
		t.Fatal("Valid")
	}
	// Every row's names and states belong to the table's vocabulary.
	names := map[string]bool{}
	for _, tr := range Transitions {
		names[tr] = true
	}
	for _, row := range Table() {
		if !names[row.Name] || !Valid(State(row.Dst)) {
			t.Errorf("row %+v outside the vocabulary", row)
		}
		for _, s := range row.Src {
			if !Valid(State(s)) {
				t.Errorf("row %s: source %q", row.Name, s)
			}
		}
	}
}

func TestTransitionOf(t *testing.T) {
	tr := func(from, to State) events.Transition { return events.Transition{From: string(from), To: string(to)} }
	cases := []struct {
		typ     string
		payload any
		want    string
	}{
		{events.TypeHarnessDetected, &events.HarnessDetected{Transition: tr(Unsupported, Unsupported)}, Detect},
		{events.TypeBridgePublished, &events.BridgePublished{Transition: tr(Unsupported, ConfiguredAwaitingProof)}, Publish},
		{events.TypeBridgePublished, &events.BridgePublished{Transition: tr(Unsupported, NeedsPlugin)}, RequirePlugin},
		{events.TypeBridgePublished, nil, Publish},
		{events.TypePublicationReviewRequired, &events.PublicationReviewRequired{}, RequireReview},
		{events.TypeTrustRequired, &events.TrustRequired{}, RequireTrust},
		{events.TypePluginDescriptorFound, &events.PluginDescriptorFound{}, FindPlugin},
		{events.TypePluginDescriptorLost, &events.PluginDescriptorLost{}, LosePlugin},
		{events.TypePreflightSucceeded, &events.PreflightSucceeded{Transition: tr(ConfiguredAwaitingProof, Active)}, Prove},
		{events.TypePreflightSucceeded, &events.PreflightSucceeded{Transition: tr(ConfiguredAwaitingProof, ActiveIsolated)}, ProveIsolated},
		{events.TypePreflightFailed, &events.PreflightFailed{}, Fail},
		{events.TypeProjectUnreachable, &events.ProjectUnreachable{}, LoseMount},
		{events.TypeHarnessDeactivationRequested, &events.HarnessDeactivationRequested{}, Deactivate},
		{events.TypeBridgeDriftDetected, &events.BridgeDriftDetected{}, Drift},
		{events.TypeHarnessDeactivated, &events.HarnessDeactivated{}, Remove},
	}
	for _, c := range cases {
		got, ok := TransitionOf(c.typ, c.payload)
		if !ok || got != c.want {
			t.Errorf("TransitionOf(%s, %+v) = %q %v, want %q", c.typ, c.payload, got, ok, c.want)
		}
	}
	for _, typ := range []string{events.TypePreflightStarted, events.TypeReceiptRecorded, events.TypeReceiptPruned, events.TypeStoreInitialized, events.TypeMemoryCaptured, events.TypeRunStarted} {
		if got, ok := TransitionOf(typ, nil); ok {
			t.Errorf("%s moves a harness: %q", typ, got)
		}
	}
	// Every registered payload that embeds a Transition maps to a name, and
	// every transition except the derived one has an event type.
	for _, typ := range events.Types() {
		spec, _ := events.Lookup(typ)
		_, moves := events.Moves(spec.NewPayload())
		if _, ok := TransitionOf(typ, nil); ok != moves {
			t.Errorf("%s: carries a transition %v, mapped %v", typ, moves, ok)
		}
	}
	for _, name := range Transitions {
		if got := EventTypesOf(name); (len(got) == 0) != (name == Expire) {
			t.Errorf("EventTypesOf(%s) = %v", name, got)
		}
	}
}

// oracle decides from the hand-written matrix alone: the answer Decide
// (looplab) must give for every cell, every name outside the table and
// every state outside the nine.
func oracle(cur State, t string) (State, error) {
	if !Valid(cur) {
		return cur, &UnknownStateError{State: cur}
	}
	cells, ok := matrix[t]
	if !ok {
		return cur, &UnknownTransitionError{Transition: t}
	}
	for _, cell := range strings.Fields(cells) {
		if s, d, _ := strings.Cut(cell, ">"); abbrev[s] == cur {
			return abbrev[d], nil
		}
	}
	return cur, &IllegalTransitionError{From: cur, Transition: t}
}

// sameAnswer compares two answers: the same state, the same error type and text.
func sameAnswer(got State, err error, want State, wantErr error) bool {
	return got == want && fmt.Sprintf("%T %v", err, err) == fmt.Sprintf("%T %v", wantErr, wantErr)
}

var oddNames = []string{"", "teleport", "Prove", "prove ", "expire\x00", "detect\n"}
var oddStates = []State{"", "activ", "Active", "active ", "unsupported\x00"}

// Decide answers as the hand oracle does: all 135 cells, names outside the
// table and states outside the nine, the same state and the same error;
// and as a fresh looplab machine per call does (so that reusing machines
// changes nothing).
func TestDecideIsTheOracle(t *testing.T) {
	names := append(append([]string{}, oddNames...), Transitions...)
	states := append(append([]State{}, oddStates...), States...)
	for _, cur := range states {
		for _, tr := range names {
			got, err := Decide(cur, tr)
			if want, wantErr := oracle(cur, tr); !sameAnswer(got, err, want, wantErr) {
				t.Errorf("Decide(%q, %q) = %q, %v; oracle %q, %v", cur, tr, got, err, want, wantErr)
			}
			if want, wantErr := decideFresh(cur, tr); !sameAnswer(got, err, want, wantErr) {
				t.Errorf("Decide(%q, %q) = %q, %v; fresh machine %q, %v", cur, tr, got, err, want, wantErr)
			}
		}
	}
}

// Decide is safe for concurrent use: goroutines deciding interleaved cells
// (allowed, refused, unknown) each get the oracle's answer. Under -race this
// also holds the machines' reuse free of data races.
func TestDecideConcurrent(t *testing.T) {
	names := append(append([]string{}, oddNames...), Transitions...)
	states := append(append([]State{}, oddStates...), States...)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 2_000 {
				cur, tr := states[(i*7+g)%len(states)], names[(i*11+g*3)%len(names)]
				got, err := Decide(cur, tr)
				if want, wantErr := oracle(cur, tr); !sameAnswer(got, err, want, wantErr) {
					errs <- fmt.Sprintf("goroutine %d: Decide(%q, %q) = %q, %v; oracle %q, %v", g, cur, tr, got, err, want, wantErr)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func FuzzDecide(f *testing.F) {
	f.Add(string(Active), Prove)
	f.Add("activ", "teleport")
	f.Fuzz(func(t *testing.T, cur, tr string) {
		got, err := Decide(State(cur), tr)
		if want, wantErr := oracle(State(cur), tr); !sameAnswer(got, err, want, wantErr) {
			t.Fatalf("Decide(%q, %q) = %q, %v; oracle %q, %v", cur, tr, got, err, want, wantErr)
		}
	})
}

// decideFresh decides on a machine of its own, built for this call: what
// Decide did before machines were reused, kept to compare with and to
// measure.
func decideFresh(cur State, t string) (State, error) {
	if !Valid(cur) {
		return cur, &UnknownStateError{State: cur}
	}
	m := lfsm.NewFSM(string(cur), Table(), nil)
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
	}
	return cur, fmt.Errorf("decide %s from %s: %w", t, cur, err)
}

// decideTable is the precomputed [9][15] lookup Decide used before looplab
// decided every call, kept only to measure against (BenchmarkDecide) and
// held to the oracle like Decide.
func decideTable(cur State, t string) (State, error) {
	si := stateIndex(cur)
	if si < 0 {
		return cur, &UnknownStateError{State: cur}
	}
	ti := slices.Index(Transitions, t)
	if ti < 0 {
		return cur, &UnknownTransitionError{Transition: t}
	}
	if d := decisions()[si][ti]; d >= 0 {
		return States[d], nil
	}
	return cur, &IllegalTransitionError{From: cur, Transition: t}
}

var decisions = sync.OnceValue(func() *[9][15]int8 {
	var d [9][15]int8
	for i := range d {
		for j := range d[i] {
			d[i][j] = -1
		}
	}
	for _, row := range Table() {
		ti, di := slices.Index(Transitions, row.Name), stateIndex(State(row.Dst))
		for _, s := range row.Src {
			d[stateIndex(State(s))][ti] = int8(di)
		}
	}
	return &d
})

func TestDecideTableIsTheOracle(t *testing.T) {
	for _, cur := range append(append([]State{}, oddStates...), States...) {
		for _, tr := range append(append([]string{}, oddNames...), Transitions...) {
			got, err := decideTable(cur, tr)
			if want, wantErr := oracle(cur, tr); !sameAnswer(got, err, want, wantErr) {
				t.Errorf("decideTable(%q, %q) = %q, %v; oracle %q, %v", cur, tr, got, err, want, wantErr)
			}
		}
	}
}

// BenchmarkDecide: Decide (a reused looplab machine) against the old
// precomputed table and a fresh machine per call, on an allowed and a
// refused cell (looplab tells a refused name from an unknown one by a walk
// over its transitions).
func BenchmarkDecide(b *testing.B) {
	impls := []struct {
		name   string
		decide func(State, string) (State, error)
	}{{"looplab", Decide}, {"table", decideTable}, {"fresh", decideFresh}}
	for _, im := range impls {
		b.Run(im.name+"/allowed", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := im.decide(ConfiguredAwaitingProof, Prove); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(im.name+"/refused", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := im.decide(Unsupported, Prove); err == nil {
					b.Fatal("allowed")
				}
			}
		})
	}
}
