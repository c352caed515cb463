package memory

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// More fake credentials of real formats, assembled at run time.
var (
	awsKeyID = "AK" + "IAIOSFODNN7EXAMPLE"
	discord  = "MTIzNDU2Nzg5MDEyMzQ1Njc4" + "OQ.GhT3aB." + "dQw4w9WgXcQ_abcdefghijklmnopqrstu"
	telegram = "123456789" + ":AAH" + "dqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	twilio   = "S" + "K" + "0123456789abcdef0123456789abcdef"
	mailgun  = "ke" + "y-" + "3ax6xnjp29jd6fds4gc373sgvjxteol0"
	azureKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq" + "/K1SZFPTOtr/KBHBeksoGMGw=="
	basicB64 = base64.StdEncoding.EncodeToString([]byte("deploy:" + "hunter2hunter2"))
)

// The formats issue 26 found stored: each is now refused, also when its
// bytes hide it from a pattern that reads encodings (format characters,
// compatibility forms, confusables, a line break or spaces inside).
func TestSecretsAfterNormalization(t *testing.T) {
	fullwidth := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r > ' ' && r < 0x7f {
				return r - '!' + '！'
			}
			return r
		}, s)
	}
	for _, tc := range []struct{ name, text string }{
		{"github zero-width space", "use " + ghClassic[:8] + "\u200b" + ghClassic[8:]},
		{"github word joiner", "use gh\u2060p_" + ghClassic[4:]},
		{"github soft hyphen", "use " + ghClassic[:10] + "\u00ad" + ghClassic[10:]},
		{"github zwnj zwj bom", "use \ufeff" + ghClassic[:3] + "\u200c" + ghClassic[3:12] + "\u200d" + ghClassic[12:]},
		{"github fullwidth", "token " + fullwidth(ghClassic)},
		{"aws cyrillic A", "creds \u0410" + awsKeyID[1:]},
		{"aws cyrillic K and A", "creds A\u041a\u0406" + awsKeyID[3:]},
		{"aws underscores", "old key _" + awsKeyID + "_old"},
		{"aws spaced", "key " + awsKeyID[:8] + " " + awsKeyID[8:16] + " " + awsKeyID[16:]},
		{"github wrapped", "token " + ghClassic[:20] + "\n    " + ghClassic[20:]},
		{"pem lowercase", "-----begin rsa private key-----\nMIIEow..."},
		{"pem fullwidth", fullwidth("-----BEGIN") + " RSA PRIVATE KEY-----"},
		{"basic auth", "Authorization: Basic " + basicB64},
		{"azure account key", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + azureKey + ";EndpointSuffix=core.windows.net"},
		{"discord", "bot token " + discord},
		{"telegram", "bot " + telegram + " for alerts"},
		{"twilio", "twilio key " + twilio},
		{"mailgun", "mailgun " + mailgun},
		{"sshpass", "sshpass -p 'Sup3r$ecret' ssh deploy@host"},
		{"sshpass unquoted", "run sshpass -e -p hunter22 scp a b"},
		{"password flag", "mysql -u root --password S3cr3t!pw db"},
		{"token flag", "gh auth login --token 7f3e9a1c2b"},
		{"pgpass", "db.internal:5432:app:deploy:Tr0ub4dor3"},
		{"pgpass wildcard", "notes\n*:*:*:postgres:hunter2hunter2\n"},
	} {
		if k := SecretKind(tc.text); k == "" {
			t.Errorf("%s: %q not flagged", tc.name, tc.text)
		}
	}
}

// Ordinary technical prose is not a secret: package paths and Go doc
// lines (`go/token: IsValid ...` blocked a 5,000-memory import), digests,
// ids, dates, URLs without credentials, and the words the new rules key on.
func TestHarmlessTechnicalProse(t *testing.T) {
	for _, s := range []string{
		"go/token: IsValid reports whether the token is valid",
		"go/token: Pos is a compact encoding of a source position",
		"net/http: Client.Do sends an HTTP request and returns an HTTP response",
		"pkg/name: Func returns the name of the package",
		"io: ReadCloser is the interface that groups Read and Close",
		"token: IsValid",
		"oauth2/token: TokenSource supplies tokens",
		"sha256:" + sha256Digest,
		"commit " + sha1Commit + " and " + strings.ToUpper(sha1Commit),
		"request " + uuid + " at 2026-12-01T21:13:40Z",
		"released 2026-12-01, 10:30:00 UTC",
		"https://pkg.go.dev/golang.org/x/text/unicode/norm#Form.String",
		"https://example.com:8443/path?q=1#frag",
		"Basic authentication is disabled; use Basic auth only behind TLS",
		"sshpass -p \"$SSHPASS\" ssh host",
		"sshpass -p $PASS ssh host",
		"--password-file /run/secrets/db is preferred over --password",
		"gh auth login --token $GITHUB_TOKEN",
		"pass --password flag only in tests",
		"a key-value store keeps key-values",
		"SKU SK-1234 is out of stock; ask the desk",
		"the task list has 32 items",
		"use ghp_ tokens for the CI bot",
		"README TODO FIXME NOTE",
		"Run make before pushing; the CI lint step fails otherwise",
		"Секретный ключ хранится в хранилище, не в репозитории",
		"Ключ АРІ выдаётся администратором",
		"ﬁle names use NFKC; ｆｕｌｌｗｉｄｔｈ text is fine",
		"zero\u200bwidth spaces in prose are harmless",
		"telegram bot 123456789 replies",
		"time 12:30:45 on 2026-12-01, ratio 1:2:3:4",
		"host:port:db:user:password is the pgpass format",
		"see golang.org/x/text@v0.43.0 and github.com/looplab/fsm@v1.0.3",
		"ulid " + ulidText + ", memory mem_20261101_120000_a1b2c3d4e5f6",
		"AccountName=devstoreaccount1;AccountKey=<from the portal>",
	} {
		if k := SecretKind(s); k != "" {
			t.Errorf("%q flagged as %s", s, k)
		}
	}
}

// The normalization removes every format character and folds what the
// tests use; ASCII is left as it is.
func TestNormalize(t *testing.T) {
	if !slices.IsSortedFunc(confusables[:], func(a, b fold) int { return int(a.from - b.from) }) {
		t.Fatal("confusables is not sorted: the binary search misses")
	}
	for in, want := range map[string]string{
		"g\u200bh\u200cp\u200d_\u2060x\u00ady\ufeff": "ghp_xy",
		"ｇｈｐ＿ＡＢＣ１":                                   "ghp_ABC1",
		"\u0410\u041a\u0406\u0410":                   "AKIA",
		"ſecret \u212aey ﬁle":                        "secret Key file",
		"plain ASCII: a=b":                           "plain ASCII: a=b",
		"e\u200b\u0301":                              "é",
	} {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"AKIAIOSF ODNN7EXA MPLE": "AKIAIOSFODNN7EXAMPLE",
		"ab12cd34\n  ef56GH78":   "ab12cd34ef56GH78",
		"ab12cd34\n\nef56GH78":   "", // a paragraph break separates
		"use ghp_ tokens now":    "",
		"x AB12 cd":              "",
	} {
		if got := joinSplits(in); got != want {
			t.Errorf("joinSplits(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzNormalize: the detector's text is bounded, has no format character
// and no folded confusable left, ASCII passes unchanged, and joinSplits
// removes only whitespace.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"", "ascii", "g\u200bhp_", "ｇｈｐ", "\u0410KIA", "e\u200b\u0301", "\ufdfa", "ab12 CD34\nEF56", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		text := prepare(s)
		if len(text) > maxInspectBytes {
			t.Fatalf("prepared text is %d bytes", len(text))
		}
		if utf8.ValidString(s) && len(s) < 1<<16 {
			n := normalize(s)
			if len(n) > 18*len(s)+3 { // NFKC's longest expansion is 18 runes for one
				t.Fatalf("normalize grew %d bytes to %d", len(s), len(n))
			}
			for _, r := range n {
				if unicode.Is(unicode.Cf, r) || r != confusable(r) {
					t.Fatalf("normalize(%q) left %U", s, r)
				}
			}
		}
		ascii := true
		for i := 0; i < len(s); i++ {
			ascii = ascii && s[i] < 0x80
		}
		if ascii && len(s) <= maxInspectBytes && text != s {
			t.Fatalf("ASCII changed: %q -> %q", s, text)
		}
		if j := joinSplits(text); j != "" {
			strip := func(x string) string {
				return strings.Map(func(r rune) rune {
					if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
						return -1
					}
					return r
				}, x)
			}
			if len(j) >= len(text) || strip(j) != strip(text) {
				t.Fatalf("joinSplits(%q) = %q", text, j)
			}
		}
	})
}
