package main

import (
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
