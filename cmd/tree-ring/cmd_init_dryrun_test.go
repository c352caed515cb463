package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// init --dry-run says what status says right after init (issue 26 item 8):
// with Codex not trusting the project, needs-trust (not
// configured-awaiting-proof), with the trust step after the plan's; with
// Codex trusting the project and Tree Ring's hooks, configured-awaiting-
// proof; Claude Code configured-awaiting-proof either way.
func TestInitDryRunAgreesWithStatusOnCodexTrust(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		p := newProj(t, ".codex", ".claude")
		if trusted {
			writeCodexHome(t, filepath.Join(p.home, ".codex"), codexConfig(t, p.dir, true, true))
		}
		var dry, st initOut
		p.json(&dry, "init", "--dry-run")
		p.ok("init")
		p.json(&st, "integrations", "status")
		want := map[bool]string{false: "needs-trust", true: "configured-awaiting-proof"}[trusted]
		for _, id := range []string{"codex", "claude-code"} {
			if dry.states()[id] != st.states()[id] {
				t.Errorf("trusted %v: %s: init --dry-run %s, status after init %s", trusted, id, dry.states()[id], st.states()[id])
			}
		}
		if st.states()["codex"] != want || st.states()["claude-code"] != "configured-awaiting-proof" {
			t.Errorf("trusted %v: status %v", trusted, st.states())
		}
		next := dry.next("codex")
		if !strings.HasPrefix(next, "Apply the reviewed bridge plan") || trusted == strings.Contains(next, "Then: Codex runs no project hook until you trust") {
			t.Errorf("trusted %v: the dry run's codex step: %s", trusted, next)
		}
	}
}
