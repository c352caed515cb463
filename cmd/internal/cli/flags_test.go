package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// flagNameForm is the hand-written form of the regexp it replaced; the two
// must agree on every name, including the edges of each rule.
func TestFlagNameFormMatchesItsRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$`)
	for _, name := range []string{
		"", "a", "z", "A", "0", "-", "--", "a-", "-a", "a--b", "a-b", "a-b-c", "ab9-0c",
		"input-json-stdin", "root", "Root", "a_b", "a.b", "a b", "é", "a-é", "9a", "a-9",
		"a---", "ab-", "a-b-", "x-1-y2", "\x00", "a\n",
	} {
		if got, want := flagNameForm(name), re.MatchString(name); got != want {
			t.Errorf("flagNameForm(%q) = %v, the regexp says %v", name, got, want)
		}
	}
}

func FuzzFlagNameForm(f *testing.F) {
	re := regexp.MustCompile(`^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$`)
	for _, s := range []string{"input-json-stdin", "a--b", "-x", "a-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := flagNameForm(name), re.MatchString(name); got != want {
			t.Errorf("flagNameForm(%q) = %v, the regexp says %v", name, got, want)
		}
	})
}

// A project that is not a git checkout is found by its .tree-ring.
func TestFindProjectRoot(t *testing.T) {
	base, _ := filepath.EvalSymlinks(t.TempDir())
	for _, d := range []string{"plain/a/b", "store/.tree-ring", "store/x/y", "git/.git", "git/store/.tree-ring", "git/store/z"} {
		os.MkdirAll(filepath.Join(base, d), 0o755)
	}
	os.MkdirAll(filepath.Join(base, "linked", "p"), 0o755)
	os.WriteFile(filepath.Join(base, "linked", ".git"), []byte("gitdir: /elsewhere\n"), 0o644) // a linked worktree
	for _, tc := range []struct{ from, want string }{
		{"plain/a/b", "plain/a/b"},
		{"store/x/y", "store"},
		{"store", "store"},
		{"git/store/z", "git"}, // the git top level wins over a nested store, as for the hooks
		{"linked/p", "linked"},
	} {
		if got := FindProjectRoot(filepath.Join(base, tc.from)); got != filepath.Join(base, tc.want) {
			t.Errorf("%s: %s, want %s", tc.from, got, tc.want)
		}
	}
}
