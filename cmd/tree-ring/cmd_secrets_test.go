package main

import (
	"os"
	"strings"
	"testing"
)

// Issue 13's credentials, assembled at run time (no scanner takes this file
// for a leak). Each must be refused by remember and capture before anything
// is created, with a message that shows none of it.
func TestIssueSecretsAreRefusedWithoutEcho(t *testing.T) {
	values := map[string]string{
		"jwt":        "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + ".c2lnbmF0dXJlX29mX3RoZV90b2tlbg",
		"slack":      "xo" + "xb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp",
		"stripe":     "sk_" + "live_" + "51HcKpQ2eZvKYlo2C0FAKE0FAKE",
		"google":     "AI" + "za" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
		"aws secret": "aws secret access key is " + "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
		"postgres":   "postgres://admin:" + "Sup3rS3cret" + "@db.internal:5432/app",
		"pgp":        "-----BEGIN PGP PRIVATE KEY BLOCK-----",
		"password":   "password: " + "hunter2",
		"private":    "-----BEGIN PRIVATE KEY----- X",
	}
	for name, v := range values {
		t.Run(name, func(t *testing.T) {
			c := newMemCLI(t)
			// After "--", the summary is text even if it starts with "-".
			capture := append(append([]string{"capture"}, captureArgs("x")[2:]...), "--", v)
			for _, args := range [][]string{{"remember", "--event-type", "note", "--project", "p", "--", v}, capture} {
				r := c.run("", args...)
				if r.code != 2 || r.stdout != "" || r.stderr != "tree-ring: secret-like memory is blocked by policy\n" {
					t.Fatalf("%s: %+v", args[0], r)
				}
			}
			// Without "--", a value that starts with "-" is a flag error that
			// does not show it either.
			r := c.run("", "remember", v, "--event-type", "note")
			if r.code != 2 || strings.Contains(r.stderr, strings.TrimLeft(v, "-")[:8]) {
				t.Fatalf("flag error: %+v", r)
			}
			if _, err := os.Stat(c.root); !os.IsNotExist(err) {
				t.Fatalf("a refused write created the root: %v", err)
			}
		})
	}
}

func TestFlagErrorsNeverEchoValues(t *testing.T) {
	c := newMemCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"remember", "-----BEGIN PRIVATE KEY----- X", "--event-type", "note"},
			`tree-ring: remember: an argument that starts with "-" is not a known flag (it is not shown); put text that starts with "-" after "--", flags first, e.g. tree-ring remember --event-type lesson -- "-x ..."` + "\n"},
		{[]string{"-----BEGIN OPENSSH PRIVATE KEY-----"},
			`tree-ring: an argument that starts with "-" is not a known flag (it is not shown); put text that starts with "-" after "--", flags first, e.g. tree-ring remember --event-type lesson -- "-x ..."` + "\n"},
		{[]string{"remember", "x", "--salience", "hunter2"}, "tree-ring: remember: invalid value for --salience (the value is not shown; see --help)\n"},
		{[]string{"--lock-timeout", "hunter2", "remember", "x"}, "tree-ring: invalid value for --lock-timeout (the value is not shown; see --help)\n"},
		{[]string{"remember", "x", "--ring"}, "tree-ring: remember: flag --ring needs a value\n"},
		{[]string{"remember", "x", "--evnt-type", "note"}, "tree-ring: remember: unknown flag --evnt-type (see --help)\n"},
		{[]string{"remember", "x", "--password=hunter2"}, "tree-ring: remember: unknown flag --password (see --help)\n"},
		// Flags after "--" are text: the hint says so and shows no argument.
		{[]string{"remember", "--", "-----BEGIN PRIVATE KEY----- X", "--event-type", "note"},
			`tree-ring: remember needs exactly one SUMMARY (quote it); everything after "--" is text, so put the flags before it, e.g. tree-ring remember --event-type lesson -- "-x ..."` + "\n"},
		{[]string{"capture", "--", "-x", "--event-type", "lesson"},
			`tree-ring: capture needs exactly one SUMMARY (quote it); everything after "--" is text, so put the flags before it, e.g. tree-ring capture --event-type lesson -- "-x ..."` + "\n"},
		{[]string{"remember", "two", "words"}, "tree-ring: remember needs exactly one SUMMARY (quote it)\n"},
		{[]string{"remember", "x", "--sk-proj-abcdefghijklmnopqrstuvwxyz"},
			`tree-ring: remember: an argument that starts with "-" is not a known flag (it is not shown); put text that starts with "-" after "--", flags first, e.g. tree-ring remember --event-type lesson -- "-x ..."` + "\n"},
	} {
		r := c.run("", tc.args...)
		if r.code != 2 || r.stdout != "" || r.stderr != tc.want {
			t.Errorf("%q: exit %d\n%q\nwant %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	// After "--", a summary that starts with "-" is text.
	id := strings.TrimSpace(c.ok("remember", "--event-type", "note", "--", "-x is the flag of ls that lists in columns"))
	if !strings.HasPrefix(id, "mem_") {
		t.Fatalf("%q", id)
	}
	if out := c.ok("recall", "columns"); !strings.Contains(out, "] -x is the flag of ls") {
		t.Fatalf("recall: %q", out)
	}
}
