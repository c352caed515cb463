package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGroupsAndSuggestions(t *testing.T) {
	c := newMemCLI(t)
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // substring
		stderr string // exact
	}{
		{[]string{"integrations"}, 0, "integrations status ", ""},
		{[]string{"integrations", "--help"}, 0, "integrations activate ", ""},
		{[]string{"--help", "integrations"}, 0, "integrations hook ", ""},
		{[]string{"help", "integrations"}, 0, "integrations scan ", ""},
		{[]string{"audit"}, 0, "audit duplicates ", ""},
		{[]string{"audit", "-h"}, 0, "audit verify ", ""},
		{[]string{"projections"}, 0, "projections rebuild ", ""},
		{[]string{"events", "--help"}, 0, "Subcommands:\n  events import FILE|-", ""},
		{[]string{"integrations", "statu"}, 2, "", "tree-ring: unknown integrations subcommand \"statu\"; did you mean `tree-ring integrations status`?\n"},
		{[]string{"audit", "verfy"}, 2, "", "tree-ring: unknown audit subcommand \"verfy\"; did you mean `tree-ring audit verify`?\n"},
		{[]string{"audit", "bogus"}, 2, "", "tree-ring: unknown audit subcommand \"bogus\"; audit has: duplicates, graph, replay, report, runs, verify (see `tree-ring audit --help`)\n"},
		{[]string{"integrations", "--json"}, 2, "", "tree-ring: integrations needs a subcommand before its flags: activate, certify, deactivate, hook, link, preflight, reconcile, scan, status (see `tree-ring integrations --help`)\n"},
		{[]string{"integration", "status"}, 2, "", "tree-ring: unknown command \"integration\"; did you mean `tree-ring integrations status`? (see `tree-ring --help`)\n"},
		{[]string{"remeber", "x"}, 2, "", "tree-ring: unknown command \"remeber\"; did you mean `tree-ring remember`? (see `tree-ring --help`)\n"},
		{[]string{"recal"}, 2, "", "tree-ring: unknown command \"recal\"; did you mean `tree-ring recall`? (see `tree-ring --help`)\n"},
		{[]string{"audti", "verify"}, 2, "", "tree-ring: unknown command \"audti\"; did you mean `tree-ring audit verify`? (see `tree-ring --help`)\n"},
		{[]string{"events", "imprt"}, 2, "", "tree-ring: events takes no arguments and has no subcommand \"imprt\"; did you mean `tree-ring events import`?\n"},
		{[]string{"frobnicate"}, 2, "", "tree-ring: unknown command \"frobnicate\" (see `tree-ring --help`)\n"},
		// A mistyped word that may be private is not echoed.
		{[]string{"sk_" + "live_abcdefghijklmnop"}, 2, "", "tree-ring: unknown command (not shown) (see `tree-ring --help`)\n"},
		{[]string{"Use pnpm, not npm"}, 2, "", "tree-ring: unknown command (not shown) (see `tree-ring --help`)\n"},
	} {
		r := c.run("", tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || r.stderr != tc.stderr {
			t.Errorf("%q: exit %d\nstdout %q\nstderr %q\nwant %d, %q, %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
	// Every command a group lists runs (its --help at least).
	for _, g := range []string{"audit", "integrations", "projections", "events"} {
		for _, s := range subcommands(g) {
			if r := c.run("", append(strings.Fields(s.name), "--help")...); r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: tree-ring "+s.name) {
				t.Errorf("%s --help: %+v", s.name, r)
			}
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"status", "status", 0}, {"statu", "status", 1}, {"stauts", "status", 1}, {"remeber", "remember", 1}, {"abc", "xyz", 3}, {strings.Repeat("a", 65), "a", 64}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("%q %q: %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

// in runs tree-ring in-process from directory dir without --root or
// --source-root, as a user in a subdirectory would.
func (p *hp) in(dir string, args ...string) result {
	p.t.Helper()
	return invocation{deps: p.deps(), env: p.env, getwd: func() (string, error) { return dir, nil }}.run(args...)
}

// From a subdirectory of a git checkout, init initializes the top level
// (the root the hooks resolve) and every later command finds it.
func TestCommandsFromASubdirectoryFindTheProjectRoot(t *testing.T) {
	p := newHP(t, ".git", ".codex")
	sub := p.cwd // <project>/src/deep
	r := p.in(sub, "init")
	if r.code != 0 || !strings.Contains(r.stderr, "initializing the project root "+p.dir+" (the git checkout's top level") ||
		!strings.Contains(r.stdout, "Add this line to .gitignore (init never edits it): .tree-ring/") {
		t.Fatalf("init: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(p.dir, ".tree-ring", "ledger.db")); err != nil {
		t.Fatalf("no store at the top level: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(sub, ".tree-ring")); err == nil {
		t.Fatal("init created a nested store")
	}
	if _, err := os.Lstat(filepath.Join(p.dir, "src", ".tree-ring")); err == nil {
		t.Fatal("init created a nested store")
	}
	if _, err := os.Lstat(filepath.Join(p.dir, ".gitignore")); err == nil {
		t.Fatal("init created .gitignore")
	}
	id := strings.TrimSpace(p.in(sub, "remember", "Run make from the top level", "--event-type", "lesson").stdout)
	if out := p.in(filepath.Join(p.dir, "src"), "recall", "make").stdout; !strings.Contains(out, id) {
		t.Fatalf("recall from another subdirectory: %q", out)
	}
	if r := p.in(sub, "integrations", "status"); r.code != 0 || !strings.Contains(r.stdout, "Codex: configured-awaiting-proof") {
		t.Fatalf("status from a subdirectory: %+v", r)
	}
	if r := p.in(sub, "audit", "verify"); r.code != 0 {
		t.Fatalf("verify: %+v", r)
	}
	// An ignore line already there is not suggested again, and .gitignore is
	// never rewritten.
	gi := []byte("node_modules/\n/.tree-ring/\n")
	if err := os.WriteFile(filepath.Join(p.dir, ".gitignore"), gi, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := p.in(p.dir, "init"); r.code != 0 || strings.Contains(r.stdout, ".gitignore") || r.stderr != "" {
		t.Fatalf("second init: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(p.dir, ".gitignore")); !bytes.Equal(b, gi) {
		t.Fatal(".gitignore changed")
	}
}
