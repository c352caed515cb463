package adapters

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckOwnCopy(t *testing.T) {
	want := []byte("#!binary contents")
	for _, tc := range []struct {
		name    string
		have    string
		partial bool
	}{
		{"complete", string(want), false},
		{"empty", "", true},
		{"prefix", "#!bin", true},
		{"another version", "#!other binary", false},
		{"longer", string(want) + "x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOwnCopy(".tree-ring/bin/tree-ring", []byte(tc.have), want)
			var pc *PartialCopyError
			if errors.As(err, &pc) != tc.partial {
				t.Fatalf("%v", err)
			}
			if tc.partial && (!strings.Contains(err.Error(), "remove .tree-ring/bin/tree-ring and run `tree-ring init`") || pc.Have != len(tc.have) || pc.Want != len(want)) {
				t.Fatalf("%v", err)
			}
		})
	}
}
