package gitleaks

import (
	"bufio"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
)

// notOurs are the gitleaks rules whose flagged samples ours passes, on
// purpose, each with the reason. A rule listed here that ours no longer
// misses fails the test, so the list stays exact.
var notOurs = map[string]string{
	// A credential known only by the vendor's name before it: the name of
	// a service next to a value is ordinary prose too.
	"facebook-access-token":    "`facebook <id>|<value>`: the vendor's name is the only context",
	"jfrog-identity-token":     `"artifactory", "<value>": the vendor's name is the only context`,
	"sourcegraph-access-token": "`sourcegraph: <40 hex>`: a 40-hex value is a commit id in prose",
	"sumologic-access-id":      "`accessId = ...`: an id, not a credential name",
	"sonar-api-token":          "`SONAR_LOGIN = ...` without the sqp_/squ_/sqa_ prefix: a login, not a credential name",
	// A UUID under a plain *KEY or *ClientID name: ids as often as keys.
	"heroku-api-key":        "a UUID under HEROKU_KEY",
	"hubspot-api-key":       "a UUID under hubspotKey",
	"messagebird-client-id": "a UUID under MessageBirdClientID",
	"snyk-api-token":        "a UUID under SNYK_KEY",
	// Samples generated from gitleaks' looser pattern that the real
	// format cannot produce.
	"jwt":                "a JWT's header is base64url of `{\"`: eyJ, not any ey",
	"sendgrid-api-token": "a SendGrid key is SG. 22 characters . 43 characters",
	"curl-auth-header":   "Basic credentials that are not base64 of user:password",
	"curl-auth-user":     "curl -u \"user:\" (an empty password: curl asks for it)",
}

func defaultDetector(t *testing.T) *detect.Detector {
	logging.Logger = zerolog.Nop()
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// harmless is the corpus of ordinary technical prose (../harmless_prose.txt).
func harmless(t *testing.T) []string {
	f, err := os.Open("../harmless_prose.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// TestGitleaksTruePositives runs gitleaks' default detector and ours over
// gitleaks' own true-positive samples, in their contexts and bare in a
// sentence: every sample gitleaks flags, ours flags, but for notOurs.
func TestGitleaksTruePositives(t *testing.T) {
	d := defaultDetector(t)
	samples, skipped := trueSamples(t)
	if len(samples) < 1000 {
		t.Fatalf("only %d samples read from gitleaks' rules", len(samples))
	}
	miss := map[string][]string{}
	flagged, rules := 0, map[string]bool{}
	for _, s := range samples {
		text := s.text
		if s.bare {
			text = "note: " + s.text + " was used"
		}
		if len(d.DetectString(text)) == 0 {
			continue
		}
		flagged++
		rules[s.rule] = true
		if memory.SecretKind(text) == "" {
			miss[s.rule] = append(miss[s.rule], text)
		}
	}
	missed := 0
	for _, r := range sortedKeys(miss) {
		missed += len(miss[r])
		if _, ok := notOurs[r]; !ok {
			t.Errorf("gitleaks' %s: ours passes %d of its samples, e.g. %q", r, len(miss[r]), miss[r][0])
		}
	}
	for r := range notOurs {
		if len(miss[r]) == 0 {
			t.Errorf("notOurs lists %s, whose samples ours now flags: remove it", r)
		}
	}
	t.Logf("%d samples (%d expressions skipped); gitleaks flags %d of %d rules; ours misses %d samples of %d rules (notOurs)",
		len(samples), skipped, flagged, len(rules), missed, len(miss))
}

// TestHarmlessCorpus: ours flags no line of the harmless corpus; gitleaks'
// findings on it are reported for comparison.
func TestHarmlessCorpus(t *testing.T) {
	d := defaultDetector(t)
	lines, theirs := harmless(t), 0
	for _, s := range lines {
		if k := memory.SecretKind(s); k != "" {
			t.Errorf("ours flags harmless %q (%s)", s, k)
		}
		if fs := d.DetectString(s); len(fs) > 0 {
			theirs++
			t.Logf("gitleaks flags harmless %q (%s)", s, fs[0].RuleID)
		}
	}
	t.Logf("%d harmless lines; gitleaks flags %d", len(lines), theirs)
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
