package memory

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Hand-written matchers for the detector's patterns, so that tree-ring
// links no regexp: a live regexp makes the unicode tables and
// regexp/syntax initialise in every process, every hook included (about
// 0.06 M instructions, and 210 KB of binary; docs/benchmarks.md, "Start-up,
// session 7"). Each pattern's source stays in the rule table as its
// definition: FuzzMatchersAreTheirRegexps and TestMatchersAreTheirRegexps
// hold every matcher to the regexp compiled from it, match for match.
//
// A matcher reads the text prepare returns (U+017F and U+212A already
// rewritten, so (?i) folds only ASCII letters) and is linear in it: each
// scan resumes where the previous candidate's run ended. Go's \b is ASCII:
// a byte >= 0x80 is never a word character.

// matcher is one pattern's hand-written form. findAll is set for the
// patterns whose first group a value check reads (FindAllSubmatchIndex).
type matcher struct {
	match   func(s string) bool
	findAll func(s string) [][]int
}

// handMatcher returns the matcher of pattern src; an unknown source
// panics on first use (a pattern edited without its matcher), and
// TestMatchersAreTheirRegexps visits every rule.
func handMatcher(src string) matcher {
	if m, ok := prefixMatcher(src); ok {
		return matcher{match: m.match}
	}
	switch src {
	case `(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{20,}\b`:
		return matcher{match: matchBearer}
	case `-----BEGIN (?:(?:RSA|EC|OPENSSH|DSA|ENCRYPTED) )?PRIVATE KEY-----`:
		return matcher{match: func(s string) bool {
			for _, k := range []string{"", "RSA ", "EC ", "OPENSSH ", "DSA ", "ENCRYPTED "} {
				if strings.Contains(s, "-----BEGIN "+k+"PRIVATE KEY-----") {
					return true
				}
			}
			return false
		}}
	case `(?i)\b(?:[A-Z0-9_]*(?:API[_-]?KEY|PRIVATE[_-]?KEY|SECRET(?:_ACCESS_KEY)?|TOKEN|PASSWORD|PASSWD|PWD)|DATABASE_URL)\s*=\s*(?:"[^"\n]*"|'[^'\n]*'|\S+)`:
		return matcher{match: matchSecretAssignment}
	case `-----BEGIN[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----`:
		return matcher{match: matchPrivateKeyBlock}
	case `PuTTY-User-Key-File-[0-9]+:`:
		return matcher{match: matchPutty}
	case `\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`:
		return matcher{match: matchJWT}
	case `\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`:
		return matcher{match: matchAWSKeyID}
	case `(?i)(?:\baws|secret[ _-]?access[ _-]?key)[^\n]{0,40}?(?:^|[^A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`:
		return matcher{findAll: findAWSSecret}
	case `\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b`:
		return matcher{match: matchSendgrid}
	case `\b[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s/:@]{1,256}:[^\s/@]{1,256}@[^\s/@]`:
		return matcher{match: matchURLCredentials}
	case `(?i)\b[A-Z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key)["']?\s*:\s*("[^"\n]{4,}"|'[^'\n]{4,}'|[^\s"',;]{6,})`:
		return matcher{findAll: findColonAssignment}
	case `(?i)\b(diagnosis|diagnosed|medical|medication|prescription|therapy|hospital)\b`:
		return wordsMatcher("diagnosis", "diagnosed", "medical", "medication", "prescription", "therapy", "hospital")
	case `(?i)\b(bank account|routing number|credit card|tax return|paystub|salary)\b`:
		return wordsMatcher("bank account", "routing number", "credit card", "tax return", "paystub", "salary")
	case `(?i)\b(lawsuit|attorney|legal advice|court order|subpoena|contract dispute)\b`:
		return wordsMatcher("lawsuit", "attorney", "legal advice", "court order", "subpoena", "contract dispute")
	case `(?i)\b(ssn|social security|passport|driver'?s license)\b`:
		return wordsMatcher("ssn", "social security", "passport", "driver's license", "drivers license")
	}
	panic("memory: no matcher for pattern " + src)
}

// Byte classes of the patterns.
func isWord(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_'
}
func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}
func isAlpha(c byte) bool    { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }
func isHex(c byte) bool      { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' || c >= 'a' && c <= 'f' }
func isToken(c byte) bool    { return isWord(c) || c == '-' }                        // [A-Za-z0-9_-]
func isUpperNum(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' } // [0-9A-Z]
func isB64(c byte) bool      { return isAlnum(c) || c == '/' || c == '+' }           // [A-Za-z0-9/+]

// isSpace is RE2's \s: [\t\n\f\r ].
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// boundary is \b at i: a word character on exactly one side.
func boundary(s string, i int) bool {
	before := i > 0 && isWord(s[i-1])
	after := i < len(s) && isWord(s[i])
	return before != after
}

// hasPrefixFold is strings.HasPrefix with ASCII letters compared without
// case; lit is lower-case.
func hasPrefixFold(s, lit string) bool {
	if len(s) < len(lit) {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if lowerASCII(s[i]) != lit[i] {
			return false
		}
	}
	return true
}

func hasSuffixFold(s, lit string) bool {
	return len(s) >= len(lit) && hasPrefixFold(s[len(s)-len(lit):], lit)
}

// runs finds the end of the run of class bytes from q, remembering the
// last run so that candidates inside it (the literals of one pattern do
// not overlap themselves) cost nothing more: linear over a scan.
type runs struct {
	in       func(byte) bool
	from, to int // s[from:to] is in the class and s[to] is not
	lastB    int // the last \b in (from, to], -1 none; -2 not computed
}

func (r *runs) end(s string, q int) int {
	if q >= r.from && q <= r.to && r.to > 0 {
		return r.to
	}
	e := q
	for e < len(s) && r.in(s[e]) {
		e++
	}
	r.from, r.to, r.lastB = q, e, -2
	return e
}

// boundaryIn reports whether \b holds at some j in [lo, end] of the run
// that end just returned.
func (r *runs) boundaryIn(s string, lo int) bool {
	if r.lastB == -2 {
		r.lastB = -1
		for j := r.to; j > r.from; j-- {
			if boundary(s, j) {
				r.lastB = j
				break
			}
		}
	}
	return r.lastB >= lo
}

// prefixRule is `(\b)?(?:lit|lit...)[class]{min,}(\b)?`, or `{min}` when
// exact.
type prefixRule struct {
	lits               []string
	in                 func(byte) bool
	min                int
	exact              bool
	wordStart, wordEnd bool
}

func (p *prefixRule) match(s string) bool {
	r := runs{in: p.in}
	first := p.lits[0][0] // when every literal starts with it, candidates are found by IndexByte
	for _, lit := range p.lits {
		if lit[0] != first {
			first = 0
		}
	}
	for i := 0; i < len(s); i++ {
		if first != 0 {
			j := strings.IndexByte(s[i:], first)
			if j < 0 {
				return false
			}
			i += j
		}
		if p.wordStart && !boundary(s, i) {
			continue
		}
		for _, lit := range p.lits {
			if s[i] != lit[0] || !strings.HasPrefix(s[i:], lit) {
				continue
			}
			q := i + len(lit)
			e := r.end(s, q)
			switch {
			case e-q < p.min:
			case p.exact && p.wordEnd:
				if boundary(s, q+p.min) {
					return true
				}
			case p.exact, !p.wordEnd:
				return true
			case r.boundaryIn(s, q+p.min):
				return true
			}
		}
	}
	return false
}

// prefixMatcher is the prefixRule of src, for the patterns of that form.
func prefixMatcher(src string) (*prefixRule, bool) {
	p, ok := prefixRules()[src]
	return p, ok
}

// prefixRules are the patterns of the prefixRule form, by source; built
// on first use.
var prefixRules = sync.OnceValue(func() map[string]*prefixRule {
	return map[string]*prefixRule{
		// (?:proj-)? adds nothing: its bytes are in the class, so any
		// match with it is a match of the class run after "sk-".
		`\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}\b`: {lits: []string{"sk-"}, in: isToken, min: 20, wordStart: true, wordEnd: true},
		`trcap_v1_[A-Fa-f0-9]{64}`:            {lits: []string{"trcap_v1_"}, in: isHex, min: 64, exact: true},
		`\bgh[pousr]_[A-Za-z0-9_]{20,}\b`:     {lits: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, in: isWord, min: 20, wordStart: true, wordEnd: true},
		`\bgithub_pat_[A-Za-z0-9_]{20,}\b`:    {lits: []string{"github_pat_"}, in: isWord, min: 20, wordStart: true, wordEnd: true},
		`\bAKIA[0-9A-Z]{16}\b`:                {lits: []string{"AKIA"}, in: isUpperNum, min: 16, exact: true, wordStart: true, wordEnd: true},
		`AGE-SECRET-KEY-1[0-9A-Z]{58}`:        {lits: []string{"AGE-SECRET-KEY-1"}, in: isUpperNum, min: 58, exact: true},
		`\b(?:xox[abposre]|xapp)-[0-9A-Za-z-]{10,}`: {lits: []string{"xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-", "xapp-"},
			in: func(c byte) bool { return isAlnum(c) || c == '-' }, min: 10, wordStart: true},
		`hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,}`: {lits: []string{"hooks.slack.com/services/", "hooks.slack.com/workflows/", "hooks.slack.com/triggers/"},
			in: func(c byte) bool { return isToken(c) || c == '/' || c == '+' }, min: 20},
		`\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}`: {lits: []string{"sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_"}, in: isAlnum, min: 10, wordStart: true},
		`\bAIza[0-9A-Za-z_-]{35}`:                         {lits: []string{"AIza"}, in: isToken, min: 35, exact: true, wordStart: true},
		`\bgl(?:pat|dt|ptt|rt|cbt|imt|soat|ffct|agent|oas|ft)-[0-9A-Za-z_-]{20,}`: {lits: []string{"glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "glimt-", "glsoat-", "glffct-", "glagent-", "gloas-", "glft-"},
			in: isToken, min: 20, wordStart: true},
		`\bnpm_[A-Za-z0-9]{36}\b`:                {lits: []string{"npm_"}, in: isAlnum, min: 36, exact: true, wordStart: true, wordEnd: true},
		`pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}`: {lits: []string{"pypi-AgEIcHlwaS5vcmc"}, in: isToken, min: 50},
		`\bhf_[A-Za-z]{34}\b`:                    {lits: []string{"hf_"}, in: isAlpha, min: 34, exact: true, wordStart: true, wordEnd: true},
		`\bdckr_pat_[A-Za-z0-9_-]{27,}`:          {lits: []string{"dckr_pat_"}, in: isToken, min: 27, wordStart: true},
		`\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`: {lits: []string{"shpat_", "shpca_", "shppa_", "shpss_"}, in: isHex, min: 32, exact: true, wordStart: true, wordEnd: true},
		`\bhv[sb]\.[A-Za-z0-9_-]{24,}`:           {lits: []string{"hvs.", "hvb."}, in: isToken, min: 24, wordStart: true},
		`\bdo[opr]_v1_[a-f0-9]{64}\b`: {lits: []string{"dop_v1_", "doo_v1_", "dor_v1_"},
			in: func(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }, min: 64, exact: true, wordStart: true, wordEnd: true},
	}
})

// `(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{20,}\b`: the spaces are all taken
// (the class has none), then the run.
func matchBearer(s string) bool {
	r := runs{in: func(c byte) bool {
		return isAlnum(c) || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=' || c == '-'
	}}
	for i := 0; i+6 < len(s); i++ {
		if !boundary(s, i) || !hasPrefixFold(s[i:], "bearer") || !isSpace(s[i+6]) {
			continue
		}
		q := i + 7
		for q < len(s) && isSpace(s[q]) {
			q++
		}
		if e := r.end(s, q); e-q >= 20 && r.boundaryIn(s, q+20) {
			return true
		}
	}
	return false
}

// The secret_assignment pattern: a name ending in one of the keywords
// (the word characters before it always start at a \b), spaces, "=",
// spaces and one more character that is not a space (a quoted value
// starts with one). DATABASE_URL must itself start at a \b.
func matchSecretAssignment(s string) bool {
	for e := strings.IndexByte(s, '='); e >= 0; {
		q := e
		for q > 0 && isSpace(s[q-1]) {
			q--
		}
		name := false
		for _, kw := range []string{"api_key", "api-key", "apikey", "private_key", "private-key", "privatekey",
			"secret", "secret_access_key", "token", "password", "passwd", "pwd"} {
			if hasSuffixFold(s[:q], kw) {
				name = true
				break
			}
		}
		if !name && hasSuffixFold(s[:q], "database_url") && boundary(s, q-len("database_url")) {
			name = true
		}
		v := e + 1
		for v < len(s) && isSpace(s[v]) {
			v++
		}
		if name && v < len(s) {
			return true
		}
		next := strings.IndexByte(s[e+1:], '=')
		if next < 0 {
			break
		}
		e += 1 + next
	}
	return false
}

// `-----BEGIN[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----`.
func matchPrivateKeyBlock(s string) bool {
	in := func(c byte) bool { return isUpperNum(c) || c == ' ' || c == '_' || c == '-' }
	return anyAt(s, "-----BEGIN", func(b int) bool {
		m := b + len("-----BEGIN")
		for k := 0; k <= 40 && m+k <= len(s); k++ {
			if t := s[m+k:]; strings.HasPrefix(t, "PRIVATE KEY-----") || strings.HasPrefix(t, "PRIVATE KEY BLOCK-----") {
				return true
			}
			if m+k == len(s) || !in(s[m+k]) {
				break
			}
		}
		return false
	})
}

// anyAt reports whether ok holds at some occurrence of lit in s (given its
// index), trying them left to right.
func anyAt(s, lit string, ok func(i int) bool) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], lit)
		if i < 0 {
			return false
		}
		if ok(off + i) {
			return true
		}
		off += i + 1
	}
}

// `PuTTY-User-Key-File-[0-9]+:`.
func matchPutty(s string) bool {
	const lit = "PuTTY-User-Key-File-"
	return anyAt(s, lit, func(i int) bool {
		q := i + len(lit)
		e := q
		for e < len(s) && s[e] >= '0' && s[e] <= '9' {
			e++
		}
		return e > q && e < len(s) && s[e] == ':'
	})
}

// `\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`: "." is
// outside the class, so each run is a whole run.
func matchJWT(s string) bool {
	r1, r2 := runs{in: isToken}, runs{in: isToken}
	return anyAt(s, "eyJ", func(i int) bool {
		if !boundary(s, i) {
			return false
		}
		q := i + 3
		e := r1.end(s, q)
		if e-q < 8 || e >= len(s) || s[e] != '.' || !strings.HasPrefix(s[e+1:], "eyJ") {
			return false
		}
		q2 := e + 4
		e2 := r2.end(s, q2)
		return e2-q2 >= 8 && e2 < len(s) && s[e2] == '.'
	})
}

// `\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`: twenty bytes.
func matchAWSKeyID(s string) bool {
	for i := 0; i+20 <= len(s); i++ {
		if s[i] != 'A' || !boundary(s, i) {
			continue
		}
		p := s[i : i+4]
		if !(p == "AKIA" || p == "ASIA" || p == "ABIA" || p == "ACCA" || p[:3] == "A3T" && isUpperNum(p[3])) {
			continue
		}
		ok := true
		for _, c := range []byte(s[i+4 : i+20]) {
			if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
				ok = false
				break
			}
		}
		if ok && boundary(s, i+20) {
			return true
		}
	}
	return false
}

// `\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b`.
func matchSendgrid(s string) bool {
	return anyAt(s, "SG.", func(i int) bool {
		q := i + 3
		return boundary(s, i) && q+22+1+43 <= len(s) && s[q+22] == '.' && allBytes(s[q:q+22], isToken) &&
			allBytes(s[q+23:q+66], isToken) && boundary(s, q+66)
	})
}

func allBytes(s string, in func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !in(s[i]) {
			return false
		}
	}
	return true
}

// runeRun counts the runes from q that out does not exclude, stopping
// after max+1 of them (more than the pattern's bound is as good as
// unbounded): their count and where they end. An invalid byte is one rune
// (U+FFFD), as for RE2.
func runeRun(s string, q, max int, out func(byte) bool) (n, end int) {
	for end = q; end < len(s) && n <= max; n++ {
		c := s[end]
		if c < utf8.RuneSelf {
			if out(c) {
				break
			}
			end++
			continue
		}
		_, w := utf8.DecodeRuneInString(s[end:])
		end += w
	}
	return n, end
}

// `\b[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s/:@]{1,256}:[^\s/@]{1,256}@[^\s/@]`:
// after each "://", a user, ":", a password, "@" and one more character,
// and before it a scheme that starts at a \b with a letter. Users and
// passwords hold no "/", so each scan stops before the next "://".
func matchURLCredentials(s string) bool {
	scheme := func(c byte) bool { return isAlnum(c) || c == '+' || c == '.' || c == '-' }
	return anyAt(s, "://", func(k int) bool {
		n, c := runeRun(s, k+3, 256, func(b byte) bool { return isSpace(b) || b == '/' || b == ':' || b == '@' })
		if n < 1 || n > 256 || c >= len(s) || s[c] != ':' {
			return false
		}
		n, a := runeRun(s, c+1, 256, func(b byte) bool { return isSpace(b) || b == '/' || b == '@' })
		if n < 1 || n > 256 || a >= len(s) || s[a] != '@' {
			return false
		}
		if a+1 >= len(s) || isSpace(s[a+1]) || s[a+1] == '/' || s[a+1] == '@' {
			return false
		}
		for p := k - 1; p >= 0 && p >= k-31 && scheme(s[p]); p-- {
			if isAlpha(s[p]) && boundary(s, p) {
				return true
			}
		}
		return false
	})
}

// wordsMatcher is `(?i)\b(w|w...)\b` for lower-case words.
func wordsMatcher(words ...string) matcher {
	return matcher{match: func(s string) bool {
		for i := 0; i < len(s); i++ {
			if !boundary(s, i) {
				continue
			}
			c := lowerASCII(s[i])
			for _, w := range words {
				if w[0] == c && hasPrefixFold(s[i:], w) && boundary(s, i+len(w)) {
					return true
				}
			}
		}
		return false
	}}
}

// findAll is FindAllStringSubmatchIndex for a pattern whose leftmost
// match from pos (its start, end and first group's) at finds: each match
// is searched from the end of the previous one. Matches are never empty.
func findAll(s string, at func(s string, pos int) []int) [][]int {
	var out [][]int
	for pos := 0; pos < len(s); {
		m := at(s, pos)
		if m == nil {
			break
		}
		out = append(out, m)
		pos = m[1]
	}
	return out
}

// findAWSSecret is FindAllStringSubmatchIndex of the aws_secret_access_key
// pattern: at a start, the fewest runes (at most 40, no newline) before
// the delimiter that a 40-byte run of [A-Za-z0-9/+] follows, ended by a
// byte outside [A-Za-z0-9/+=] or the end.
func findAWSSecret(s string) [][]int { return findAll(s, awsSecretAt) }

func awsSecretAt(s string, pos int) []int {
	for p := pos; p < len(s); p++ {
		var e int
		switch c := lowerASCII(s[p]); {
		case c == 'a' && boundary(s, p) && hasPrefixFold(s[p:], "aws"):
			e = p + 3
		case c == 's' && hasPrefixFold(s[p:], "secret"):
			e = p + 6
			if e < len(s) && (s[e] == ' ' || s[e] == '_' || s[e] == '-') {
				e++
			}
			if !hasPrefixFold(s[e:], "access") {
				continue
			}
			e += 6
			if e < len(s) && (s[e] == ' ' || s[e] == '_' || s[e] == '-') {
				e++
			}
			if !hasPrefixFold(s[e:], "key") {
				continue
			}
			e += 3
		default:
			continue
		}
		// d after k runes of [^\n]; the delimiter is the rune at d.
		for k, d := 0, e; k <= 40 && d < len(s); k++ {
			_, w := utf8.DecodeRuneInString(s[d:])
			if !(w == 1 && isB64(s[d])) {
				g := d + w
				if g+40 <= len(s) && allBytes(s[g:g+40], isB64) {
					t := g + 40
					switch {
					case t == len(s):
						return []int{p, t, g, t}
					case !isB64(s[t]) && s[t] != '=':
						_, tw := utf8.DecodeRuneInString(s[t:])
						return []int{p, t + tw, g, t}
					}
				}
			}
			if s[d] == '\n' {
				break
			}
			d += w
		}
	}
	return nil
}

// findColonAssignment is FindAllStringSubmatchIndex of the
// secret_colon_assignment pattern. A match starts at a \b inside a run of
// [A-Za-z0-9_.-] that ends in one of the keywords (what follows a keyword
// is a quote, a space or ":", none of them in the run, so the keyword ends
// the run), then: an optional quote, spaces, ":", spaces, and the value:
// a quoted string of at least 4 runes, or at least 6 runes of
// [^\s"',;], the whole run.
func findColonAssignment(s string) [][]int { return findAll(s, colonAssignmentAt) }

func isNameByte(c byte) bool { return isWord(c) || c == '.' || c == '-' }

func colonAssignmentAt(s string, pos int) []int {
	for a := pos; a < len(s); {
		if !isNameByte(s[a]) {
			a++
			continue
		}
		r := a
		for r < len(s) && isNameByte(s[r]) {
			r++
		}
		shortest := 0
		for _, kw := range []string{"password", "passwd", "secret", "token", "api_key", "api-key", "apikey",
			"access_key", "access-key", "accesskey", "private_key", "private-key", "privatekey"} {
			if r-len(kw) >= a && hasSuffixFold(s[a:r], kw) && (shortest == 0 || len(kw) < shortest) {
				shortest = len(kw)
			}
		}
		if shortest > 0 {
			if g, ge := colonValue(s, r); g >= 0 {
				for p := a; p <= r-shortest; p++ {
					if boundary(s, p) {
						return []int{p, ge, g, ge}
					}
				}
			}
		}
		a = r
	}
	return nil
}

// colonValue is the value after a name ending at r: its start and end,
// or -1.
func colonValue(s string, r int) (int, int) {
	v := r
	if v < len(s) && (s[v] == '"' || s[v] == '\'') {
		v++
	}
	for v < len(s) && isSpace(s[v]) {
		v++
	}
	if v >= len(s) || s[v] != ':' {
		return -1, -1
	}
	v++
	for v < len(s) && isSpace(s[v]) {
		v++
	}
	if v >= len(s) {
		return -1, -1
	}
	if q := s[v]; q == '"' || q == '\'' {
		n, e := runeRun(s, v+1, 1<<30, func(b byte) bool { return b == q || b == '\n' })
		if n >= 4 && e < len(s) && s[e] == q {
			return v, e + 1
		}
		return -1, -1
	}
	n, e := runeRun(s, v, 1<<30, func(b byte) bool { return isSpace(b) || b == '"' || b == '\'' || b == ',' || b == ';' })
	if n >= 6 {
		return v, e
	}
	return -1, -1
}
