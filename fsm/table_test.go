package fsm

import (
	"errors"
	"fmt"
	"strings"
	"testing"

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
			case allowed:
				if Idempotent(cur, tr) != (dst == cur) {
					t.Errorf("Idempotent(%s, %s) = %v", cur, tr, !(dst == cur))
				}
			default:
				var ill *IllegalTransitionError
				if !errors.As(err, &ill) || ill.From != cur || ill.Transition != tr {
					t.Errorf("%s from %s: want *IllegalTransitionError, got %s, %v", tr, cur, got, err)
				}
				if got != cur {
					t.Errorf("%s from %s refused but returned %s, want the unchanged state", tr, cur, got)
				}
				if Idempotent(cur, tr) {
					t.Errorf("Idempotent(%s, %s) is true for a refused cell", cur, tr)
				}
			}
		}
	}
	if cells != 9*15 {
		t.Fatalf("visited %d cells", cells)
	}
	// Edges lists exactly the allowed cells.
	n := 0
	for _, tr := range Transitions {
		n += len(strings.Fields(matrix[tr]))
	}
	if len(Edges()) != n {
		t.Errorf("Edges() has %d cells, matrix %d", len(Edges()), n)
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

// Decide's lookup answers exactly as a fresh looplab machine built from
// the table: every (state, transition) cell, names outside the table and
// states outside the nine, the same state and the same error.
func TestDecideIsLooplab(t *testing.T) {
	names := append([]string{"", "teleport", "Prove", "prove ", "expire\x00"}, Transitions...)
	states := append([]State{"", "activ", "Active"}, States...)
	for _, cur := range states {
		for _, tr := range names {
			got, err := Decide(cur, tr)
			want, wantErr := decideLooplab(cur, tr)
			if got != want || fmt.Sprintf("%T %v", err, err) != fmt.Sprintf("%T %v", wantErr, wantErr) {
				t.Errorf("Decide(%q, %q) = %q, %v; looplab %q, %v", cur, tr, got, err, want, wantErr)
			}
		}
	}
}

func FuzzDecide(f *testing.F) {
	f.Add(string(Active), Prove)
	f.Add("activ", "teleport")
	f.Fuzz(func(t *testing.T, cur, tr string) {
		got, err := Decide(State(cur), tr)
		want, wantErr := decideLooplab(State(cur), tr)
		if got != want || fmt.Sprintf("%T %v", err, err) != fmt.Sprintf("%T %v", wantErr, wantErr) {
			t.Fatalf("Decide(%q, %q) = %q, %v; looplab %q, %v", cur, tr, got, err, want, wantErr)
		}
	})
}

func BenchmarkDecide(b *testing.B) {
	b.Run("lookup", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decide(ConfiguredAwaitingProof, Prove); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("looplab", func(b *testing.B) {
		for b.Loop() {
			if _, err := decideLooplab(ConfiguredAwaitingProof, Prove); err != nil {
				b.Fatal(err)
			}
		}
	})
}
