package fleetcli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/cmd/internal/cli"
)

func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, cli.IO{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}, Deps{})
	return code, out.String(), errb.String()
}

// Help lists only the flags a command uses; collect still accepts the
// ledger flags tree-ring moves after the command word.
func TestHelpListsOnlyUsedFlags(t *testing.T) {
	for _, tc := range []struct {
		cmd     string
		ledger  bool
		ownFlag string
	}{{"publish", true, "--timeout"}, {"collect", false, "--into"}} {
		code, out, _ := runMain(t, tc.cmd, "--help")
		if code != 0 || !strings.Contains(out, tc.ownFlag) || !strings.Contains(out, "--log-level") {
			t.Fatalf("%s --help: exit %d\n%s", tc.cmd, code, out)
		}
		for _, f := range []string{"--root", "--source-root"} {
			if strings.Contains(out, f+" ") != tc.ledger {
				t.Errorf("%s --help lists %s: %v, want %v\n%s", tc.cmd, f, !tc.ledger, tc.ledger, out)
			}
		}
	}
	code, _, stderr := runMain(t, "collect", "--root", "x/.tree-ring", "--source-root", "x")
	if code != 2 || !strings.Contains(stderr, "--nats URL (or NATS_URL) is required") {
		t.Fatalf("collect with the moved ledger flags: exit %d, %s", code, stderr)
	}
}
