package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/bolt"
)

func TestIndeterminate(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errors.New("plain"), false},
		{fmt.Errorf("remember: %w", &bolt.CommitError{Path: "l", Err: errors.New("eio")}), false},
		{fmt.Errorf("remember: %w", &bolt.CommitError{Path: "l", Err: errors.New("eio"), Visible: true}), true},
		{&adapters.DurabilityError{Path: "f", Err: errors.New("eio")}, true},
		{&OutputError{Err: errors.New("eio")}, true},
	} {
		if got := Indeterminate(tc.err); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestProjectRelative(t *testing.T) {
	for _, tc := range []struct{ msg, root, want string }{
		{"start run: /w/my project/.tree-ring/ledger.db: commit failed", "/w/my project/.tree-ring", "start run: .tree-ring/ledger.db: commit failed"},
		{"open /w/my project: denied", "/w/my project/.tree-ring", "open .: denied"},
		{"/w/my projects/x stays", "/w/my project/.tree-ring", "/w/my projects/x stays"},
		{"no root", "", "no root"},
	} {
		if got := ProjectRelative(tc.msg, tc.root); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
