package strictjson

import (
	"math"
	"strconv"
)

// Reader walks one JSON document a value at a time with the checks of
// Unmarshal (size, syntax, UTF-8, depth, duplicate keys, no trailing data)
// but no target type. Fast paths that need a few fields of a document use
// it, so they read keys exactly as Unmarshal does: escapes decoded, then
// compared exactly.
//
// A Reader belongs to one goroutine, and the document must not change
// while it is in use (the duplicate-key set refers to its bytes). The byte
// slices it returns alias the document or a scratch buffer and are valid
// until the next call. After an error every later call returns the same
// error.
//
// A Reader is a value that holds no pointer into itself: a local one
// stays on its caller's stack (no allocation per document) as long as it
// is used through its methods and never passed to a function value, as
// Fields does (see there).
type Reader struct {
	d     decoder
	err   error
	begun bool // a value was started: the end of input is no longer "empty"
}

// NewReader returns a Reader over data within l.
func NewReader(data []byte, l Limits) Reader {
	r := Reader{d: decoder{data: data, maxDepth: l.depth()}}
	if len(data) > l.bytes() {
		r.err = &SizeError{Size: len(data), Max: l.bytes()}
	}
	return r
}

// Kind names the next value: "object", "array", "string", "boolean",
// "null" or "number", or "" at the end of the input. It consumes nothing.
func (r *Reader) Kind() string {
	r.d.ws()
	if r.d.pos >= len(r.d.data) {
		return ""
	}
	return kindOf(r.d.data[r.d.pos])
}

func kindOf(first byte) string {
	switch first {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// Path is where the reader is, e.g. "payload.owned_files[0]"; "" at the top.
func (r *Reader) Path() string { return r.d.pathString() }

// start skips whitespace before a value and reports a sticky error or the
// end of input.
func (r *Reader) start() error {
	if r.err != nil {
		return r.err
	}
	r.d.ws()
	if r.d.pos >= len(r.d.data) {
		if !r.begun {
			return r.fail(&SyntaxError{Offset: r.d.pos, Msg: "empty input"})
		}
		return r.fail(r.d.errf("unexpected end of input"))
	}
	r.begun = true
	return nil
}

func (r *Reader) fail(err error) error {
	r.err = err
	return err
}

// wrongKind skips the value at the reader (so a syntax error inside it is
// reported first) and returns a *TypeError.
func (r *Reader) wrongKind(want string) error {
	got := kindOf(r.d.data[r.d.pos])
	if err := r.d.skip(); err != nil {
		return r.fail(err)
	}
	return r.fail(&TypeError{Path: r.d.pathString(), Want: want, Got: got})
}

// Object reads an object, calling fn with each key (unescaped; valid until
// fn reads a value) while the reader stands at that key's value. fn reads
// the value with one call (String, Uint, Raw, Skip, Object...) or returns
// nil without reading, and the value is skipped. A repeated key is a
// *DuplicateKeyError before fn sees it; fn's error ends the walk and is
// returned as it is.
func (r *Reader) Object(fn func(key []byte) error) error {
	if err := r.start(); err != nil {
		return err
	}
	d := &r.d
	if d.data[d.pos] != '{' {
		return r.wrongKind("object")
	}
	err := d.members(true, func(key []byte) error { return r.visit(func() error { return fn(key) }) })
	if err != nil && r.err == nil {
		r.err = err
	}
	return err
}

// Array reads an array, calling fn with each element's index while the
// reader stands at that element. fn reads the element with one call or
// returns nil without reading, and the element is skipped; fn's error
// ends the walk and is returned as it is.
func (r *Reader) Array(fn func(i int) error) error {
	if err := r.start(); err != nil {
		return err
	}
	d := &r.d
	if d.data[d.pos] != '[' {
		return r.wrongKind("array")
	}
	_, err := d.elements(func(i int) error { return r.visit(func() error { return fn(i) }) })
	if err != nil && r.err == nil {
		r.err = err
	}
	return err
}

// visit runs fn at a member or element: fn reads the value with one call
// or leaves it, and a value left unread is skipped.
func (r *Reader) visit(fn func() error) error {
	d := &r.d
	at := d.pos
	if err := fn(); err != nil {
		return err
	}
	if r.err != nil {
		return r.err
	}
	if d.pos == at {
		return d.skip()
	}
	return nil
}

// Bool reads true or false.
func (r *Reader) Bool() (bool, error) {
	if err := r.start(); err != nil {
		return false, err
	}
	d := &r.d
	switch d.data[d.pos] {
	case 't':
		if err := d.literal("true"); err != nil {
			return false, r.fail(err)
		}
		return true, nil
	case 'f':
		if err := d.literal("false"); err != nil {
			return false, r.fail(err)
		}
		return false, nil
	}
	return false, r.wrongKind("boolean")
}

// String reads a string and returns it unescaped.
func (r *Reader) String() ([]byte, error) {
	if err := r.start(); err != nil {
		return nil, err
	}
	if r.d.data[r.d.pos] != '"' {
		return nil, r.wrongKind("string")
	}
	s, err := r.d.str(true)
	if err != nil {
		return nil, r.fail(err)
	}
	return s, nil
}

// Uint reads a non-negative integer literal that fits in a uint64.
func (r *Reader) Uint() (uint64, error) {
	num, isInt, err := r.number("integer")
	if err != nil {
		return 0, err
	}
	n, ok := parseUint(num)
	if !isInt || !ok {
		return 0, r.fail(&TypeError{Path: r.d.pathString(), Want: "non-negative integer", Got: "number " + string(num)})
	}
	return n, nil
}

// Int reads an integer literal that fits in an int64 (no fraction, no
// exponent), as Unmarshal reads one into an int64.
func (r *Reader) Int() (int64, error) {
	num, isInt, err := r.number("integer")
	if err != nil {
		return 0, err
	}
	n, ok := parseInt(num)
	if !isInt || !ok {
		return 0, r.fail(&TypeError{Path: r.d.pathString(), Want: "integer", Got: "number " + string(num)})
	}
	return n, nil
}

// Float reads a number whose value is finite as a float64, as Unmarshal
// reads one into a float64.
func (r *Reader) Float() (float64, error) {
	num, _, err := r.number("number")
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, r.fail(&TypeError{Path: r.d.pathString(), Want: "number", Got: "number " + string(num)})
	}
	return f, nil
}

// number reads a number literal for Uint, Int and Float (want names the
// kind for a value of another kind): its bytes and whether it has neither
// fraction nor exponent.
func (r *Reader) number(want string) (num []byte, isInt bool, err error) {
	if err := r.start(); err != nil {
		return nil, false, err
	}
	d := &r.d
	if c := d.data[d.pos]; c != '-' && (c < '0' || c > '9') {
		return nil, false, r.wrongKind(want)
	}
	start := d.pos
	if isInt, err = d.number(); err != nil {
		return nil, false, r.fail(err)
	}
	return d.data[start:d.pos], isInt, nil
}

// Raw checks the next value of any shape and returns its bytes as written.
func (r *Reader) Raw() ([]byte, error) {
	if err := r.start(); err != nil {
		return nil, err
	}
	start := r.d.pos
	if err := r.d.skip(); err != nil {
		return nil, r.fail(err)
	}
	return r.d.data[start:r.d.pos], nil
}

// Skip checks the next value of any shape and moves past it.
func (r *Reader) Skip() error {
	_, err := r.Raw()
	return err
}

// RawKeys is Raw that also calls fn with every key of every object inside
// the value (unescaped; valid during the call), at any depth.
func (r *Reader) RawKeys(fn func(key []byte)) ([]byte, error) {
	if err := r.start(); err != nil {
		return nil, err
	}
	start := r.d.pos
	r.d.onKey = fn
	err := r.d.skip()
	r.d.onKey = nil
	if err != nil {
		return nil, r.fail(err)
	}
	return r.d.data[start:r.d.pos], nil
}

// End checks that nothing but whitespace follows the value read.
func (r *Reader) End() error {
	if r.err != nil {
		return r.err
	}
	r.d.ws()
	if r.d.pos != len(r.d.data) {
		return r.fail(&SyntaxError{Offset: r.d.pos, Msg: "trailing data after JSON value"})
	}
	return nil
}

// Fields reads an object member by member: field returns the function
// that reads the value of a key (one call of a Reader method), or nil for
// a key the caller does not declare, which is an *UnknownKeyError, as
// Unmarshal reports it. Hand-written decoders are built from it and the
// ...To readers.
//
// Fields hands the Reader to functions it cannot see, so a Reader it
// walks lives on the heap, and each ...To builds a closure: a decoder run
// per event reads with Object instead, calling the Reader's methods from a
// function literal that captures it (Str, GoInt, UnknownKey), which keeps
// the Reader on the caller's stack.
func (r *Reader) Fields(field func(key []byte) func(*Reader) error) error {
	return r.Object(func(key []byte) error {
		if f := field(key); f != nil {
			return f(r)
		}
		return r.UnknownKey(key)
	})
}

// UnknownKey is the *UnknownKeyError for key, the key of the member an
// Object callback stands at, as Fields and Unmarshal report it.
func (r *Reader) UnknownKey(key []byte) error {
	return &UnknownKeyError{Key: string(key), Path: r.d.parentPath()}
}

// Str reads a string and returns it unescaped, as a string of its own.
func (r *Reader) Str() (string, error) {
	b, err := r.String()
	return string(b), err
}

// GoInt reads an integer that fits in an int, as Unmarshal reads one into
// an int.
func (r *Reader) GoInt() (int, error) {
	n, err := r.Int()
	if err == nil && int64(int(n)) != n {
		return 0, r.fail(&TypeError{Path: r.d.pathString(), Want: "int", Got: "number " + strconv.FormatInt(n, 10)})
	}
	return int(n), err
}

// StringTo reads a string into dst.
func StringTo(dst *string) func(*Reader) error {
	return func(r *Reader) (err error) {
		*dst, err = r.Str()
		return err
	}
}

// Int64To reads an integer into dst.
func Int64To(dst *int64) func(*Reader) error {
	return func(r *Reader) (err error) {
		*dst, err = r.Int()
		return err
	}
}

// IntTo reads an integer that fits in an int into dst.
func IntTo(dst *int) func(*Reader) error {
	return func(r *Reader) (err error) {
		*dst, err = r.GoInt()
		return err
	}
}

// Uint64To reads a non-negative integer into dst.
func Uint64To(dst *uint64) func(*Reader) error {
	return func(r *Reader) (err error) {
		*dst, err = r.Uint()
		return err
	}
}

// BoolTo reads true or false into dst.
func BoolTo(dst *bool) func(*Reader) error {
	return func(r *Reader) (err error) {
		*dst, err = r.Bool()
		return err
	}
}
