package events

import "testing"

// Spec.Moves answers from the type what Moves answers from a decoded
// payload, for every registered type.
func TestSpecMovesIsMoves(t *testing.T) {
	moving := 0
	for _, typ := range Types() {
		spec, _ := Lookup(typ)
		_, want := Moves(spec.NewPayload())
		if got := spec.Moves(); got != want {
			t.Errorf("%s: Spec.Moves() = %v, Moves(payload) = %v", typ, got, want)
		}
		if want {
			moving++
		}
	}
	for typ, want := range map[string]bool{TypePreflightSucceeded: true, TypeReceiptRecorded: false, TypeRunStarted: false} {
		if spec, _ := Lookup(typ); spec.Moves() != want {
			t.Errorf("%s: Spec.Moves() = %v, want %v", typ, spec.Moves(), want)
		}
	}
	if moving == 0 {
		t.Fatal("no registered type moves a harness")
	}
	if (Spec{}).Moves() {
		t.Error("the zero Spec moves")
	}
}
