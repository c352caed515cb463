package events

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events/strictjson"
)

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

// Factory.New validates the payload it encoded once and carries the value
// that decode produced: equal to a fresh strict decode, never the caller's
// value (changing it afterwards changes nothing), compact bytes; an
// envelope moved to a stream outside its type's family is decoded, and
// refused, again.
func TestFactoryCarriesItsDecode(t *testing.T) {
	p := &HarnessDetected{Transition: Transition{From: "unsupported", To: "detected"}, HarnessID: "codex",
		AdapterVersion: "4", Capability: "native-preflight", Markers: []string{"<a&b>", "\u2028é"}}
	e, err := testFactory().New(HarnessStream("codex"), TypeHarnessDetected, p)
	if err != nil {
		t.Fatal(err)
	}
	p.Markers[0], p.HarnessID = "changed", "changed"
	got, ok := VerifiedPayload(&e)
	if !ok {
		t.Fatal("a built envelope carries no verified payload")
	}
	want, err := DecodePayload(&e)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || got.(*HarnessDetected).HarnessID != "codex" {
		t.Fatalf("carried %+v, decoded %+v", got, want)
	}
	if !strictjson.IsCompact(e.Payload) {
		t.Fatalf("payload %s is not compact", e.Payload)
	}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	moved := e
	moved.Stream = RunStream("01J0000000000000000000000A")
	if err := moved.Validate(); err == nil || !strings.Contains(err.Error(), "does not belong on stream") {
		t.Fatalf("a harness event moved to a run stream: %v", err)
	}
}
