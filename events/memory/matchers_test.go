package memory

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every pattern of the detector is held to the regexp compiled from its
// source, on the text prepare returns (what the detector reads): the same
// MatchString for every pattern and, for the patterns a value check reads,
// the same FindAllStringSubmatchIndex, match for match.
type heldPattern struct {
	name string
	re   *regexp.Regexp
	l    *lazyRegexp
	all  bool // compare FindAll, not only MatchString
}

func heldPatterns(t testing.TB) []heldPattern {
	var ps []heldPattern
	for _, p := range secretPatterns {
		ps = append(ps, heldPattern{p.name, regexp.MustCompile(p.re.src), p.re, p.value != nil})
	}
	for _, p := range categoryPatterns {
		ps = append(ps, heldPattern{p.class, regexp.MustCompile(p.re.src), p.re, false})
	}
	return ps
}

func checkHeld(t testing.TB, ps []heldPattern, raw string) {
	t.Helper()
	s := prepare(raw)
	for _, p := range ps {
		if want, got := p.re.MatchString(s), p.l.MatchString(s); got != want {
			t.Fatalf("%s: MatchString(%q) = %v, regexp says %v", p.name, s, got, want)
		}
		if p.all {
			want, got := p.re.FindAllStringSubmatchIndex(s, -1), p.l.FindAllSubmatchIndex(s)
			if !slices.EqualFunc(want, got, slices.Equal) {
				t.Fatalf("%s: FindAll(%q) = %v, regexp says %v", p.name, s, got, want)
			}
		}
	}
}

// matcherPieces are what the generated texts are made of: the patterns'
// literals in several cases, separators, bytes outside ASCII and runs of
// the patterns' classes at the lengths the patterns count.
var matcherPieces = []string{
	"sk-", "sk-proj-", "trcap_v1_", "ghp_", "gho_", "github_pat_", "AKIA", "ASIA", "ABIA", "ACCA", "A3T", "A3TX",
	"Bearer ", "bearer\t", "BEARER\n ", "-----BEGIN ", "-----BEGIN", "-----BEGIN RSA PRIVATE KEY-----", "PRIVATE KEY-----",
	"PRIVATE KEY BLOCK-----", " PRIVATE KEY", "PuTTY-User-Key-File-", "AGE-SECRET-KEY-1", "eyJ", ".eyJ", "aws", "AWS", " aws ",
	"AWS_SECRET_ACCESS_KEY", "secret access key", "Secret-Access_Key", "secretaccesskey", "xoxb-", "xoxe-", "xapp-",
	"hooks.slack.com/services/", "hooks.slack.com/triggers/", "sk_live_", "rk_test_", "AIza", "glpat-", "glagent-", "glft-",
	"npm_", "pypi-AgEIcHlwaS5vcmc", "hf_", "dckr_pat_", "SG.", "shpat_", "shpss_", "hvs.", "hvb.", "dop_v1_", "dor_v1_",
	"://", "postgres://", "https://u", "user:pass@host", ":p@", "@h", "password", "PASSWD", "token", "Token", "api_key", "API-KEY",
	"apikey", "access_key", "access-key", "private-key", "PRIVATE_KEY", "DATABASE_URL", "database_url", "secret", "pwd", "my_",
	"diagnosis", "Medical", "medication", "bank account", "Tax Return", "salary", "lawsuit", "court order", "ssn", "SSN",
	"driver's license", "drivers license", "Social Security", "passport",
	"", " ", "  ", "=", " = ", ":", ": ", "\"", "'", "\n", "\t", ".", "-", "_", "/", "+", "@", ",", ";", "é", "\xff", "ſ",
	"\u212a", "x", "==", "\"\"", "<x>", "${X}",
}

var matcherAlphabets = []string{
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
	"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
	"0123456789abcdef", "0123456789ABCDEF", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+",
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
	"0123456789", "abcdefghijklmnopqrstuvwxyz", "aA0_-./+=~ ",
}

var matcherRunLengths = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 19, 20, 21, 22, 23, 24, 27, 32, 33, 34, 35, 36, 39, 40, 41, 43, 44, 50, 58, 59, 63, 64, 65}

func generatedText(r *rand.Rand) string {
	var b strings.Builder
	for n := 1 + r.IntN(8); n > 0; n-- {
		if r.IntN(3) == 0 {
			a := matcherAlphabets[r.IntN(len(matcherAlphabets))]
			for k := matcherRunLengths[r.IntN(len(matcherRunLengths))]; k > 0; k-- {
				b.WriteByte(a[r.IntN(len(a))])
			}
			continue
		}
		b.WriteString(matcherPieces[r.IntN(len(matcherPieces))])
	}
	return b.String()
}

// The seeds: texts each pattern matches, and texts near them.
var matcherSeeds = []string{
	"key sk-" + strings.Repeat("a", 20), "sk-proj-" + strings.Repeat("A1_-", 6) + "-", "trcap_v1_" + strings.Repeat("ab", 32),
	"ghp_" + strings.Repeat("x", 20), "github_pat_" + strings.Repeat("1", 22), "AKIAABCDEFGHIJKLMNOP", "A3TXABCDEFGHIJKL2345",
	"Authorization: Bearer " + strings.Repeat("abc.", 6), "-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN PGP PRIVATE KEY BLOCK-----",
	"PuTTY-User-Key-File-2: ssh-rsa", "AGE-SECRET-KEY-1" + strings.Repeat("Q", 58), "eyJhbGciOiJI.eyJzdWIiOiIx.sig",
	"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS x\n" + strings.Repeat("Ab1/", 10) + "=",
	"secret access key:" + strings.Repeat("aB3+", 10) + " and aws " + strings.Repeat("zY9/", 10),
	"xoxb-1234567890-abc", "hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX", "sk_live_" + strings.Repeat("9", 10),
	"AIza" + strings.Repeat("b", 35), "glpat-" + strings.Repeat("c", 20), "npm_" + strings.Repeat("d", 36),
	"pypi-AgEIcHlwaS5vcmc" + strings.Repeat("e", 50), "hf_" + strings.Repeat("f", 34), "dckr_pat_" + strings.Repeat("g", 27),
	"SG." + strings.Repeat("h", 22) + "." + strings.Repeat("i", 43), "shpat_" + strings.Repeat("a1", 16), "hvs." + strings.Repeat("j", 24),
	"dop_v1_" + strings.Repeat("0f", 32), "postgres://admin:hunter2@db.internal/app", "see https://user:@host",
	"password: \"correct horse\"", "token: 'abcd'", "client_secret: Zx9-long.value", "my.api-key\" : value12;",
	"PASSWORD=hunter2", "DATABASE_URL = 'postgres://x'", "xdatabase_url=1", "API_KEY=\n", "pwd =\t\"\"",
	"The diagnosis was routine", "bank accounts", "a salary.", "a subpoena.", "my SSN", "driver's license", "Drivers License",
	"ſk-" + strings.Repeat("a", 20), "bearer\u212a", "é" + "ghp_" + strings.Repeat("x", 20) + "é",
	"aws " + strings.Repeat("é", 39) + "\xff" + strings.Repeat("Ab1/", 10),
}

func TestMatchersAreTheirRegexps(t *testing.T) {
	ps := heldPatterns(t)
	for _, s := range matcherSeeds {
		checkHeld(t, ps, s)
	}
	r := rand.New(rand.NewPCG(14, 7))
	n := 30000
	if testing.Short() {
		n = 3000
	}
	for range n {
		checkHeld(t, ps, generatedText(r))
	}
}

// Each seed matches the pattern it was written for: the generated texts
// above are no use if the patterns never match.
func TestMatcherSeedsMatch(t *testing.T) {
	matched := map[string]bool{}
	for _, p := range heldPatterns(t) {
		for _, s := range matcherSeeds {
			if p.l.MatchString(prepare(s)) {
				matched[p.name] = true
			}
		}
	}
	for _, p := range heldPatterns(t) {
		if !matched[p.name] {
			t.Errorf("no seed matches %s", p.name)
		}
	}
}

// FuzzMatchersAreTheirRegexps: on any text, every hand-written matcher
// agrees with its pattern's regexp.
func FuzzMatchersAreTheirRegexps(f *testing.F) {
	for _, s := range matcherSeeds {
		f.Add(s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		f.Add(generatedText(r))
	}
	ps := heldPatterns(f)
	f.Fuzz(func(t *testing.T, s string) {
		checkHeld(t, ps, s)
	})
}
