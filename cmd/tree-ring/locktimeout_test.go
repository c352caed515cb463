package main

import (
	"regexp"
	"testing"
)

// TestLockTimeoutHelpShowsTheWaitUsed: --help shows, as --lock-timeout's
// default, the wait the command itself uses (the hook and the preflight
// wait 8s for concurrent session starts; everything else 3s), and a
// leading --lock-timeout the user gave wins.
func TestLockTimeoutHelpShowsTheWaitUsed(t *testing.T) {
	lock := regexp.MustCompile(`--lock-timeout duration +how long to wait for another process's ledger lock \(default ([^)]+)\)`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"integrations", "hook", "--help"}, "8s"},
		{[]string{"integrations", "preflight", "--help"}, "8s"},
		{[]string{"help", "integrations", "hook"}, "8s"},
		{[]string{"--lock-timeout", "1s", "integrations", "hook", "--help"}, "1s"},
		{[]string{"remember", "--help"}, "3s"},
		{[]string{"integrations", "status", "--help"}, "3s"},
	} {
		r := runCLI(t, "", tc.args...)
		m := lock.FindStringSubmatch(r.stdout)
		if r.code != 0 || m == nil || m[1] != tc.want {
			t.Errorf("%v: exit %d, --lock-timeout default %v, want %s\n%s", tc.args, r.code, m, tc.want, r.stdout)
		}
	}
}
