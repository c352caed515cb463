package memory

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// The formats added from the gitleaks differential (testdata/gitleaks),
// assembled at run time like the other fakes so that no scanner takes
// this file for a leak.
func TestSecretDetectorServiceFormats(t *testing.T) {
	hex32 := strings.Repeat("a1b2c3d4", 4)
	mixed := func(n int) string { return strings.Repeat("aB3", n/3+1)[:n] }
	for _, tc := range []struct{ text, kind string }{
		{"linear key " + "lin_" + "api_" + mixed(40), "service_token"},
		{"the databricks token is " + "da" + "pi" + hex32, "service_token_short_prefix"},
		{"doppler " + "dp." + "pt." + mixed(43) + " in CI", "service_token"},
		{"dt0c01." + mixed(24) + "." + mixed(64), "service_token"},
		{"fly deploy with " + "fo1" + "_" + mixed(43), "service_token"},
		{"glsa" + "_" + mixed(32) + "_" + hex32[:8], "service_token"},
		{"HRKU" + "-AA" + mixed(58), "service_token"},
		{"openshift " + "sha256" + "~" + mixed(43), "service_token"},
		{"pscale" + "_pw_" + mixed(40), "service_token"},
		{"PMAK" + "-" + hex32[:24] + "-" + hex32 + "ab", "service_token"},
		{"pul" + "-" + hex32 + hex32[:8], "service_token_short_prefix"},
		{"rubygems" + "_" + hex32 + hex32[:16], "service_token"},
		{"sntryu" + "_" + hex32 + hex32, "service_token"},
		{"sq0" + "csp-" + mixed(43), "service_token"},
		{"notion " + "ntn" + "_" + "12345678901" + mixed(35), "service_token"},
		{"sgp" + "_" + hex32[:16] + "_" + hex32 + hex32[:8], "service_token"},
		{"LT" + "AI" + mixed(20), "service_token"},
		{"mailchimp " + hex32 + "-us" + "18", "service_token_short_prefix"},
		{"1password " + "A3" + "-ABC123-DEF456GHI78-ABCDE-FGHIJ-KLMNO", "service_token_short_prefix"},
		{"azure secret 8Xy" + "4Q~" + mixed(34), "service_token_short_prefix"},
		// Code and configuration assignments.
		{`apiToken := "` + mixed(20) + `"`, "secret_code_assignment"},
		{`STRIPE_TOKEN ::= "` + mixed(20) + `"`, "secret_code_assignment"},
		{`$dbPassword .= 'hunter2x'`, "secret_code_assignment"},
		{`  "authToken" => "` + mixed(20) + `"`, "secret_code_assignment"},
		{`var accessToken string = "` + mixed(20) + `"`, "secret_code_assignment"},
		{`System.setProperty("DISCORD_TOKEN", "45361081312823819793980327714613")`, "secret_code_assignment"},
		{"<apiToken>\n    " + mixed(20) + "\n</apiToken>", "secret_code_assignment"},
		{"slackToken := `" + mixed(20) + "`", "secret_code_assignment"},
		// curl and Vault.
		{"curl -u admin:" + "s3cr3tPass https://api.example.com", "curl_user"},
		{"curl -X POST https://x.example \\\n  -u developer:" + "yqDVtkqPEC", "curl_user"},
		{"curl --user kevin:'" + "pRf7vG2h1L' -X PATCH https://api.example.com", "curl_user"},
		{`curl --user "client":"` + `ZqL5kVrX1n" https://api.example.com`, "curl_user"},
		{"SONAR_TOKEN is " + "sqp_" + hex32 + hex32[:8], "service_token"},
		{"curl -H 'Authorization: " + "5eb4223e-5008-46e5-be67-c7b8f2732305' https://api.example.com", "curl_auth_header"},
		{"vault login " + "s." + mixed(24), "vault_legacy_token"},
	} {
		if got := SecretKind(tc.text); got != tc.kind {
			t.Errorf("%q: %q, want %q", tc.text, got, tc.kind)
		}
	}
}

// What the new rules must pass: words, placeholders, variables, an empty
// password and prose around the prefixes.
func TestSecretDetectorServiceFormatsPassProse(t *testing.T) {
	for _, s := range []string{
		`token := "refresh"`,
		`tokenType := "Bearer"`,
		`apiKey := "YOUR_API_KEY"`,
		`password := "<from the vault>"`,
		`secret := "${SECRET}"`,
		`"token" => "see the vault"`,
		`<password></password>`,
		`curl -u "$USER:$PASS" https://api.example.com`,
		`curl -u admin: https://api.example.com`,
		`curl -H 'Authorization: $TOKEN' https://api.example.com`,
		"this.is.fine and items.count is 24",
		"the dapi endpoint and the pat. field are documented",
		"LTAI is Alibaba's prefix",
		"mail from en-us and de-de users",
		"sha256~ marks an OpenShift token",
	} {
		if k := SecretKind(s); k != "" {
			t.Errorf("%q flagged as %s", s, k)
		}
	}
}

// The harmless corpus (testdata/harmless_prose.txt, shared with the gitleaks
// differential): ordinary technical prose the detector must never flag.
func TestSecretDetectorPassesHarmlessCorpus(t *testing.T) {
	f, err := os.Open("testdata/harmless_prose.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n++
		if k := SecretKind(l); k != "" {
			t.Errorf("%q flagged as %s", l, k)
		}
		if c := InspectText(l); c == SensitivitySecret {
			t.Errorf("%q inspected as secret", l)
		}
	}
	if n < 80 {
		t.Fatalf("only %d lines in the corpus", n)
	}
}
