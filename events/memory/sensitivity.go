package memory

import (
	"regexp"
	"strings"
	"sync"
)

// Sensitivity classes returned by InspectText.
const (
	SensitivityNormal = "normal"
	SensitivitySecret = "secret"
)

// ErrSecretBlocked is the published refusal of secret-like content. It
// carries no part of the content.
var ErrSecretBlocked error = &RefusedError{Code: "secret_blocked", Reason: "secret-like memory is blocked by policy"}

// The published detector (core/src/sensitivity.rs). Secret patterns are
// checked first; category patterns only when no secret matched, first match
// wins. Go's \b is ASCII-only where Rust's is Unicode-aware: next to a
// non-ASCII letter Go sees a boundary Rust does not, so Go flags slightly
// more, never less (the two non-ASCII runes that fold into the patterns'
// ASCII letters are rewritten first, see prepare). The private-key rule
// also flags a lone BEGIN line (a truncated key is still a key); the
// published pattern needs the END line.
var (
	secretPatterns = []struct {
		name     string
		triggers []string // lowercase ASCII; the regexp runs only if one occurs
		re       *lazyRegexp
	}{
		{"openai_key", []string{"sk-"}, lazy(`\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}\b`)},
		{"tree_ring_coordinator_capability", []string{"trcap_v1_"}, lazy(`trcap_v1_[A-Fa-f0-9]{64}`)},
		{"github_token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, lazy(`\bgh[pousr]_[A-Za-z0-9_]{20,}\b`)},
		{"github_fine_grained_token", []string{"github_pat_"}, lazy(`\bgithub_pat_[A-Za-z0-9_]{20,}\b`)},
		{"aws_access_key", []string{"akia"}, lazy(`\bAKIA[0-9A-Z]{16}\b`)},
		{"bearer_token", []string{"bearer"}, lazy(`(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{20,}\b`)},
		{"private_key", []string{"-----begin"}, lazy(`-----BEGIN (?:(?:RSA|EC|OPENSSH|DSA|ENCRYPTED) )?PRIVATE KEY-----`)},
		{"secret_assignment", []string{"api", "key", "secret", "token", "password", "passwd", "pwd", "database_url"},
			lazy(`(?i)\b(?:[A-Z0-9_]*(?:API[_-]?KEY|PRIVATE[_-]?KEY|SECRET(?:_ACCESS_KEY)?|TOKEN|PASSWORD|PASSWD|PWD)|DATABASE_URL)\s*=\s*(?:"[^"\n]*"|'[^'\n]*'|\S+)`)},
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

// lazyRegexp compiles its pattern on first use. The detector runs on the
// hook path (identity normalization, recall rendering) where most texts
// match no trigger, so compiling all patterns at package init (about 0.3 ms
// and 100 KB of heap in every process) is wasted work. Safe for concurrent
// use.
type lazyRegexp struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

func lazy(src string) *lazyRegexp { return &lazyRegexp{src: src} }

// MatchString compiles the pattern once (it is a constant known to be
// valid: a bad one panics on first use, as MustCompile would at init, and
// TestSensitivityPatternsCompile compiles them all) and matches.
func (l *lazyRegexp) MatchString(s string) bool {
	l.once.Do(func() { l.re = regexp.MustCompile(l.src) })
	return l.re.MatchString(s)
}

// foldASCII lowercases ASCII letters and maps the two non-ASCII runes that
// case-fold to ASCII letters (U+017F long s, U+212A Kelvin sign), so that a
// trigger search on the result never misses what a (?i) pattern matches.
// Triggers are a fast path only: a text without any trigger cannot match
// the pattern, so the regexp is skipped.
func foldASCII(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range s {
		switch {
		case c >= 'A' && c <= 'Z':
			b.WriteByte(byte(c) + 32)
		case c == 'ſ':
			b.WriteByte('s')
		case c == 'K':
			b.WriteByte('k')
		case c < 0x80:
			b.WriteByte(byte(c))
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func anyTrigger(folded string, triggers []string) bool {
	for _, t := range triggers {
		if strings.Contains(folded, t) {
			return true
		}
	}
	return false
}

// asciiFolds rewrites U+017F and U+212A to the ASCII letters they fold to,
// so that the ASCII-only \b of Go's regexp sees them as word characters,
// as Rust's Unicode \b does.
var asciiFolds = strings.NewReplacer("ſ", "s", "K", "K")

func prepare(s string) (text, folded string) {
	if strings.ContainsAny(s, "ſK") {
		s = asciiFolds.Replace(s)
	}
	return s, foldASCII(s)
}

// IsSecretLike reports whether s matches a secret pattern.
func IsSecretLike(s string) bool {
	if s == "" {
		return false
	}
	s, f := prepare(s)
	for _, p := range secretPatterns {
		if anyTrigger(f, p.triggers) && p.re.MatchString(s) {
			return true
		}
	}
	return false
}

// categoryOf returns the first category s matches, or "".
func categoryOf(s string) string {
	if s == "" {
		return ""
	}
	s, f := prepare(s)
	for _, p := range categoryPatterns {
		if anyTrigger(f, p.triggers) && p.re.MatchString(s) {
			return p.class
		}
	}
	return ""
}

// InspectText classifies one text: "secret", a category ("health",
// "financial", "legal", "personal_identifier") or "normal".
func InspectText(s string) string {
	if IsSecretLike(s) {
		return SensitivitySecret
	}
	if c := categoryOf(s); c != "" {
		return c
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
	if r.Sensitivity == SensitivitySecret || r.strings(IsSecretLike) {
		return ErrSecretBlocked
	}
	if r.Sensitivity != SensitivityNormal {
		return nil
	}
	class := ""
	r.strings(func(s string) bool {
		class = categoryOf(s)
		return class != ""
	})
	if class != "" {
		r.Sensitivity = class
	}
	return nil
}
