package preflight

import (
	"errors"
	"unicode/utf8"
)

// errText is the refusal of stdin that is not UTF-8 text.
var errText = errors.New("is not valid UTF-8 (a string holds an invalid byte or a lone surrogate escape)")

// checkText refuses a stdin document that is not UTF-8 text: an invalid
// byte sequence anywhere, or a \u escape of a lone UTF-16 surrogate. A
// decoder would replace either with U+FFFD, so that "s\xff" and "s\xfe"
// (or "s\ud800" and "s\udbff") would name the same session and worker.
// Outside strings JSON allows only ASCII, so checking the whole document
// checks every string. Linear in len(data); it allocates nothing.
func checkText(data []byte) error {
	if !utf8.Valid(data) {
		return errText
	}
	inString := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			inString = !inString
		case c == '\\' && inString && i+1 < len(data):
			if data[i+1] != 'u' {
				i++ // a one-character escape (\" included)
				continue
			}
			r, ok := hex4(data, i+2)
			if !ok {
				continue // malformed: the scanner refuses it
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return errText // a low surrogate without its high half
			case r >= 0xD800 && r <= 0xDBFF:
				lo, ok := rune(0), i+11 < len(data) && data[i+6] == '\\' && data[i+7] == 'u'
				if ok {
					lo, ok = hex4(data, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return errText
				}
				i += 11
			default:
				i += 5
			}
		}
	}
	return nil
}

// hex4 decodes the four hex digits at data[i:i+4].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
