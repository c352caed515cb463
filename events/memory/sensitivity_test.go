package memory

import (
	"errors"
	"strings"
	"testing"
)

// Fake credentials are assembled at run time so that no scanner takes this
// file for a leak; each is of the real format.
var (
	jwt          = "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	awsSecret    = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
	stripe       = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	slack        = "xo" + "xb-" + "2048-4096-" + "abcdefABCDEF12345678"
	google       = "AI" + "za" + "SyA1234567890abcdefghijklmnopqrstuv"
	gitlab       = "gl" + "pat-" + "xxxxXXXXxxxxXXXX1234"
	npmTok       = "np" + "m_" + strings.Repeat("aB3", 12)
	ghClassic    = "gh" + "p_" + strings.Repeat("Ab1", 12)
	ghFine       = "github" + "_pat_" + "11ABCDEFG0123456789_" + strings.Repeat("x", 40)
	huggingface  = "h" + "f_" + strings.Repeat("abXY", 8) + "cd"
	sha256Digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	sha1Commit   = "3f2a9c1e0b7d4a6f8e2c1b3d5f7a9c0e2b4d6f8a"
	uuid         = "123e4567-e89b-12d3-a456-426614174000"
	ulidText     = "01M6A6FT000000000000000006"
)

func TestSecretDetectorTable(t *testing.T) {
	for _, tc := range []struct{ text, kind string }{
		// issue 13's formats
		{"auth header was " + jwt, "jwt"},
		{"the bot uses " + slack, "slack_token"},
		{"charge with " + stripe, "stripe_key"},
		{"maps key " + google + " in the app", "google_api_key"},
		{"aws secret access key " + awsSecret, "aws_secret_access_key"},
		{"AWS creds: AKIAIOSFODNN7EXAMPLE / " + awsSecret, "aws_access_key"},
		{"aws_secret_access_key: " + awsSecret, "aws_secret_access_key"},
		{"connect with postgres://user:password@db.internal:5432/app", "url_credentials"},
		{"-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF...", "private_key_block"},
		{"password: hunter2", "secret_colon_assignment"},
		{"Password: Tr0ub4dor&3", "secret_colon_assignment"},
		// gitleaks' common rules
		{"use " + ghClassic, "github_token"},
		{"use " + ghFine, "github_fine_grained_token"},
		{"CI token " + gitlab, "gitlab_token"},
		{"publish with " + npmTok, "npm_token"},
		{"-----BEGIN PRIVATE KEY----- X", "private_key"},
		{"-----BEGIN RSA PRIVATE KEY-----", "private_key"},
		{"-----BEGIN EC PRIVATE KEY-----", "private_key"},
		{"-----BEGIN DSA PRIVATE KEY-----", "private_key"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----", "private_key"},
		{"-----BEGIN ENCRYPTED PRIVATE KEY-----", "private_key"},
		{"-----BEGIN SSH2 ENCRYPTED PRIVATE KEY-----", "private_key_block"},
		{"-----BEGIN PGP PRIVATE KEY BLOCK-----", "private_key_block"},
		{"PuTTY-User-Key-File-3: ssh-ed25519", "putty_private_key"},
		{"AGE-SECRET-KEY-1" + strings.Repeat("QZ", 29), "age_secret_key"},
		{"https://deploy:s3cr3t@git.example.com/repo.git", "url_credentials"},
		{"amqp://guest:guest@rabbit/", "url_credentials"},
		{"export API_TOKEN=abc123", "secret_assignment"},
		{"secret = 'x'", "secret_assignment"},
		{`{"client_secret": "q8Zr2vLm"}`, "secret_colon_assignment"},
		{"db.password: 'letmein'", "secret_colon_assignment"},
		{"token: 7f9e2b1c4d", "secret_colon_assignment"},
		{"ASIA" + "ABCDEFGHIJKLMNOP", "aws_access_key_id"},
		{"hook https://hooks.slack.com/services/T000/B000/" + strings.Repeat("X", 24), "slack_webhook"},
		{"hf token " + huggingface, "huggingface_token"},
		{"  -----begin private key-----  ", "private_key_block"}, // a lowercase header is a key too (issue 26)
	} {
		if got := SecretKind(tc.text); got != tc.kind {
			t.Errorf("%q: %q, want %q", tc.text, got, tc.kind)
		}
	}
}

func TestSecretDetectorPassesProse(t *testing.T) {
	for _, s := range []string{
		"Rotate the database password every 90 days",
		"passwords are hashed with argon2id before storage",
		"The password field is required on the signup form",
		"password: required, at least 12 characters",
		"Password: Optional for guests",
		"token: see the team vault entry",
		"token: GITHUB_TOKEN from the CI environment",
		"secret: ${DB_SECRET} is injected at deploy",
		"password: <from the vault>",
		"password: ********",
		"A reset token expires after one hour",
		"store secrets in Vault, never in git",
		"token budget for the model is 8k",
		"the API key goes in the keychain, not the repo",
		"sha256 " + sha256Digest + " matches the release",
		"AWS deploy of commit " + sha1Commit + " went fine",
		"aws region us-east-1, bucket logs-2026",
		"request " + uuid + " timed out",
		"event " + ulidText + " is the first",
		"memory mem_20261101_120000_a1b2c3d4e5f6",
		"clone git@github.com:tree-ring/tree-ring.git",
		"see https://github.com/tree-ring/tree-ring/issues/13",
		"ssh://git@host/repo and https://user@host/path have no password",
		"postgres://localhost:5432/app has no credentials",
		"mail ops@example.com about: the outage",
		"AIza is the prefix of Google keys",
		"sk-short",
		"eyJ starts a base64 JSON object",
		"key: value pairs are YAML",
		"the private key stays in the HSM",
		"-----BEGIN PUBLIC KEY-----",
		"-----BEGIN CERTIFICATE-----",
		"npm_config_cache is an environment variable",
		"use bcrypt, not md5",
		"secret-sauce: caching the parse tree",
	} {
		if k := SecretKind(s); k != "" {
			t.Errorf("%q flagged as %s", s, k)
		}
	}
}

// The refusal is one fixed message: no part of any input.
func TestSecretRefusalNeverEchoes(t *testing.T) {
	for _, v := range []string{jwt, stripe, slack, google, awsSecret, "hunter2"} {
		r := validRecord()
		r.Summary = "aws secret access key password: " + v
		err := r.InspectSensitivity()
		if !errors.Is(err, ErrSecretBlocked) || strings.Contains(err.Error(), v) {
			t.Fatalf("%v", err)
		}
	}
}

// The detector reads a bounded prefix: a text longer than any field may be
// is cut (Validate refuses it afterwards), never scanned whole.
func TestSecretDetectorBound(t *testing.T) {
	long := strings.Repeat("a ", maxInspectBytes/2) + stripe
	if SecretKind(long) != "" {
		t.Fatal("scanned past the bound")
	}
	if SecretKind(strings.Repeat("a ", 1000)+stripe) != "stripe_key" {
		t.Fatal("missed within the bound")
	}
}

func FuzzSecretKind(f *testing.F) {
	for _, s := range []string{jwt, stripe, slack, google, "aws " + awsSecret, "password: hunter2", "postgres://u:p@h",
		"-----BEGIN PGP PRIVATE KEY BLOCK-----", "token: 'abcd'", "ſecret=1", "prose about passwords", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := SecretKind(s)
		if k != SecretKind(s) {
			t.Fatal("not deterministic")
		}
		if (k != "") != IsSecretLike(s) || (k != "") != (InspectText(s) == SensitivitySecret) {
			t.Fatal("SecretKind, IsSecretLike and InspectText disagree")
		}
		// A secret stays one on a line of its own inside other text.
		if k != "" && len(s) < maxInspectBytes/2 && SecretKind("note\n"+s+"\nend") == "" {
			t.Fatalf("%q lost in context", s)
		}
	})
}

// TestInspectSensitivityIsTheTwoPassGuard checks the one-pass guard
// against its definition: refused if any field is secret-like, else the
// first category in field order when declared normal.
func TestInspectSensitivityIsTheTwoPassGuard(t *testing.T) {
	twoPass := func(r Record) (string, error) {
		if r.Sensitivity == SensitivitySecret || r.strings(IsSecretLike) {
			return "", ErrSecretBlocked
		}
		if r.Sensitivity != SensitivityNormal {
			return r.Sensitivity, nil
		}
		class := ""
		r.strings(func(s string) bool { class = oracleCategoryOf(s); return class != "" })
		if class != "" {
			return class, nil
		}
		return r.Sensitivity, nil
	}
	cases := []func(r *Record){
		func(r *Record) {},
		func(r *Record) { r.Source.Ref = "notes/hospital-visit.md" },
		func(r *Record) {
			r.Summary, r.Tags = "my bank account balance", []string{"diagnosis from the hospital"}
		},
		func(r *Record) { r.Summary, r.Tags = "my bank account balance", []string{"TOKEN=abc123"} },
		func(r *Record) { r.Tags = []string{"hospital"}; r.Sensitivity = "private" },
		func(r *Record) { r.Tags = []string{"TOKEN=abc123"}; r.Sensitivity = "legal" },
		func(r *Record) { r.Sensitivity = SensitivitySecret },
		func(r *Record) { r.Scope, r.Ring, r.Retention, r.Source.Type = "agent", "scar", "durable", "user" },
		func(r *Record) { r.Details = "lawyer says the court date moved; password: hunter2" },
	}
	for i, mutate := range cases {
		r := validRecord()
		mutate(&r)
		want, wantErr := twoPass(r)
		err := r.InspectSensitivity()
		if !errors.Is(err, wantErr) || err == nil && r.Sensitivity != want {
			t.Errorf("case %d: got %v %q, want %v %q", i, err, r.Sensitivity, wantErr, want)
		}
	}
}
