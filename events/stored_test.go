package events

import (
	"reflect"
	"strings"
	"testing"
)

// TestDecodeFoldPayload: a stored event decoded for a fold carries no
// payload value; DecodeFoldPayload decodes it once, as DecodePayload
// does, and VerifiedPayload hands that value to every fold of the event,
// never a seal (CarriesSeal, CarriedStored); the next event decoded into
// the same scratch envelope carries none again. A payload that does not
// decode is an error and leaves no value.
func TestDecodeFoldPayload(t *testing.T) {
	ref := sealed(t)
	stored := ref.Encode()
	var c StringCache
	e, err := DecodeStoredFold(stored, ref.Type, &c)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := VerifiedPayload(&e); ok {
		t.Fatal("a fold's decode carries a payload value before DecodeFoldPayload")
	}
	if err := DecodeFoldPayload(&e); err != nil {
		t.Fatal(err)
	}
	want, err := DecodePayload(&ref)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := VerifiedPayload(&e)
	if !ok || !reflect.DeepEqual(v, want) {
		t.Fatalf("VerifiedPayload = %+v, %v; want %+v", v, ok, want)
	}
	if e.CarriesSeal(e.Version, e.Position, ref.PrevHash) || e.CarriesSeal(e.Version, e.Position, "") {
		t.Error("a fold's payload value carries a seal")
	}
	if _, ok := e.CarriedStored(e.Version, e.Position, ""); ok {
		t.Error("a fold's payload value carries stored bytes")
	}
	if e, err = DecodeStoredFold(stored, ref.Type, &c); err != nil {
		t.Fatal(err)
	}
	if _, ok := VerifiedPayload(&e); ok {
		t.Error("a scratch envelope decoded again kept the previous payload value")
	}
	bad := e
	bad.Payload = []byte(`{"unknown_field":1}`)
	if err := DecodeFoldPayload(&bad); err == nil || !strings.Contains(err.Error(), "payload") {
		t.Errorf("undecodable payload: %v", err)
	}
	if _, ok := VerifiedPayload(&bad); ok {
		t.Error("a failed decode left a payload value")
	}
}
