package strictjson

import "fmt"

// The errors below are the only ones the decoder returns for bad input
// (a target that is not a non-nil pointer is a programming error with a
// plain message). Callers branch on them with errors.As. Keys and paths in
// them are the unescaped keys of the document: the caller decides whether
// they may be echoed (a key is chosen by whoever wrote the document).

// SyntaxError is malformed JSON at a byte offset: bad tokens, invalid
// UTF-8, control characters in strings, trailing data, empty input.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// DepthError is a document nested deeper than the limit.
type DepthError struct {
	Offset int // the byte that opened the level beyond Max
	Max    int
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: nesting deeper than %d", e.Offset, e.Max)
}

// SizeError is a document larger than the limit. It is returned before any
// byte is read.
type SizeError struct {
	Size, Max int
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("JSON document is %d bytes, limit %d", e.Size, e.Max)
}

// UnknownKeyError names a key that the target type does not declare. Key
// matching is exact: encoding/json alone would also accept "ID" for "id".
type UnknownKeyError struct {
	Key  string
	Path string // where the object sits, e.g. "owned_files[0]"; "" at the top
}

func (e *UnknownKeyError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("unknown key %q", e.Key)
	}
	return fmt.Sprintf("unknown key %q in %s", e.Key, e.Path)
}

// DuplicateKeyError names a key that appears twice in one object (after
// unescaping: "a" and "\u0061" are the same key).
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

// TypeError is a JSON value of the wrong kind (or out of range) for its
// field.
type TypeError struct {
	Path string
	Want string // what the field takes: "string", "integer", "object", ...
	Got  string // the JSON kind, or the offending number
}

func (e *TypeError) Error() string {
	where := e.Path
	if where == "" {
		where = "value"
	}
	return fmt.Sprintf("%s: want %s, got %s", where, e.Want, e.Got)
}
