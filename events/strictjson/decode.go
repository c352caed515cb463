// Package strictjson is the one decoder of JSON from outside the process
// (hook stdin, settings files, receipts, manifests, event and memory import
// lines, fixtures). It rejects what encoding/json lets through silently:
// keys matched in any case, unknown keys, duplicate keys, invalid UTF-8,
// unbounded nesting and size, trailing data. Every refusal is one of the
// typed errors in errors.go, naming the key and its JSON path.
//
// Unmarshal decodes into a Go type; Reader walks a document a value at a
// time for fast paths that need a few fields. Both read keys the same way
// (escapes decoded, then compared exactly), so no two readers of one
// document can disagree about which keys it holds. Duplicate keys are
// found in time linear in the number of keys. The package imports nothing
// of this module.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Limits bound a document: its size in bytes and its nesting depth. The
// zero value of a field means the default.
type Limits struct {
	MaxBytes int
	MaxDepth int
}

const (
	// MaxDepth is the default nesting bound; real documents nest a few levels.
	MaxDepth = 32
	// MaxBytes is the default size bound, the largest outside document we read
	// (a settings file, a stdin payload, a memory import line).
	MaxBytes = 1 << 20
)

func (l Limits) depth() int {
	if l.MaxDepth > 0 {
		return l.MaxDepth
	}
	return MaxDepth
}

func (l Limits) bytes() int {
	if l.MaxBytes > 0 {
		return l.MaxBytes
	}
	return MaxBytes
}

// Unmarshal decodes one JSON value into v (a non-nil pointer) within the
// default Limits: keys the target type does not declare exactly
// (case-sensitive, at any level) are an *UnknownKeyError, a repeated key a
// *DuplicateKeyError, and so on (errors.go).
//
// It decodes in one pass driven by the target type (no reflection on the
// hot path beyond setting fields); values of types with their own
// UnmarshalJSON or UnmarshalText, interfaces and json.RawMessage are
// checked structurally and then handed to encoding/json. On error v may be
// partly filled. It is safe for concurrent use.
func Unmarshal(data []byte, v any) error { return Limits{}.Unmarshal(data, v) }

// Unmarshal is the package's Unmarshal within l.
func (l Limits) Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode: target %T is not a non-nil pointer", v)
	}
	return l.decode(data, schemaOf(rv.Type().Elem()), rv.Elem())
}

// Valid checks one JSON value with the structural rules of Unmarshal
// (size, syntax, UTF-8, depth, duplicate keys, no trailing data) without a
// target type.
func Valid(data []byte) error { return Limits{}.decode(data, anySchema, reflect.Value{}) }

type schemaKind uint8

const (
	kOpaque schemaKind = iota // checked structurally, decoded by encoding/json
	kString
	kBool
	kInt
	kUint
	kFloat
	kStruct
	kMap
	kSlice
	kArray
	kPointer
)

// schema is what a JSON value may contain where a Go type is decoded:
// objects of a struct admit exactly the struct's json keys.
type schema struct {
	kind   schemaKind
	t      reflect.Type
	fields map[string]*fieldSchema // kStruct: exact key -> field
	nField int
	elem   *schema // kMap value, kSlice/kArray element, kPointer target
}

type fieldSchema struct {
	idx   int   // dense index for duplicate detection
	index []int // reflect field path (embedded structs)
	s     *schema
}

var (
	anySchema   = &schema{kind: kOpaque}
	schemaCache sync.Map // reflect.Type -> *schema
	schemaMu    sync.Mutex

	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	anyType             = reflect.TypeFor[any]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func schemaOf(t reflect.Type) *schema {
	if s, ok := schemaCache.Load(t); ok {
		return s.(*schema)
	}
	schemaMu.Lock()
	defer schemaMu.Unlock()
	return buildSchema(t, map[reflect.Type]*schema{})
}

// buildSchema runs under schemaMu; building breaks cycles of recursive
// types through the in-progress map.
func buildSchema(t reflect.Type, building map[reflect.Type]*schema) *schema {
	if s, ok := schemaCache.Load(t); ok {
		return s.(*schema)
	}
	if s, ok := building[t]; ok {
		return s
	}
	s := &schema{t: t}
	building[t] = s
	switch {
	case t == rawMessageType || t.Kind() == reflect.Interface ||
		reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType):
		s.kind = kOpaque
	default:
		switch t.Kind() {
		case reflect.String:
			s.kind = kString
		case reflect.Bool:
			s.kind = kBool
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			s.kind = kInt
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			s.kind = kUint
		case reflect.Float32, reflect.Float64:
			s.kind = kFloat
		case reflect.Pointer:
			s.kind = kPointer
			s.elem = buildSchema(t.Elem(), building)
		case reflect.Slice:
			if t.Elem().Kind() == reflect.Uint8 {
				s.kind = kOpaque // []byte is base64
				break
			}
			s.kind = kSlice
			s.elem = buildSchema(t.Elem(), building)
		case reflect.Array:
			s.kind = kArray
			s.elem = buildSchema(t.Elem(), building)
		case reflect.Map:
			if t.Key().Kind() != reflect.String {
				s.kind = kOpaque
				break
			}
			s.kind = kMap
			s.elem = buildSchema(t.Elem(), building)
		case reflect.Struct:
			s.kind = kStruct
			s.fields = map[string]*fieldSchema{}
			addFields(s, t, nil, building)
		default:
			s.kind = kOpaque // chan, func, complex: encoding/json reports them
		}
	}
	delete(building, t)
	schemaCache.Store(t, s)
	return s
}

// addFields collects the json keys of t, promoting untagged embedded
// structs as encoding/json does (the shallower field wins a name).
func addFields(s *schema, t reflect.Type, prefix []int, building map[reflect.Type]*schema) {
	var embedded []reflect.StructField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, f)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := s.fields[name]; dup {
			continue
		}
		index := append(append([]int(nil), prefix...), i)
		s.fields[name] = &fieldSchema{idx: s.nField, index: index, s: buildSchema(f.Type, building)}
		s.nField++
	}
	for _, f := range embedded {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		addFields(s, ft, append(append([]int(nil), prefix...), f.Index...), building)
	}
}

// decode checks data as exactly one JSON value against s and, when v is
// valid, decodes it into v.
func (l Limits) decode(data []byte, s *schema, v reflect.Value) error {
	if len(data) > l.bytes() {
		return &SizeError{Size: len(data), Max: l.bytes()}
	}
	d := decoder{data: data, maxDepth: l.depth()}
	d.ws()
	if d.pos >= len(data) {
		return &SyntaxError{Offset: d.pos, Msg: "empty input"}
	}
	if err := d.value(s, v); err != nil {
		return err
	}
	d.ws()
	if d.pos != len(data) {
		return &SyntaxError{Offset: d.pos, Msg: "trailing data after JSON value"}
	}
	return nil
}

// decoder walks JSON bytes once. A zero reflect.Value target means "check
// only".
type decoder struct {
	data     []byte
	pos      int
	depth    int
	maxDepth int
	path     pathStack        // for messages only
	sbuf     []byte           // scratch for unescaping
	onKey    func(key []byte) // Reader.RawKeys: sees every key of checked-only values
}

// pathSeg is an object key (the raw bytes data[ks:ke]) or an array index.
type pathSeg struct {
	ks, ke int
	isKey  bool
	idx    int
}

// pathStack is where the decoder stands: its first segments held in
// place, so that walking a document of the usual few levels allocates
// nothing and a Reader holds no pointer into itself (one that did could
// not stay on its caller's stack); deeper segments go to far.
type pathStack struct {
	n    int
	near [8]pathSeg
	far  []pathSeg
}

func (p *pathStack) push(s pathSeg) {
	if p.n < len(p.near) {
		p.near[p.n] = s
	} else {
		p.far = append(p.far[:p.n-len(p.near)], s)
	}
	p.n++
}

func (p *pathStack) pop() { p.n-- }

// at is segment i, 0 <= i < n.
func (p *pathStack) at(i int) *pathSeg {
	if i < len(p.near) {
		return &p.near[i]
	}
	return &p.far[i-len(p.near)]
}

func (d *decoder) pathString() string {
	var b strings.Builder
	for i := range d.path.n {
		p := d.path.at(i)
		if p.isKey {
			if i > 0 {
				b.WriteByte('.')
			}
			key := d.data[p.ks:p.ke]
			if bytes.IndexByte(key, '\\') >= 0 {
				key = unescapeTo(nil, key)
			}
			b.Write(key)
		} else {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(p.idx))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func (d *decoder) errf(format string, a ...any) error {
	return &SyntaxError{Offset: d.pos, Msg: fmt.Sprintf(format, a...)}
}

func (d *decoder) typeErr(s *schema, got string) error {
	return &TypeError{Path: d.pathString(), Want: s.jsonKind(), Got: got}
}

func (s *schema) jsonKind() string {
	switch s.kind {
	case kString:
		return "string"
	case kBool:
		return "boolean"
	case kInt:
		return fmt.Sprintf("integer (%s)", s.t)
	case kUint:
		return fmt.Sprintf("non-negative integer (%s)", s.t)
	case kFloat:
		return "number"
	case kStruct, kMap:
		return "object"
	case kSlice, kArray:
		return "array"
	case kPointer:
		return s.elem.jsonKind()
	default:
		return "value"
	}
}

func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value(s *schema, v reflect.Value) error {
	if d.pos >= len(d.data) {
		return d.errf("unexpected end of input")
	}
	if s.kind == kOpaque {
		if s.t == anyType && v.IsValid() && v.IsNil() {
			x, err := d.anyValue()
			if err == nil && x != nil {
				v.Set(reflect.ValueOf(x))
			}
			return err
		}
		start := d.pos
		if err := d.skip(); err != nil {
			return err
		}
		if !v.IsValid() {
			return nil
		}
		if s.t == rawMessageType {
			v.SetBytes(append([]byte(nil), d.data[start:d.pos]...))
			return nil
		}
		if err := d.unmarshalOpaque(d.data[start:d.pos], v); err != nil {
			return fmt.Errorf("%s: %w", d.pathString(), err)
		}
		return nil
	}
	c := d.data[d.pos]
	if c == 'n' {
		if err := d.literal("null"); err != nil {
			return err
		}
		if v.IsValid() && (s.kind == kPointer || s.kind == kSlice || s.kind == kMap) {
			v.SetZero() // as encoding/json: null clears references, leaves the rest
		}
		return nil
	}
	if s.kind == kPointer {
		if !v.IsValid() {
			return d.value(s.elem, v)
		}
		if v.IsNil() {
			v.Set(reflect.New(s.t.Elem()))
		}
		return d.value(s.elem, v.Elem())
	}
	switch {
	case c == '{':
		if s.kind != kStruct && s.kind != kMap {
			return d.typeErr(s, "object")
		}
		return d.object(s, v)
	case c == '[':
		if s.kind != kSlice && s.kind != kArray {
			return d.typeErr(s, "array")
		}
		return d.array(s, v)
	case c == '"':
		if s.kind != kString {
			return d.typeErr(s, "string")
		}
		str, err := d.str(v.IsValid())
		if err != nil || !v.IsValid() {
			return err
		}
		v.SetString(string(str))
		return nil
	case c == 't' || c == 'f':
		if s.kind != kBool {
			return d.typeErr(s, "boolean")
		}
		lit := "false"
		if c == 't' {
			lit = "true"
		}
		if err := d.literal(lit); err != nil {
			return err
		}
		if v.IsValid() {
			v.SetBool(c == 't')
		}
		return nil
	case c == '-' || c >= '0' && c <= '9':
		start := d.pos
		isInt, err := d.number()
		if err != nil {
			return err
		}
		return d.setNumber(s, v, d.data[start:d.pos], isInt)
	default:
		return d.errf("unexpected character %q", c)
	}
}

// anyValue decodes one value into what encoding/json gives an empty
// interface (map[string]any, []any, string, float64, bool or nil), with the
// checks of skip. It spares a call into encoding/json per value: an object
// of 80,000 untyped values decodes in a third of the time.
func (d *decoder) anyValue() (any, error) {
	switch c := d.data[d.pos]; {
	case c == '{':
		m := map[string]any{}
		err := d.members(true, func(key []byte) error {
			k := string(key)
			x, err := d.anyValue()
			m[k] = x
			return err
		})
		return m, err
	case c == '[':
		a := []any{}
		_, err := d.elements(func(int) error {
			x, err := d.anyValue()
			a = append(a, x)
			return err
		})
		return a, err
	case c == '"':
		b, err := d.str(true)
		return string(b), err
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		start := d.pos
		if _, err := d.number(); err != nil {
			return nil, err
		}
		num := d.data[start:d.pos]
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return nil, &TypeError{Path: d.pathString(), Want: "number in float64 range", Got: "number " + string(num)}
		}
		return f, nil
	default:
		return nil, d.errf("unexpected character %q", c)
	}
}

func (d *decoder) unmarshalOpaque(b []byte, v reflect.Value) error {
	return json.Unmarshal(b, v.Addr().Interface())
}

func (d *decoder) setNumber(s *schema, v reflect.Value, num []byte, isInt bool) error {
	switch s.kind {
	case kInt:
		if !isInt {
			return d.typeErr(s, "number "+string(num))
		}
		n, ok := parseInt(num)
		if !ok || v.IsValid() && v.OverflowInt(n) || !v.IsValid() && s.t.Bits() < 64 && (n < -1<<(s.t.Bits()-1) || n >= 1<<(s.t.Bits()-1)) {
			return d.typeErr(s, "number "+string(num))
		}
		if v.IsValid() {
			v.SetInt(n)
		}
	case kUint:
		if !isInt || num[0] == '-' {
			return d.typeErr(s, "number "+string(num))
		}
		n, ok := parseUint(num)
		if !ok || v.IsValid() && v.OverflowUint(n) || !v.IsValid() && s.t.Bits() < 64 && n >= 1<<s.t.Bits() {
			return d.typeErr(s, "number "+string(num))
		}
		if v.IsValid() {
			v.SetUint(n)
		}
	case kFloat:
		f, err := strconv.ParseFloat(string(num), s.t.Bits())
		if err != nil || math.IsInf(f, 0) {
			return d.typeErr(s, "number "+string(num))
		}
		if v.IsValid() {
			v.SetFloat(f)
		}
	default:
		return d.typeErr(s, "number")
	}
	return nil
}

func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		m := n*10 + uint64(c-'0')
		if m/10 != n {
			return 0, false
		}
		n = m
	}
	return n, true
}

func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	u, ok := parseUint(b)
	if !ok {
		return 0, false
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u >= 1<<63 {
		return 0, false
	}
	return int64(u), true
}

// skip checks one value of any shape (keys unconstrained, duplicates still
// rejected) and moves past it.
func (d *decoder) skip() error {
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(anySchema, reflect.Value{})
	case c == '[':
		return d.array(anySchema, reflect.Value{})
	case c == '"':
		_, err := d.str(false)
		return err
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		_, err := d.number()
		return err
	default:
		return d.errf("unexpected character %q", c)
	}
}

func (d *decoder) literal(lit string) error {
	if len(d.data)-d.pos < len(lit) || string(d.data[d.pos:d.pos+len(lit)]) != lit {
		return d.errf("invalid literal")
	}
	d.pos += len(lit)
	return nil
}

// number scans a JSON number and reports whether it is an integer literal.
func (d *decoder) number() (bool, error) {
	b, p := d.data, d.pos
	isInt := true
	if p < len(b) && b[p] == '-' {
		p++
	}
	switch {
	case p < len(b) && b[p] == '0':
		p++
	case p < len(b) && b[p] >= '1' && b[p] <= '9':
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
	default:
		return false, d.errf("invalid number")
	}
	if p < len(b) && b[p] == '.' {
		isInt = false
		p++
		start := p
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
		if p == start {
			return false, d.errf("invalid number")
		}
	}
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		isInt = false
		p++
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			p++
		}
		start := p
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
		if p == start {
			return false, d.errf("invalid number")
		}
	}
	d.pos = p
	return isInt, nil
}

// str scans a string at d.pos. With want it returns the decoded bytes
// (aliasing data when there are no escapes, else d.sbuf: copy before the
// next call).
func (d *decoder) str(want bool) ([]byte, error) {
	b := d.data
	p := d.pos + 1
	start := p
	escaped := false
	for {
		for p < len(b) && plainByte[b[p]] {
			p++ // the common case: printable ASCII
		}
		if p >= len(b) {
			return nil, d.errf("unterminated string")
		}
		c := b[p]
		switch {
		case c == '"':
			d.pos = p + 1
			if !want {
				return nil, nil
			}
			if !escaped {
				return b[start:p], nil
			}
			return d.unescape(b[start:p]), nil
		case c == '\\':
			escaped = true
			if p+1 >= len(b) {
				return nil, d.errf("unterminated string")
			}
			switch b[p+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p += 2
			case 'u':
				if p+6 > len(b) || !isHex4(b[p+2:p+6]) {
					d.pos = p
					return nil, d.errf("invalid \\u escape")
				}
				p += 6
			default:
				d.pos = p
				return nil, d.errf("invalid escape %q", b[p+1])
			}
		case c < 0x20:
			d.pos = p
			return nil, d.errf("control character in string")
		case c < utf8.RuneSelf:
			p++
		default:
			r, n := utf8.DecodeRune(b[p:])
			if r == utf8.RuneError && n == 1 {
				d.pos = p
				return nil, d.errf("invalid UTF-8")
			}
			p += n
		}
	}
}

// plainByte marks the bytes a string scan can pass over without a second
// look: printable ASCII other than '"' and '\\'.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// unescape decodes an already validated string body into d.sbuf.
func (d *decoder) unescape(s []byte) []byte {
	d.sbuf = unescapeTo(d.sbuf[:0], s)
	return d.sbuf
}

// unescapeTo appends the decoding of an already validated string body to
// out the way encoding/json does (invalid surrogates become U+FFFD).
func unescapeTo(out, s []byte) []byte {
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			out = append(out, s[i])
			i++
			continue
		}
		switch s[i+1] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, hex4(s[i+2:i+6])); r2 != utf8.RuneError {
						out = utf8.AppendRune(out, r2)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // " \ /
			out = append(out, s[i+1])
		}
		i += 2
	}
	return out
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > d.maxDepth {
		return &DepthError{Offset: d.pos, Max: d.maxDepth}
	}
	return nil
}

// members walks the object at d.pos (its '{'), calling fn with each key
// (unescaped; valid until fn decodes its value) while the decoder stands
// at that key's value and the key is on the path; fn must consume the
// value. With dups set, a repeated key is a *DuplicateKeyError before fn
// sees it (struct targets find repeats by field instead, without a set).
func (d *decoder) members(dups bool, fn func(key []byte) error) error {
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // {
	var seen keySet
	d.ws()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		d.ws()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return d.errf("expected a string key")
		}
		ks := d.pos + 1
		key, err := d.str(true)
		if err != nil {
			return err
		}
		ke := d.pos - 1
		if d.onKey != nil {
			d.onKey(key)
		}
		if dups && seen.add(key, ke-ks == len(key)) {
			return &DuplicateKeyError{Key: string(key), Path: d.pathString()}
		}
		d.ws()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return d.errf("expected ':' after key")
		}
		d.pos++
		d.ws()
		if d.pos >= len(d.data) {
			return d.errf("unexpected end of input")
		}
		d.path.push(pathSeg{ks: ks, ke: ke, isKey: true})
		if err := fn(key); err != nil {
			return err
		}
		d.path.pop()
		d.ws()
		if d.pos >= len(d.data) {
			return d.errf("unexpected end of input in object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.depth--
			return nil
		default:
			return d.errf("expected ',' or '}' in object")
		}
	}
}

// parentPath is the path of the object whose key is last on the path.
func (d *decoder) parentPath() string {
	d.path.n--
	p := d.pathString()
	d.path.n++
	return p
}

func (d *decoder) object(s *schema, v reflect.Value) error {
	switch s.kind {
	case kStruct:
		var seenBits uint64
		var seenMore []bool
		if s.nField > 64 {
			seenMore = make([]bool, s.nField)
		}
		return d.members(false, func(key []byte) error {
			f, ok := s.fields[string(key)]
			if !ok {
				return &UnknownKeyError{Key: string(key), Path: d.parentPath()}
			}
			if seenMore != nil && seenMore[f.idx] || seenMore == nil && seenBits&(1<<f.idx) != 0 {
				return &DuplicateKeyError{Key: string(key), Path: d.parentPath()}
			}
			if seenMore != nil {
				seenMore[f.idx] = true
			} else {
				seenBits |= 1 << f.idx
			}
			var cv reflect.Value
			if v.IsValid() {
				cv = fieldByIndex(v, f.index)
			}
			return d.value(f.s, cv)
		})
	case kMap:
		if !v.IsValid() {
			return d.members(true, func([]byte) error { return d.value(s.elem, reflect.Value{}) })
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(s.t))
		}
		return d.members(true, func(key []byte) error {
			mapKey := reflect.ValueOf(string(key)).Convert(s.t.Key())
			cv := reflect.New(s.t.Elem()).Elem()
			if err := d.value(s.elem, cv); err != nil {
				return err
			}
			v.SetMapIndex(mapKey, cv)
			return nil
		})
	default: // checked only
		return d.members(true, func([]byte) error { return d.skip() })
	}
}

// smallKeys is how many keys an object holds before its duplicate check
// moves from comparing each new key with every earlier one (no allocation;
// most objects are this small, a receipt.recorded payload's 18 keys among
// them) to a set (linear in the number of keys).
const smallKeys = 32

// keySet finds a repeated key in one object. Keys are compared after
// unescaping, so "a" and "\u0061" are the same key.
type keySet struct {
	small [smallKeys]string
	n     int
	big   map[string]struct{}
}

// add records key and reports whether it was already present. stable says
// key aliases the document, which outlives the object and is not modified
// during a decode: the set then refers to the document's bytes instead of
// copying them (the map of an 80,000-key object allocates no key). A key
// that had escapes was decoded into scratch memory and is copied.
func (s *keySet) add(key []byte, stable bool) bool {
	if s.big != nil {
		if _, ok := s.big[string(key)]; ok {
			return true
		}
		s.big[s.keep(key, stable)] = struct{}{}
		return false
	}
	for _, k := range s.small[:s.n] {
		if k == string(key) {
			return true
		}
	}
	if s.n < smallKeys {
		s.small[s.n] = s.keep(key, stable)
		s.n++
		return false
	}
	s.big = make(map[string]struct{}, 4*smallKeys)
	for _, k := range s.small {
		s.big[k] = struct{}{}
	}
	s.big[s.keep(key, stable)] = struct{}{}
	return false
}

func (s *keySet) keep(key []byte, stable bool) string {
	if stable && len(key) > 0 {
		return unsafe.String(&key[0], len(key))
	}
	return string(key)
}

// fieldByIndex is reflect.Value.FieldByIndex that allocates nil embedded
// struct pointers on the way.
func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v
}

// elements walks the array at d.pos (its '['), calling fn with each
// index while the decoder stands at that element and the index is on the
// path; fn must consume the element. It returns the number of elements.
func (d *decoder) elements(fn func(i int) error) (int, error) {
	if err := d.enter(); err != nil {
		return 0, err
	}
	d.pos++ // [
	d.ws()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return 0, nil
	}
	d.path.push(pathSeg{})
	top := d.path.n - 1
	for i := 0; ; i++ {
		d.path.at(top).idx = i
		d.ws()
		if d.pos >= len(d.data) {
			return i, d.errf("unexpected end of input")
		}
		if err := fn(i); err != nil {
			return i, err
		}
		d.ws()
		if d.pos >= len(d.data) {
			return i, d.errf("unexpected end of input in array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			d.depth--
			d.path.pop()
			return i + 1, nil
		default:
			return i, d.errf("expected ',' or ']' in array")
		}
	}
}

func (d *decoder) array(s *schema, v reflect.Value) error {
	child := anySchema
	if s.elem != nil {
		child = s.elem
	}
	if !v.IsValid() {
		_, err := d.elements(func(int) error { return d.value(child, reflect.Value{}) })
		return err
	}
	if s.kind == kSlice {
		v.SetLen(0)
	}
	n, err := d.elements(func(i int) error {
		var ev reflect.Value
		switch {
		case s.kind == kSlice:
			if i >= v.Cap() {
				v.Grow(max(4, v.Cap()))
			}
			v.SetLen(i + 1)
			ev = v.Index(i)
			ev.SetZero()
		case i < v.Len():
			ev = v.Index(i)
		}
		return d.value(child, ev)
	})
	if err != nil {
		return err
	}
	switch {
	case s.kind == kSlice && n == 0:
		v.Set(reflect.MakeSlice(s.t, 0, 0)) // [] is an empty slice, not nil
	case s.kind == kArray:
		for j := n; j < v.Len(); j++ {
			v.Index(j).SetZero()
		}
	}
	return nil
}

// Compact returns raw (one valid JSON value) without insignificant
// whitespace; raw itself when it has none.
func Compact(raw []byte) json.RawMessage {
	if IsCompact(raw) {
		return raw
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return raw // invalid JSON is the caller's to report
	}
	return buf.Bytes()
}

// IsCompact reports whether raw has no insignificant whitespace, without
// allocating: it skips string contents and looks for whitespace elsewhere.
func IsCompact(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		if in {
			for i < len(raw) && plainByte[raw[i]] {
				i++
			}
			if i >= len(raw) {
				break
			}
		}
		switch b := raw[i]; {
		case in && b == '\\':
			i++
		case b == '"':
			in = !in
		case !in && (b == ' ' || b == '\t' || b == '\n' || b == '\r'):
			return false
		}
	}
	return true
}
