package memory

import (
	"encoding/base64"
	"math/bits"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tree-ring/tree-ring/events"
)

// Sensitivity classes returned by InspectText.
const (
	SensitivityNormal = "normal"
	SensitivitySecret = "secret"
)

// ErrSecretBlocked is the published refusal of secret-like content. It
// carries no part of the content.
var ErrSecretBlocked error = &RefusedError{Code: "secret_blocked", Reason: "secret-like memory is blocked by policy"}

// The published detector (core/src/sensitivity.rs), then ours. Secret
// patterns are checked first; category patterns only when no secret
// matched, first match wins. Go's \b is ASCII-only where Rust's is
// Unicode-aware: next to a non-ASCII letter Go sees a boundary Rust does
// not, so Go flags slightly more, never less (the text is normalized
// first, so the runes that fold into the patterns' ASCII letters are those
// letters: see prepare).
// The private-key rule also flags a lone BEGIN line (a truncated key is
// still a key); the published pattern needs the END line.
//
// The published patterns miss common credentials (issue 13: a JWT, Slack,
// Stripe and Google keys, an AWS secret access key, URL credentials, a PGP
// private key block, `password: ...` passed and were recalled and
// exported), so ours follow them: the formats of the common rules of
// gitleaks' default configuration, written from the formats' public
// descriptions. Every pattern is compiled on first use (lazy), guarded by
// literal triggers, and run on at most maxInspectBytes.
var (
	secretPatterns = []secretRule{
		// Published.
		{name: "openai_key", triggers: []string{"sk-"}, re: lazy(`\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}\b`)},
		{name: "tree_ring_coordinator_capability", triggers: []string{"trcap_v1_"}, re: lazy(`trcap_v1_[A-Fa-f0-9]{64}`)},
		{name: "github_token", triggers: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, re: lazy(`\bgh[pousr]_[A-Za-z0-9_]{20,}\b`)},
		{name: "github_fine_grained_token", triggers: []string{"github_pat_"}, re: lazy(`\bgithub_pat_[A-Za-z0-9_]{20,}\b`)},
		{name: "aws_access_key", triggers: []string{"akia"}, re: lazy(`\bAKIA[0-9A-Z]{16}\b`)},
		{name: "bearer_token", triggers: []string{"bearer"}, re: lazy(`(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{20,}\b`)},
		{name: "private_key", triggers: []string{"-----begin"}, re: lazy(`-----BEGIN (?:(?:RSA|EC|OPENSSH|DSA|ENCRYPTED) )?PRIVATE KEY-----`)},
		{name: "secret_assignment", triggers: []string{"api", "key", "secret", "token", "password", "passwd", "pwd", "database_url"}, requires: "=",
			re: lazy(`(?i)\b(?:[A-Z0-9_]*(?:API[_-]?KEY|PRIVATE[_-]?KEY|SECRET(?:_ACCESS_KEY)?|TOKEN|PASSWORD|PASSWD|PWD)|DATABASE_URL)\s*=\s*(?:"[^"\n]*"|'[^'\n]*'|\S+)`)},

		// Ours.
		{name: "private_key_block", triggers: []string{"-----begin", "private key"},
			re: lazy(`(?i)-----BEGIN[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----`)},
		{name: "putty_private_key", triggers: []string{"putty-user-key-file-"}, re: lazy(`PuTTY-User-Key-File-[0-9]+:`)},
		{name: "age_secret_key", triggers: []string{"age-secret-key-1"}, re: lazy(`AGE-SECRET-KEY-1[0-9A-Z]{58}`)},
		{name: "jwt", triggers: []string{"eyj"}, re: lazy(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)},
		// Bounded by any non-alphanumeric, '_' included: `_AKIA…_old`.
		{name: "aws_access_key_id", triggers: []string{"akia", "asia", "abia", "acca", "a3t"},
			re: lazy(`(?:^|[^A-Za-z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?:[^A-Za-z0-9]|$)`)},
		// A secret access key is 40 characters of base64 with no prefix of
		// its own: only in the context of AWS or of its name, and only if
		// it looks random (a 40-hex git commit id does not).
		{name: "aws_secret_access_key", triggers: []string{"aws", "secret access key", "secret_access_key", "secretaccesskey", "secret-access-key"},
			pre:   hasBase64Run40,
			re:    lazy(`(?i)(?:\baws|secret[ _-]?access[ _-]?key)[^\n]{0,40}?(?:^|[^A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`),
			value: randomLooking},
		{name: "slack_token", triggers: []string{"xox", "xapp-"}, re: lazy(`\b(?:xox[abposre]|xapp)-[0-9A-Za-z-]{10,}`)},
		{name: "slack_webhook", triggers: []string{"hooks.slack.com/"}, re: lazy(`hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,}`)},
		{name: "stripe_key", triggers: []string{"sk_", "rk_"}, re: lazy(`\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}`)},
		{name: "google_api_key", triggers: []string{"aiza"}, re: lazy(`\bAIza[0-9A-Za-z_-]{35}`)},
		{name: "gitlab_token", triggers: []string{"glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "glimt-", "glsoat-", "glffct-", "glagent-", "gloas-", "glft-"},
			re: lazy(`\bgl(?:pat|dt|ptt|rt|cbt|imt|soat|ffct|agent|oas|ft)-[0-9A-Za-z_-]{20,}`)},
		{name: "npm_token", triggers: []string{"npm_"}, re: lazy(`\bnpm_[A-Za-z0-9]{36}\b`)},
		{name: "pypi_token", triggers: []string{"pypi-"}, re: lazy(`pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`)},
		{name: "huggingface_token", triggers: []string{"hf_"}, re: lazy(`\bhf_[A-Za-z]{34}\b`)},
		{name: "docker_pat", triggers: []string{"dckr_pat_"}, re: lazy(`\bdckr_pat_[A-Za-z0-9_-]{27,}`)},
		{name: "sendgrid_key", triggers: []string{"sg."}, re: lazy(`\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b`)},
		{name: "shopify_token", triggers: []string{"shpat_", "shpca_", "shppa_", "shpss_"}, re: lazy(`\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`)},
		{name: "vault_token", triggers: []string{"hvs.", "hvb."}, re: lazy(`\bhv[sb]\.[A-Za-z0-9_-]{24,}`)},
		{name: "digitalocean_token", triggers: []string{"dop_v1_", "doo_v1_", "dor_v1_"}, re: lazy(`\bdo[opr]_v1_[a-f0-9]{64}\b`)},
		// user:password@ in a URL (postgres://, https://, amqp://, ...).
		{name: "url_credentials", triggers: []string{"://"}, requires: "@", re: lazy(`\b[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s/:@]{1,256}:[^\s/@]{1,256}@[^\s/@]`)},
		// password: ..., "token": "...", client_secret: ... (the published
		// rule covers only `=`). An unquoted value must look like a
		// credential, not a word of prose (see credentialLooking).
		// A key right after '/' is a package path (`go/token: IsValid
		// reports ...`), not an assignment.
		{name: "secret_colon_assignment", triggers: []string{"password", "passwd", "secret", "token", "api", "key"}, requires: ":",
			re:    lazy(`(?i)(?:^|[^A-Z0-9_./-])[A-Z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key)["']?\s*:\s*("[^"\n]{4,}"|'[^'\n]{4,}'|[^\s"',;]{6,})`),
			value: credentialLooking},
		// Authorization: Basic <base64 of user:password>.
		{name: "basic_auth", triggers: []string{"basic"},
			re:    lazy(`(?i)\bbasic\s+([A-Za-z0-9+/]{8,}={0,2})(?:[^A-Za-z0-9+/=]|$)`),
			value: basicCredential},
		// Azure storage and Service Bus connection strings.
		{name: "azure_storage_key", triggers: []string{"accountkey", "sharedaccesskey"},
			re: lazy(`(?i)\b(?:AccountKey|SharedAccessKey)\s*=\s*[A-Za-z0-9+/]{20,}`)},
		// Discord bot token: base64 of the bot's id, a timestamp, an HMAC.
		// No literal prefix: a shape scan (pre) guards it.
		{name: "discord_bot_token", pre: hasDottedTriple,
			re:    lazy(`(?:^|[^A-Za-z0-9_-])([MNO][A-Za-z0-9_-]{23,27})\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?:[^A-Za-z0-9_-]|$)`),
			value: mixedAlnum},
		// Telegram bot token: the bot id, a colon, 33 to 35 characters
		// from AA.
		{name: "telegram_bot_token", triggers: []string{":aa"},
			re: lazy(`(?:^|[^0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{31,33}(?:[^A-Za-z0-9_-]|$)`)},
		// Twilio API key SID: SK and 32 hexadecimal digits. "sk" as a
		// trigger would fire on every "task": an exact-case search (pre)
		// guards it instead.
		{name: "twilio_api_key", pre: hasSKHex32,
			re: lazy(`(?:^|[^A-Za-z0-9])SK[0-9a-fA-F]{32}(?:[^A-Za-z0-9]|$)`)},
		{name: "mailgun_key", triggers: []string{"key-"}, re: lazy(`\bkey-[0-9a-zA-Z]{32}\b`)},
		// A password on a command line: sshpass -p, --password VALUE.
		{name: "sshpass_password", triggers: []string{"sshpass"},
			re:    lazy(`\bsshpass\b[^\n]*?\s-p\s*('[^'\n]+'|"[^"\n]+"|[^\s'"]+)`),
			value: literalValue},
		{name: "password_flag", triggers: []string{"--pass", "--token", "--secret", "--api-key", "--api_key", "--client-secret", "--auth-token"},
			re:    lazy(`(?i)(?:^|\s)--(?:password|passwd|pass|token|secret|api[-_]key|client-secret|auth-token)(?:\s+|=)('[^'\n]+'|"[^"\n]+"|[^\s'"-][^\s'"]*)`),
			value: credentialLooking},
		// The formats below were added for issue 26 item 10 from the
		// misses of the gitleaks differential (testdata/gitleaks).
		{name: "service_token", triggers: serviceTokenTriggers, re: lazy(serviceTokenPattern)},
		{name: "service_token_short_prefix", triggers: serviceTokenShortTriggers, re: lazy(serviceTokenShortPattern)},
		// A credential assigned in code or configuration, where the
		// published rule's `NAME = value` does not reach: `apiToken := "…"`,
		// `$token .= "…"`, `"token" => "…"`, `var token string = "…"`,
		// `setProperty("API_TOKEN", "…")`, `<apiToken>…</apiToken>`. The value
		// is quoted (or an element's text) and must look like a credential.
		{name: "secret_code_assignment", triggers: []string{"password", "passwd", "secret", "token", "api", "key"}, pre: hasCodeAssignment,
			re: lazy(`(?i)(?:^|[^A-Z0-9_])[A-Z0-9_.-]*` + secretNames + `["']?(?:\s*(?:[:?.|+]{0,3}=|=>|,)|(?:\s*:)?\s+string\s*=)\s*` +
				`("[^"\n]{4,}"|'[^'\n]{4,}'|` + "`[^`\\n]{4,}`" + `)|<[A-Z0-9_.-]*` + secretNames + `>\s*([^\s<>]{4,})\s*</`),
			value: codeCredential},
		// curl -u user:password (on the command's line or its
		// backslash-continued lines), and an Authorization or API key header
		// whose value carries no scheme (a scheme's value is bearer_token's
		// or basic_auth's).
		{name: "curl_user", triggers: []string{"curl"},
			re:    lazy(`\bcurl\b(?:[^\n]|\\\n)*?\s(?:-u|--user)(?:=|[ \t]+)((?:'[^'\n]*'|"[^"\n]*"|[^\s'"])+)`),
			value: userPassword},
		{name: "curl_auth_header", triggers: []string{"curl"},
			re: lazy(`(?i)\bcurl\b(?:[^\n]|\\\n)*?\s(?:-H|--header)(?:=|[ \t]+)['"]?(?:authorization|(?:x-)?api-?key|x-auth-token|x-api-token):[ \t]*` +
				`([A-Za-z0-9=~@.+/_-]{8,})(?:['"\s]|$)`),
			value: literalValue},
		// A HashiCorp Vault service token of the legacy format: s. and 24
		// alphanumerics. "s." ends many a word, so a shape scan (pre)
		// guards it, not a trigger.
		{name: "vault_legacy_token", pre: hasLegacyVaultToken,
			re:    lazy(`(?:^|[^A-Za-z0-9_.])s\.([A-Za-z0-9]{24})(?:[^A-Za-z0-9_.]|$)`),
			value: mixedAlnum},
		// A .pgpass line: host:port:database:user:password.
		{name: "pgpass_line", pre: hasFourColons,
			re:    lazy(`(?m)^[A-Za-z0-9.*_\[\]-]+:(?:[0-9]{1,5}|\*):[^:\s]+:[^:\s]+:([^:\s]{3,})\s*$`),
			value: literalValue},
	}
	categoryPatterns = []struct {
		class    string
		triggers []string
		re       *lazyRegexp
	}{
		{"health", []string{"diagnos", "medica", "prescription", "therapy", "hospital"},
			lazy(`(?i)\b(diagnosis|diagnosed|medical|medication|prescription|therapy|hospital)\b`)},
		{"financial", []string{"bank account", "routing number", "credit card", "tax return", "paystub", "salary"},
			lazy(`(?i)\b(bank account|routing number|credit card|tax return|paystub|salary)\b`)},
		{"legal", []string{"lawsuit", "attorney", "legal advice", "court order", "subpoena", "contract dispute"},
			lazy(`(?i)\b(lawsuit|attorney|legal advice|court order|subpoena|contract dispute)\b`)},
		{"personal_identifier", []string{"ssn", "social security", "passport", "driver"},
			lazy(`(?i)\b(ssn|social security|passport|driver'?s license)\b`)},
	}
)

// lazyRegexp is one pattern, compiled on its first use: a rule's regexp
// runs only when its triggers occur, so a process whose texts trigger
// nothing (most hooks) compiles none, and start-up compiles none
// (TestNoRegexpCompiledAtInit). Safe for concurrent use.
type lazyRegexp struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

func lazy(src string) *lazyRegexp { return &lazyRegexp{src: src} }

func (l *lazyRegexp) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.src) })
	return l.re
}

// MatchString reports whether s has a match.
func (l *lazyRegexp) MatchString(s string) bool { return l.get().MatchString(s) }

// FindAllSubmatchIndex returns the index pairs of every match of s and of
// its submatches, left to right.
func (l *lazyRegexp) FindAllSubmatchIndex(s string) [][]int {
	return l.get().FindAllStringSubmatchIndex(s, -1)
}

// triggerIndex finds, in one pass over a text, which rules have a trigger
// in it: the same answer as one strings.Contains per trigger on the folded
// text (TestTriggerIndexIsContains, FuzzDetectorIsTheOracle), for a
// fraction of the work. ASCII letters are lowered as they are read and
// triggers are ASCII, so no text needs a folded copy; a bigram filter
// skips most positions and the triggers starting at the rest are compared
// in full. Read only once built.
type triggerIndex struct {
	bigram [1 << 16 / 8]byte // bit b0<<8|b1 set when a trigger starts with b0 b1
	start  [257]uint16       // the triggers starting with byte c are lits[start[c]:start[c+1]]
	lits   []trigger
}

// trigger is one literal and the rules it triggers: bit i for secret rule
// i, bit 63-j for category j.
type trigger struct {
	lit   string
	rules uint64
}

func categoryBit(j int) uint64 { return 1 << (63 - j) }

func newTriggerIndex(secrets []secretRule) *triggerIndex {
	if len(secrets)+len(categoryPatterns) > 64 {
		panic("memory: more rules than the trigger mask holds")
	}
	// A literal shared by several rules is listed once per rule: scan
	// skips a trigger whose rules are all found already.
	all := make([]trigger, 0, 128)
	add := func(lit string, bit uint64) {
		if len(lit) < 2 {
			panic("memory: a trigger shorter than the bigram filter: " + lit)
		}
		for i := 0; i < len(lit); i++ {
			if c := lit[i]; c >= 0x80 || c-'A' < 26 {
				panic("memory: a trigger must be lower-case ASCII: " + lit)
			}
		}
		all = append(all, trigger{lit: lit, rules: bit})
	}
	for i, p := range secrets {
		for _, t := range p.triggers {
			add(t, 1<<i)
		}
	}
	for j, p := range categoryPatterns {
		for _, t := range p.triggers {
			add(t, categoryBit(j))
		}
	}
	x := &triggerIndex{lits: make([]trigger, len(all))}
	for _, t := range all {
		x.start[t.lit[0]+1]++
		k := uint16(t.lit[0])<<8 | uint16(t.lit[1])
		x.bigram[k>>3] |= 1 << (k & 7)
	}
	for c := 1; c < len(x.start); c++ {
		x.start[c] += x.start[c-1]
	}
	next := x.start
	for _, t := range all {
		x.lits[next[t.lit[0]]] = t
		next[t.lit[0]]++
	}
	return x
}

func lowerASCII(c byte) byte {
	if c-'A' < 26 {
		return c + 'a' - 'A'
	}
	return c
}

// scan returns the rules of every trigger that occurs in s, ASCII letters
// compared without case.
func (x *triggerIndex) scan(s string) uint64 {
	var m uint64
	for i := 0; i+1 < len(s); i++ {
		c := lowerASCII(s[i])
		k := uint16(c)<<8 | uint16(lowerASCII(s[i+1]))
		if x.bigram[k>>3]&(1<<(k&7)) == 0 {
			continue
		}
	next:
		for _, t := range x.lits[x.start[c]:x.start[c+1]] {
			if m&t.rules == t.rules || len(s)-i < len(t.lit) {
				continue
			}
			for j := 1; j < len(t.lit); j++ {
				if lowerASCII(s[i+j]) != t.lit[j] {
					continue next
				}
			}
			m |= t.rules
		}
	}
	return m
}

// maxInspectBytes bounds what the detector reads of one text: more than
// any field may hold (Validate refuses a longer one after the guard, so
// nothing past the bound is ever written), so matching stays linear in a
// bounded input.
const maxInspectBytes = 1 << 20

// secretRule is one secret pattern. When value is set, a match counts only
// if value accepts the pattern's first group.
//
// Go's regexp finds no literal prefix in a pattern that starts with \b or
// a class, so a search costs a few hundred nanoseconds per byte; triggers,
// requires and pre are linear scans that skip it when it cannot match.
type secretRule struct {
	name     string
	triggers []string // lowercase ASCII; the regexp runs only if one occurs
	requires string   // a substring every match contains
	pre      func(string) bool
	re       *lazyRegexp
	value    func(string) bool
}

func (p *secretRule) matches(s string) bool {
	if p.requires != "" && !strings.Contains(s, p.requires) || p.pre != nil && !p.pre(s) {
		return false
	}
	if p.value == nil {
		return p.re.MatchString(s)
	}
	for _, m := range p.re.FindAllSubmatchIndex(s) {
		if v, ok := firstGroup(s, m); ok && p.value(v) {
			return true
		}
	}
	return false
}

// firstGroup returns the first submatch of match m that took part in it:
// a pattern with alternatives holds its value in one group per
// alternative.
func firstGroup(s string, m []int) (string, bool) {
	for i := 2; i+1 < len(m); i += 2 {
		if m[i] >= 0 {
			return s[m[i]:m[i+1]], true
		}
	}
	return "", false
}

// secretNames are the words that name a credential in an assignment.
const secretNames = `(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key)`

// codeCredential reports whether the value of a code assignment (quoted,
// or an element's text) is a credential: one word of at least 6
// characters, neither a placeholder nor an environment variable's name,
// with a digit, a symbol or inner upper case, or of at least 16 letters
// (`token := "refresh"` is a word).
func codeCredential(v string) bool {
	if q := v[0]; (q == '"' || q == '\'' || q == '`') && len(v) >= 2 {
		v = v[1 : len(v)-1]
	}
	if len(v) < 6 || strings.ContainsAny(v, " \t") || placeholder(v) || isEnvName(v) {
		return false
	}
	symbol, innerUpper := valueShape(v)
	return symbol || innerUpper || len(v) >= 16
}

// hasCodeAssignment is the cheap guard of secret_code_assignment: an
// assignment operator, a closing element or a quoted argument list.
func hasCodeAssignment(s string) bool {
	return strings.Contains(s, "=") || strings.Contains(s, "</") || strings.Contains(s, "\",") || strings.Contains(s, "',")
}

// userPassword reports whether curl's -u value, one shell word whose
// parts may be quoted (`kevin:'pass'`, `"user":"pass"`), holds a literal
// password: user:password or :password, not a variable.
func userPassword(v string) bool {
	v = strings.NewReplacer(`"`, "", "'", "").Replace(v)
	_, pass, ok := strings.Cut(v, ":")
	return ok && pass != "" && literalValue(pass)
}

// hasLegacyVaultToken reports whether s has "s." followed by 24
// alphanumerics and then no further alphanumeric.
func hasLegacyVaultToken(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], "s.")
		if j < 0 {
			return false
		}
		i += j + 2
		n := 0
		for i+n < len(s) && n <= 24 && isAlnum(s[i+n]) {
			n++
		}
		if n == 24 {
			return true
		}
	}
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// SecretKind returns the name of the first secret pattern s matches ("" for
// none). The name is public (a rule, never a value).
func SecretKind(s string) string {
	if i, _ := theDetector().detect(s, false); i >= 0 {
		return secretPatterns[i].name
	}
	return ""
}

// IsSecretLike reports whether s matches a secret pattern.
func IsSecretLike(s string) bool { return SecretKind(s) != "" }

// hasBase64Run40 reports whether s has 40 consecutive characters of
// [A-Za-z0-9/+], as an AWS secret access key is.
func hasBase64Run40(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '/' || c == '+' {
			if n++; n >= 40 {
				return true
			}
		} else {
			n = 0
		}
	}
	return false
}

// randomLooking reports whether a 40-character candidate AWS secret mixes
// upper case, lower case and digits and is not hexadecimal.
func randomLooking(v string) bool {
	var upper, lower, digit, nonHex bool
	for _, c := range v {
		switch {
		case c >= 'A' && c <= 'Z':
			upper, nonHex = true, true
		case c >= 'a' && c <= 'z':
			lower = true
			nonHex = nonHex || c > 'f'
		case c >= '0' && c <= '9':
			digit = true
		default:
			nonHex = true
		}
	}
	return upper && lower && digit && nonHex
}

// credentialLooking reports whether the value of a `key: value` pair is a
// credential rather than prose: a quoted value of one word; an unquoted
// one that has a digit or a symbol other than the word joiners - _ . ', or
// of letters only, at least 24 with upper case after its first letter
// (shorter is an identifier: `go/token: IsValid reports ...`), and is
// neither a placeholder (<...>, ${...}, $VAR, ***) nor an environment
// variable's name.
func credentialLooking(v string) bool {
	if q := v[0]; q == '"' || q == '\'' {
		inner := strings.TrimSpace(v[1 : len(v)-1])
		return len(inner) >= 4 && !strings.ContainsAny(inner, " \t") && !placeholder(inner)
	}
	v = strings.TrimRight(v, ".:)]}")
	if len(v) < 6 || placeholder(v) || isEnvName(v) {
		return false
	}
	symbol, innerUpper := valueShape(v)
	// Letters only: an identifier (IsValid, ReadCloser) unless long
	// enough to be a random token.
	return symbol || innerUpper && len(v) >= 24
}

// valueShape reports whether v has a digit or a symbol other than the
// word joiners - _ . ', and whether it has upper case after its first
// letter.
func valueShape(v string) (symbol, innerUpper bool) {
	for i, c := range v {
		switch {
		case c >= 'A' && c <= 'Z':
			innerUpper = innerUpper || i > 0
		case c >= 'a' && c <= 'z', c >= 0x80, c == '-', c == '_', c == '.', c == '\'':
		default:
			return true, innerUpper
		}
	}
	return false, innerUpper
}

// literalValue reports whether a command-line value (quoted or not) is a
// literal, not a placeholder or a variable ($PASS, "$SSHPASS", <secret>).
func literalValue(v string) bool {
	if q := v[0]; (q == '"' || q == '\'') && len(v) >= 2 {
		v = v[1 : len(v)-1]
	}
	return len(v) >= 3 && !placeholder(v) && !isEnvName(v)
}

// basicCredential reports whether v is the base64 of user:password, as
// HTTP Basic authentication sends it (prose after "Basic" decodes to
// bytes that are not such text).
func basicCredential(v string) bool {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "=")); err != nil {
			return false
		}
	}
	colon := false
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
		colon = colon || c == ':'
	}
	return colon && len(b) >= 3 && utf8.Valid(b)
}

// mixedAlnum reports whether v has upper case, lower case and a digit, as
// the base64 of a number does.
func mixedAlnum(v string) bool {
	var upper, lower, digit bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		upper = upper || c >= 'A' && c <= 'Z'
		lower = lower || c >= 'a' && c <= 'z'
		digit = digit || c >= '0' && c <= '9'
	}
	return upper && lower && digit
}

// hasDottedTriple is the shape of a Discord bot token: at least 23
// base64url characters, a dot, exactly 6, a dot.
func hasDottedTriple(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '.' && run >= 23 && i+7 < len(s) && s[i+7] == '.' && base64URLRun(s[i+1:i+7]) {
			return true
		}
		if isBase64URL(c) {
			run++
		} else {
			run = 0
		}
	}
	return false
}

func isBase64URL(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func base64URLRun(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isBase64URL(s[i]) {
			return false
		}
	}
	return true
}

// hasSKHex32 reports whether s has "SK" followed by 32 hexadecimal digits.
func hasSKHex32(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], "SK")
		if j < 0 || i+j+34 > len(s) {
			return false
		}
		i += j + 2
		n := 0
		for n < 32 && isHex(s[i+n]) {
			n++
		}
		if n == 32 {
			return true
		}
	}
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// hasFourColons is the cheap guard of the .pgpass rule: a line has at
// least four colons.
func hasFourColons(s string) bool { return strings.Count(s, ":") >= 4 }

func placeholder(v string) bool {
	return strings.HasPrefix(v, "<") || strings.HasPrefix(v, "$") || strings.HasPrefix(v, "%") ||
		strings.Trim(v, "*x•.") == ""
}

// isEnvName reports whether v is an environment variable's name: upper
// case, digits and '_', not starting with a digit (`5367288319367041` is
// a value).
func isEnvName(v string) bool {
	if v == "" || v[0] >= '0' && v[0] <= '9' {
		return false
	}
	for _, c := range v {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// InspectText classifies one text: "secret", a category ("health",
// "financial", "legal", "personal_identifier") or "normal".
func InspectText(s string) string {
	secret, class := theDetector().detect(s, true)
	switch {
	case secret >= 0:
		return SensitivitySecret
	case class != "":
		return class
	}
	return SensitivityNormal
}

// strings visits every string field of the record in the published order.
func (r *Record) strings(fn func(string) bool) bool {
	for _, s := range []string{r.ID, r.CreatedAt, r.UpdatedAt} {
		if fn(s) {
			return true
		}
	}
	for _, p := range []*string{r.Project, r.AgentProfile, r.WorkflowID, r.SessionID, r.OperationID} {
		if p != nil && fn(*p) {
			return true
		}
	}
	for _, s := range []string{r.Scope, r.Ring, r.EventType, r.Summary, r.Details, r.Source.Type, r.Source.Ref, r.Source.Quote} {
		if fn(s) {
			return true
		}
	}
	for _, s := range r.Tags {
		if fn(s) {
			return true
		}
	}
	if fn(r.Sensitivity) || fn(r.Retention) || r.ExpiresAt != nil && fn(*r.ExpiresAt) {
		return true
	}
	for _, s := range r.Supersedes {
		if fn(s) {
			return true
		}
	}
	if r.SupersededBy != nil && fn(*r.SupersededBy) {
		return true
	}
	for _, l := range r.Links {
		if fn(l.Type) || fn(l.Target) {
			return true
		}
	}
	for _, p := range []*string{r.Review.ReviewReason, r.Review.ReviewedAt, r.Review.ReviewedBy} {
		if p != nil && fn(*p) {
			return true
		}
	}
	return false
}

// InspectSensitivity applies the published guard to a whole record before
// anything is written: a secret-like value in any string field, or a
// declared sensitivity of "secret", is refused with ErrSecretBlocked;
// otherwise the first category found across the fields becomes the record's
// sensitivity when it was declared normal. A declared non-normal
// sensitivity is kept.
func (r *Record) InspectSensitivity() error {
	if r.Sensitivity == SensitivitySecret {
		return ErrSecretBlocked
	}
	// One pass: each field is prepared once for both detectors; the first
	// category (in field order) counts only if no field is secret-like.
	wantClass := r.Sensitivity == SensitivityNormal
	class := ""
	if r.strings(func(s string) bool {
		v := inspectField(s, wantClass && class == "")
		if class == "" {
			class = v.class
		}
		return v.secret
	}) {
		return ErrSecretBlocked
	}
	if wantClass && class != "" {
		r.Sensitivity = class
	}
	return nil
}

// verdict is what the guard finds in one field.
type verdict struct {
	secret bool
	class  string // set only when asked for and not secret
}

// inspectField runs the secret detector on s and, when wantClass, the
// category detector, preparing s once. The values of the record's
// enumerations (scope, ring, sensitivity, retention, event and source
// types), a third of its fields, are looked up in verdicts found once
// by the same detectors.
func inspectField(s string, wantClass bool) verdict {
	if s == "" {
		return verdict{}
	}
	if v, ok := enumVerdicts()[s]; ok {
		if !wantClass {
			v.class = ""
		}
		return v
	}
	return detect(s, wantClass)
}

func detect(s string, wantClass bool) verdict {
	secret, class := theDetector().detect(s, wantClass)
	return verdict{secret: secret >= 0, class: class}
}

// detector is a rule set with its trigger index. Read only once built.
type detector struct {
	secrets []secretRule
	index   *triggerIndex
	always  uint64 // rules without triggers (their pre guards them)
}

// theDetector is the published rule set's, built on first use.
var theDetector = sync.OnceValue(func() *detector { return newDetector(secretPatterns) })

func newDetector(secrets []secretRule) *detector {
	d := &detector{secrets: secrets, index: newTriggerIndex(secrets)}
	for i, p := range secrets {
		if len(p.triggers) == 0 {
			if p.pre == nil {
				panic("memory: a rule without triggers needs a pre filter: " + p.name)
			}
			d.always |= 1 << i
		}
	}
	return d
}

// detect returns the index of the first secret rule s matches (-1 for
// none) and, when wantClass and s is not secret-like, the first category
// it matches. s is prepared once and its triggers found in one pass; a
// rule's regexp runs only if one of its triggers occurs, in rule order.
// The secret rules read the text a second time with the whitespace inside
// split tokens removed (joinSplits), when there is any.
func (d *detector) detect(s string, wantClass bool) (secret int, class string) {
	if s == "" {
		return -1, ""
	}
	text := prepare(s)
	m := d.index.scan(text)
	if i := d.firstSecret(text, m); i >= 0 {
		return i, ""
	}
	if joined := joinSplits(text); joined != "" {
		if i := d.firstSecret(joined, d.index.scan(joined)); i >= 0 {
			return i, ""
		}
	}
	if !wantClass {
		return -1, ""
	}
	for j, p := range categoryPatterns {
		if m&categoryBit(j) != 0 && p.re.MatchString(text) {
			return -1, p.class
		}
	}
	return -1, ""
}

// firstSecret returns the first secret rule (in rule order) among those
// triggered in m, and those without triggers, that matches text; -1 for
// none.
func (d *detector) firstSecret(text string, m uint64) int {
	for s := (m | d.always) & (1<<len(d.secrets) - 1); s != 0; s &= s - 1 {
		if i := bits.TrailingZeros64(s); d.secrets[i].matches(text) {
			return i
		}
	}
	return -1
}

var enumVerdicts = sync.OnceValue(func() map[string]verdict {
	m := map[string]verdict{}
	for _, set := range [][]string{events.MemoryScopes, events.MemoryRings, events.MemorySensitivities, events.MemoryRetentions,
		captureEventTypes, {DefaultSourceType, "user", "agent", "file", "tool", "eval", "contract", "summary"}} {
		for _, v := range set {
			m[v] = detect(v, true)
		}
	}
	return m
})
