package events

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// MaxDepth bounds the nesting of any JSON document we accept from outside.
const MaxDepth = 32

// UnknownKeyError names a key that the target type does not declare. Key
// matching is exact: encoding/json alone would also accept "ID" for "id".
type UnknownKeyError struct {
	Key  string
	Path string // where the object sits, e.g. "payload.owned_files[0]"; "" at the top
}

func (e *UnknownKeyError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("unknown key %q", e.Key)
	}
	return fmt.Sprintf("unknown key %q in %s", e.Key, e.Path)
}

// DuplicateKeyError names a key that appears twice in one object.
type DuplicateKeyError struct {
	Key  string
	Path string
}

func (e *DuplicateKeyError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("duplicate key %q", e.Key)
	}
	return fmt.Sprintf("duplicate key %q in %s", e.Key, e.Path)
}

// SyntaxError is malformed JSON at a byte offset.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// StrictUnmarshal decodes one JSON value into v and rejects what
// encoding/json lets through silently: keys the target type does not declare
// exactly (case-sensitive, at any level, named with their path), duplicate
// keys (named), invalid UTF-8, nesting deeper than MaxDepth and trailing
// data. Callers bound the size of data before calling.
func StrictUnmarshal(data []byte, v any) error {
	rt := reflect.TypeOf(v)
	if rt == nil || rt.Kind() != reflect.Pointer {
		return fmt.Errorf("decode: target %T is not a pointer", v)
	}
	if err := checkJSON(data, schemaOf(rt.Elem())); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

// ValidJSON checks one JSON value with the structural rules of
// StrictUnmarshal (syntax, UTF-8, depth, duplicate keys, no trailing data)
// without a target type.
func ValidJSON(data []byte) error { return checkJSON(data, anySchema) }

// schema is what a JSON value may contain where a Go type is decoded:
// objects of a struct admit exactly the struct's json keys.
type schema struct {
	fields map[string]fieldSchema // struct: exact key -> field; nil otherwise
	nField int
	elem   *schema // map value / slice or array element
	free   bool    // anything goes (any, RawMessage, custom unmarshalers)
}

type fieldSchema struct {
	idx int // dense index for duplicate detection
	s   *schema
}

var (
	anySchema   = &schema{free: true}
	schemaCache sync.Map // reflect.Type -> *schema

	rawMessageType       = reflect.TypeFor[json.RawMessage]()
	jsonUnmarshalerType  = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType  = reflect.TypeFor[encoding.TextUnmarshaler]()
	scalarSchema         = &schema{}
	schemaBuildMu        sync.Mutex
	schemaBuildInProcess = map[reflect.Type]*schema{}
)

func schemaOf(t reflect.Type) *schema {
	if s, ok := schemaCache.Load(t); ok {
		return s.(*schema)
	}
	schemaBuildMu.Lock()
	defer schemaBuildMu.Unlock()
	s := buildSchema(t)
	schemaCache.Store(t, s)
	return s
}

// buildSchema runs under schemaBuildMu; schemaBuildInProcess breaks cycles
// of recursive types.
func buildSchema(t reflect.Type) *schema {
	if s, ok := schemaCache.Load(t); ok {
		return s.(*schema)
	}
	if s, ok := schemaBuildInProcess[t]; ok {
		return s
	}
	if t == rawMessageType || t.Kind() == reflect.Interface ||
		t.Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
		return anySchema
	}
	if t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return scalarSchema // decoded from a string; objects are a type error
	}
	switch t.Kind() {
	case reflect.Pointer:
		return buildSchema(t.Elem())
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return scalarSchema // []byte is a base64 string
		}
		s := &schema{}
		schemaBuildInProcess[t] = s
		s.elem = buildSchema(t.Elem())
		delete(schemaBuildInProcess, t)
		return s
	case reflect.Map:
		s := &schema{}
		schemaBuildInProcess[t] = s
		s.elem = buildSchema(t.Elem())
		delete(schemaBuildInProcess, t)
		return s
	case reflect.Struct:
		s := &schema{fields: map[string]fieldSchema{}}
		schemaBuildInProcess[t] = s
		addFields(s, t)
		delete(schemaBuildInProcess, t)
		return s
	default:
		return scalarSchema
	}
}

// addFields collects the json keys of t, promoting untagged embedded
// structs as encoding/json does.
func addFields(s *schema, t reflect.Type) {
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
				addFields(s, ft)
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
			continue // encoding/json ignores ambiguous names; so do we (shallower wins)
		}
		s.fields[name] = fieldSchema{idx: s.nField, s: buildSchema(f.Type)}
		s.nField++
	}
}

// checkJSON validates data as exactly one JSON value against s.
func checkJSON(data []byte, s *schema) error {
	c := checker{data: data}
	c.ws()
	if c.pos >= len(data) {
		return &SyntaxError{Offset: c.pos, Msg: "empty input"}
	}
	if err := c.value(s); err != nil {
		return err
	}
	c.ws()
	if c.pos != len(data) {
		return &SyntaxError{Offset: c.pos, Msg: "trailing data after JSON value"}
	}
	return nil
}

// checker walks JSON bytes once, without allocating on the common path.
type checker struct {
	data  []byte
	pos   int
	depth int
	path  []pathSeg // for messages only
	kbuf  []byte    // scratch for unescaped keys
}

// pathSeg is an object key (the raw bytes data[ks:ke]) or an array index.
type pathSeg struct {
	ks, ke int
	isKey  bool
	idx    int
}

func (c *checker) pathString() string {
	var b strings.Builder
	for i, p := range c.path {
		if p.isKey {
			if i > 0 {
				b.WriteByte('.')
			}
			b.Write(c.data[p.ks:p.ke])
		} else {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(p.idx))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func (c *checker) errf(format string, a ...any) error {
	return &SyntaxError{Offset: c.pos, Msg: fmt.Sprintf(format, a...)}
}

func (c *checker) ws() {
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *checker) value(s *schema) error {
	if c.pos >= len(c.data) {
		return c.errf("unexpected end of input")
	}
	switch b := c.data[c.pos]; {
	case b == '{':
		return c.object(s)
	case b == '[':
		return c.array(s)
	case b == '"':
		_, err := c.str(false)
		return err
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	default:
		return c.errf("unexpected character %q", b)
	}
}

func (c *checker) literal(lit string) error {
	if len(c.data)-c.pos < len(lit) || string(c.data[c.pos:c.pos+len(lit)]) != lit {
		return c.errf("invalid literal")
	}
	c.pos += len(lit)
	return nil
}

func (c *checker) number() error {
	d, p := c.data, c.pos
	if p < len(d) && d[p] == '-' {
		p++
	}
	switch {
	case p < len(d) && d[p] == '0':
		p++
	case p < len(d) && d[p] >= '1' && d[p] <= '9':
		for p < len(d) && d[p] >= '0' && d[p] <= '9' {
			p++
		}
	default:
		return c.errf("invalid number")
	}
	if p < len(d) && d[p] == '.' {
		p++
		start := p
		for p < len(d) && d[p] >= '0' && d[p] <= '9' {
			p++
		}
		if p == start {
			return c.errf("invalid number")
		}
	}
	if p < len(d) && (d[p] == 'e' || d[p] == 'E') {
		p++
		if p < len(d) && (d[p] == '+' || d[p] == '-') {
			p++
		}
		start := p
		for p < len(d) && d[p] >= '0' && d[p] <= '9' {
			p++
		}
		if p == start {
			return c.errf("invalid number")
		}
	}
	c.pos = p
	return nil
}

// str scans a string at c.pos. With wantKey it returns the decoded bytes
// (aliasing data when there are no escapes, else c.kbuf).
func (c *checker) str(wantKey bool) ([]byte, error) {
	d := c.data
	p := c.pos + 1
	start := p
	escaped := false
	for {
		if p >= len(d) {
			return nil, c.errf("unterminated string")
		}
		b := d[p]
		switch {
		case b == '"':
			c.pos = p + 1
			if !wantKey {
				return nil, nil
			}
			if !escaped {
				return d[start:p], nil
			}
			return c.unescape(d[start:p]), nil
		case b == '\\':
			escaped = true
			if p+1 >= len(d) {
				return nil, c.errf("unterminated string")
			}
			switch d[p+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p += 2
			case 'u':
				if p+6 > len(d) || !isHex4(d[p+2:p+6]) {
					c.pos = p
					return nil, c.errf("invalid \\u escape")
				}
				p += 6
			default:
				c.pos = p
				return nil, c.errf("invalid escape %q", d[p+1])
			}
		case b < 0x20:
			c.pos = p
			return nil, c.errf("control character in string")
		case b < utf8.RuneSelf:
			p++
		default:
			r, n := utf8.DecodeRune(d[p:])
			if r == utf8.RuneError && n == 1 {
				c.pos = p
				return nil, c.errf("invalid UTF-8")
			}
			p += n
		}
	}
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// unescape decodes an already validated string body the way encoding/json
// does (invalid surrogates become U+FFFD), so duplicate detection sees the
// keys the decoder sees.
func (c *checker) unescape(s []byte) []byte {
	out := c.kbuf[:0]
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
	c.kbuf = out
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

func (c *checker) enter() error {
	c.depth++
	if c.depth > MaxDepth {
		return c.errf("nesting deeper than %d", MaxDepth)
	}
	return nil
}

func (c *checker) object(s *schema) error {
	if err := c.enter(); err != nil {
		return err
	}
	c.pos++ // {
	var seenBits uint64
	var seenMore []bool
	if s.fields != nil && s.nField > 64 {
		seenMore = make([]bool, s.nField)
	}
	var seenKeys []string // maps and free objects
	c.ws()
	if c.pos < len(c.data) && c.data[c.pos] == '}' {
		c.pos++
		c.depth--
		return nil
	}
	for {
		c.ws()
		if c.pos >= len(c.data) || c.data[c.pos] != '"' {
			return c.errf("expected a string key")
		}
		ks := c.pos + 1
		key, err := c.str(true)
		ke := c.pos - 1
		if err != nil {
			return err
		}
		child := anySchema
		switch {
		case s.fields != nil:
			f, ok := s.fields[string(key)]
			if !ok {
				return &UnknownKeyError{Key: string(key), Path: c.pathString()}
			}
			if seenMore != nil {
				if seenMore[f.idx] {
					return &DuplicateKeyError{Key: string(key), Path: c.pathString()}
				}
				seenMore[f.idx] = true
			} else {
				if seenBits&(1<<f.idx) != 0 {
					return &DuplicateKeyError{Key: string(key), Path: c.pathString()}
				}
				seenBits |= 1 << f.idx
			}
			child = f.s
		default:
			for _, k := range seenKeys {
				if k == string(key) {
					return &DuplicateKeyError{Key: k, Path: c.pathString()}
				}
			}
			seenKeys = append(seenKeys, string(key))
			if s.elem != nil {
				child = s.elem
			} else if !s.free {
				child = anySchema // a type error for encoding/json to report
			}
		}
		c.ws()
		if c.pos >= len(c.data) || c.data[c.pos] != ':' {
			return c.errf("expected ':' after key")
		}
		c.pos++
		c.ws()
		c.path = append(c.path, pathSeg{ks: ks, ke: ke, isKey: true})
		if err := c.value(child); err != nil {
			return err
		}
		c.path = c.path[:len(c.path)-1]
		c.ws()
		if c.pos >= len(c.data) {
			return c.errf("unexpected end of input in object")
		}
		switch c.data[c.pos] {
		case ',':
			c.pos++
		case '}':
			c.pos++
			c.depth--
			return nil
		default:
			return c.errf("expected ',' or '}' in object")
		}
	}
}

func (c *checker) array(s *schema) error {
	if err := c.enter(); err != nil {
		return err
	}
	c.pos++ // [
	child := anySchema
	if s.elem != nil {
		child = s.elem
	}
	c.ws()
	if c.pos < len(c.data) && c.data[c.pos] == ']' {
		c.pos++
		c.depth--
		return nil
	}
	c.path = append(c.path, pathSeg{})
	for i := 0; ; i++ {
		c.path[len(c.path)-1].idx = i
		c.ws()
		if err := c.value(child); err != nil {
			return err
		}
		c.ws()
		if c.pos >= len(c.data) {
			return c.errf("unexpected end of input in array")
		}
		switch c.data[c.pos] {
		case ',':
			c.pos++
		case ']':
			c.pos++
			c.depth--
			c.path = c.path[:len(c.path)-1]
			return nil
		default:
			return c.errf("expected ',' or ']' in array")
		}
	}
}

func compact(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return raw // invalid JSON is reported by the payload decoder
	}
	return buf.Bytes()
}

// isCompact reports whether raw has no insignificant whitespace, without
// allocating: it skips string contents and looks for whitespace elsewhere.
func isCompact(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
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

// storedSuffixLen is len(`,"prev_hash":"` + 64 hex + `","hash":"` + 64 hex + `"}`).
const storedSuffixLen = 14 + 64 + 10 + 64 + 2

// DecodeStored decodes bytes this package's Encode produced. It is the fast
// path for reading our own ledger (replay, rebuild, verify): a fixed-order
// scan with no reflection. Anything that does not have the exact layout is an
// error; verify then reports the position. It does not validate the payload
// nor recompute the hash: verify does that explicitly. The result owns its
// memory (b may be reused or unmapped afterwards).
func DecodeStored(b []byte) (Envelope, error) {
	e, err := DecodeStoredRef(b)
	if err != nil {
		return e, err
	}
	e.Payload = append(json.RawMessage(nil), e.Payload...)
	return e, nil
}

// DecodeStoredRef is DecodeStored without copying the payload: e.Payload
// aliases b, so the envelope is valid only as long as b is (inside the bbolt
// transaction that produced b). Folds use it to avoid a copy per event.
func DecodeStoredRef(b []byte) (Envelope, error) {
	var e Envelope
	bad := func(what string) (Envelope, error) {
		return Envelope{}, fmt.Errorf("stored envelope: malformed %s", what)
	}
	p, ok := cut(b, `{"id":"`)
	if !ok || len(p) < 26 {
		return bad("id")
	}
	if err := e.ID.UnmarshalText(p[:26]); err != nil {
		return bad("id")
	}
	p = p[26:]
	if p, ok = cut(p, `","stream":"`); !ok {
		return bad("stream")
	}
	// One string allocation backs stream, type, actor and both hashes.
	if len(p) < storedSuffixLen {
		return bad("stream")
	}
	var stream, typ, at, actor []byte
	if stream, p, ok = until(p, '"'); !ok {
		return bad("stream")
	}
	if p, ok = cut(p, `","version":`); !ok {
		return bad("version")
	}
	if e.Version, p, ok = uintUntil(p, ','); !ok {
		return bad("version")
	}
	if p, ok = cut(p, `,"position":`); !ok {
		return bad("position")
	}
	if e.Position, p, ok = uintUntil(p, ','); !ok {
		return bad("position")
	}
	if p, ok = cut(p, `,"type":"`); !ok {
		return bad("type")
	}
	if typ, p, ok = until(p, '"'); !ok {
		return bad("type")
	}
	if p, ok = cut(p, `","schema_version":`); !ok {
		return bad("schema_version")
	}
	var sv uint64
	if sv, p, ok = uintUntil(p, ','); !ok || sv > 1<<16 {
		return bad("schema_version")
	}
	e.SchemaVersion = int(sv)
	if p, ok = cut(p, `,"recorded_at":"`); !ok {
		return bad("recorded_at")
	}
	if at, p, ok = until(p, '"'); !ok {
		return bad("recorded_at")
	}
	if p, ok = cut(p, `","actor":"`); !ok {
		return bad("actor")
	}
	if actor, p, ok = until(p, '"'); !ok {
		return bad("actor")
	}
	if p, ok = cut(p, `","payload":`); !ok || len(p) < storedSuffixLen+2 {
		return bad("payload")
	}
	tail := p[len(p)-storedSuffixLen:]
	e.Payload = json.RawMessage(p[:len(p)-storedSuffixLen])
	if tail, ok = cut(tail, `,"prev_hash":"`); !ok {
		return bad("prev_hash")
	}
	prev := tail[:64]
	if tail, ok = cut(tail[64:], `","hash":"`); !ok {
		return bad("hash")
	}
	hash := tail[:64]
	if string(tail[64:]) != `"}` {
		return bad("end")
	}
	t, err := parseUTC(at)
	if err != nil {
		return bad("recorded_at")
	}
	e.RecordedAt = t
	buf := make([]byte, 0, len(stream)+len(typ)+len(actor)+128)
	buf = append(buf, stream...)
	buf = append(buf, typ...)
	buf = append(buf, actor...)
	buf = append(buf, prev...)
	buf = append(buf, hash...)
	s := string(buf)
	n := 0
	take := func(k int) string { v := s[n : n+k]; n += k; return v }
	e.Stream = take(len(stream))
	e.Type = take(len(typ))
	e.Actor = take(len(actor))
	e.PrevHash = take(64)
	e.Hash = take(64)
	return e, nil
}

// parseUTC parses the RFC 3339 UTC timestamp our Encode writes.
func parseUTC(b []byte) (time.Time, error) {
	if len(b) == 0 || b[len(b)-1] != 'Z' {
		return time.Time{}, errors.New("not UTC")
	}
	var t time.Time
	if err := t.UnmarshalText(b); err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

func cut(p []byte, prefix string) ([]byte, bool) {
	if len(p) < len(prefix) || string(p[:len(prefix)]) != prefix {
		return p, false
	}
	return p[len(prefix):], true
}

func until(p []byte, c byte) ([]byte, []byte, bool) {
	i := bytes.IndexByte(p, c)
	if i < 0 {
		return nil, p, false
	}
	return p[:i], p[i:], true
}

func uintUntil(p []byte, c byte) (uint64, []byte, bool) {
	i := bytes.IndexByte(p, c)
	if i <= 0 || i > 20 {
		return 0, p, false
	}
	var v uint64
	for _, d := range p[:i] {
		if d < '0' || d > '9' {
			return 0, p, false
		}
		nv := v*10 + uint64(d-'0')
		if nv/10 != v {
			return 0, p, false // overflow
		}
		v = nv
	}
	if i > 1 && p[0] == '0' {
		return 0, p, false // not canonical
	}
	return v, p[i:], true
}

var typeMarker = []byte(`,"type":"`)

// PeekType returns the type of a stored envelope without decoding it, so a
// fold can skip events it does not handle. ok is false for bytes that do not
// have the stored layout. The type is the first `,"type":"` field: the id,
// stream, version and position before it cannot contain that sequence.
func PeekType(b []byte) (string, bool) {
	t, ok := PeekTypeBytes(b)
	return string(t), ok
}

// PeekTypeBytes is PeekType without the string allocation; the result
// aliases b.
func PeekTypeBytes(b []byte) ([]byte, bool) {
	i := bytes.Index(b, typeMarker)
	if i < 0 {
		return nil, false
	}
	rest := b[i+len(typeMarker):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return nil, false
	}
	return rest[:j], true
}

// ParseID is ulid.ParseStrict with a message that names the input.
func ParseID(s string) (ulid.ULID, error) {
	id, err := ulid.ParseStrict(s)
	if err != nil {
		return ulid.ULID{}, fmt.Errorf("invalid event id %q: %w", s, err)
	}
	return id, nil
}
