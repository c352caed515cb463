package strictjson

import (
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as a JSON string exactly as encoding/json's
// Marshal writes it: '"' and '\\' escaped, control bytes as \b, \f, \n,
// \r, \t or \u00XX, '<', '>' and '&' as \u003c, \u003e and \u0026, each
// invalid UTF-8 byte as \ufffd, U+2028 and U+2029 as \u2028 and \u2029.
// Hand-written encoders of hot values (a hook's events, its receipt and
// output) use it instead of reflection; their tests hold them to
// encoding/json's bytes.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, true) }

// AppendStringNoHTML is AppendString without the HTML escapes, as a
// json.Encoder with SetEscapeHTML(false) writes it.
func AppendStringNoHTML(dst []byte, s string) []byte { return appendString(dst, s, false) }

const lowerHex = "0123456789abcdef"

// plain[html][c] reports whether ASCII byte c is written as it is: not a
// control byte, '"' or '\\', nor (html) '<', '>' or '&'. One table
// lookup per byte keeps long texts (a hook's context) cheap.
var plain = func() (t [2][utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[0][c] = c != '"' && c != '\\'
		t[1][c] = t[0][c] && c != '<' && c != '>' && c != '&'
	}
	return t
}()

func appendString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	safe := &plain[0]
	if html {
		safe = &plain[1]
	}
	done := 0 // s[done:i] is pending, to be copied as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf && safe[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			var esc string
			switch {
			case r == utf8.RuneError && n == 1:
				esc = `\ufffd`
			case r == '\u2028':
				esc = `\u2028`
			case r == '\u2029':
				esc = `\u2029`
			default:
				i += n
				continue
			}
			dst = append(append(dst, s[done:i]...), esc...)
			i += n
			done = i
			continue
		}
		dst = append(dst, s[done:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xf])
		}
		i++
		done = i
	}
	return append(append(dst, s[done:]...), '"')
}

// Object appends one JSON object's members in order, as json.Marshal
// writes a struct: hand-written encoders build their values with it. Keys
// are written as given: constant ASCII identifiers that need no escaping.
// Members tagged omitempty are the caller's to leave out. Start with
// Object{B: dst}; End returns the buffer with the object appended.
type Object struct {
	B []byte
	n int // members written
}

// Key starts a member whose value the caller appends to B.
func (o *Object) Key(k string) {
	if o.n == 0 {
		o.B = append(o.B, '{')
	} else {
		o.B = append(o.B, ',')
	}
	o.n++
	o.B = append(append(append(o.B, '"'), k...), '"', ':')
}

// Str appends a string member (AppendString).
func (o *Object) Str(k, v string) {
	o.Key(k)
	o.B = AppendString(o.B, v)
}

// Int appends an integer member.
func (o *Object) Int(k string, v int64) {
	o.Key(k)
	o.B = strconv.AppendInt(o.B, v, 10)
}

// Uint appends a non-negative integer member.
func (o *Object) Uint(k string, v uint64) {
	o.Key(k)
	o.B = strconv.AppendUint(o.B, v, 10)
}

// Bool appends a boolean member.
func (o *Object) Bool(k string, v bool) {
	o.Key(k)
	o.B = strconv.AppendBool(o.B, v)
}

// End closes the object ({} when it has no members).
func (o *Object) End() []byte {
	if o.n == 0 {
		return append(o.B, '{', '}')
	}
	return append(o.B, '}')
}
