package events

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestStoreKeyRecordedCheck(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	ok := StoreKeyRecorded{StoreID: "3d1a160e-83e4-4b24-b222-ee5b36ff9ce4", Algorithm: KeyAlgorithmEd25519, PublicKey: key}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(p *StoreKeyRecorded){
		"store id":    func(p *StoreKeyRecorded) { p.StoreID = "x" },
		"algorithm":   func(p *StoreKeyRecorded) { p.Algorithm = "rsa" },
		"short key":   func(p *StoreKeyRecorded) { p.PublicKey = base64.StdEncoding.EncodeToString(make([]byte, 31)) },
		"not base64":  func(p *StoreKeyRecorded) { p.PublicKey = strings.Repeat("!", 44) },
		"private key": func(p *StoreKeyRecorded) { p.PublicKey = base64.StdEncoding.EncodeToString(make([]byte, 64)) },
	} {
		p := ok
		edit(&p)
		if p.Check() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if spec, found := Lookup(TypeStoreKeyRecorded); !found || spec.StreamPrefix != StoreStream || spec.SchemaVersion != 1 {
		t.Fatalf("registration: %+v %v", spec, found)
	}
}

func TestStoreKeyRotatedCheck(t *testing.T) {
	key := func(b byte) string { k := make([]byte, 32); k[0] = b; return base64.StdEncoding.EncodeToString(k) }
	sig := base64.StdEncoding.EncodeToString(make([]byte, 64))
	ok := StoreKeyRotated{StoreID: "3d1a160e-83e4-4b24-b222-ee5b36ff9ce4", Algorithm: KeyAlgorithmEd25519, PublicKey: key(1), PreviousKey: key(2), PreviousSignature: sig, Signature: sig}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(p *StoreKeyRotated){
		"store id":           func(p *StoreKeyRotated) { p.StoreID = "x" },
		"algorithm":          func(p *StoreKeyRotated) { p.Algorithm = "rsa" },
		"short new key":      func(p *StoreKeyRotated) { p.PublicKey = key(1)[:40] },
		"short previous key": func(p *StoreKeyRotated) { p.PreviousKey = base64.StdEncoding.EncodeToString(make([]byte, 31)) },
		"the same key":       func(p *StoreKeyRotated) { p.PreviousKey = p.PublicKey },
		"no previous sig":    func(p *StoreKeyRotated) { p.PreviousSignature = "" },
		"short signature":    func(p *StoreKeyRotated) { p.Signature = base64.StdEncoding.EncodeToString(make([]byte, 63)) },
	} {
		p := ok
		edit(&p)
		if p.Check() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if spec, found := Lookup(TypeStoreKeyRotated); !found || spec.StreamPrefix != StoreStream || spec.SchemaVersion != 1 {
		t.Fatalf("registration: %+v %v", spec, found)
	}
}

func TestStoreLabeledCheck(t *testing.T) {
	ok := StoreLabeled{StoreID: "3d1a160e-83e4-4b24-b222-ee5b36ff9ce4", Label: "ci-runner-7"}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	for name, label := range map[string]string{"empty": "", "space": "ci runner", "newline": "a\nb", "control": "a\x00", "long": strings.Repeat("x", 65), "invalid utf-8": "a\xff"} {
		p := ok
		p.Label = label
		if p.Check() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if (StoreLabeled{StoreID: "x", Label: "a"}).Check() == nil {
		t.Error("a bad store id: accepted")
	}
	if spec, found := Lookup(TypeStoreLabeled); !found || spec.StreamPrefix != StoreStream {
		t.Fatalf("registration: %+v %v", spec, found)
	}
}
