package strictjson

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestErrorTypes: every refusal is one typed error a caller can branch on
// with errors.As, carrying the key, path, offset or limit it names.
func TestErrorTypes(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	wide := string(wideObject(80_000, true))
	cases := []struct {
		name   string
		in     string
		limits Limits
		check  func(error) bool
	}{
		{"syntax", `{"a":}`, Limits{}, func(err error) bool { var e *SyntaxError; return errors.As(err, &e) && e.Offset == 5 }},
		{"empty", ` `, Limits{}, func(err error) bool { var e *SyntaxError; return errors.As(err, &e) && e.Msg == "empty input" }},
		{"trailing", `{} {}`, Limits{}, func(err error) bool { var e *SyntaxError; return errors.As(err, &e) && e.Offset == 3 }},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", Limits{}, func(err error) bool { var e *SyntaxError; return errors.As(err, &e) && e.Msg == "invalid UTF-8" }},
		{"depth", deep, Limits{}, func(err error) bool {
			var e *DepthError
			return errors.As(err, &e) && e.Max == MaxDepth && e.Offset == MaxDepth
		}},
		{"depth limit", `{"a":{"b":{}}}`, Limits{MaxDepth: 2}, func(err error) bool { var e *DepthError; return errors.As(err, &e) && e.Max == 2 }},
		{"size", `{"a":1}`, Limits{MaxBytes: 6}, func(err error) bool { var e *SizeError; return errors.As(err, &e) && e.Size == 7 && e.Max == 6 }},
		{"default size", `"` + strings.Repeat("x", MaxBytes) + `"`, Limits{}, func(err error) bool { var e *SizeError; return errors.As(err, &e) && e.Max == MaxBytes }},
		{"duplicate", `{"x":{"a":1,"b":2,"a":3}}`, Limits{}, func(err error) bool {
			var e *DuplicateKeyError
			return errors.As(err, &e) && e.Key == "a" && e.Path == "x"
		}},
		{"duplicate by escape", `{"a":1,"\u0061":2}`, Limits{}, func(err error) bool { var e *DuplicateKeyError; return errors.As(err, &e) && e.Key == "a" }},
		{"duplicate control key", `{"\b":1,"\u0008":2}`, Limits{}, func(err error) bool { var e *DuplicateKeyError; return errors.As(err, &e) && e.Key == "\b" }},
		// Past smallKeys the check is a set: the 80,000th key repeating the
		// first is still found.
		{"duplicate in a wide object", wide, Limits{}, func(err error) bool {
			var e *DuplicateKeyError
			return errors.As(err, &e) && e.Key == "k00000"
		}},
		{"duplicate escaped in a wide object", strings.Replace(wide, `"k00000":`, `"\u006b00000":`, 1), Limits{}, func(err error) bool {
			var e *DuplicateKeyError
			return errors.As(err, &e) && e.Key == "k00000"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.limits.decode([]byte(c.in), anySchema, reflect.Value{})
			if !c.check(err) {
				t.Fatalf("error %T %v", err, err)
			}
			r := NewReader([]byte(c.in), c.limits)
			if err := r.Skip(); err == nil {
				err = r.End()
				if !c.check(err) {
					t.Fatalf("reader: error %T %v", err, err)
				}
			} else if !c.check(err) {
				t.Fatalf("reader: error %T %v", err, err)
			}
		})
	}
}

// TestTypedTargetErrors: unknown keys and wrong kinds against a type.
func TestTypedTargetErrors(t *testing.T) {
	var v struct {
		A []struct {
			B int8 `json:"b"`
		} `json:"a"`
	}
	var uk *UnknownKeyError
	if err := Unmarshal([]byte(`{"a":[{"b":1},{"\u0042":1}]}`), &v); !errors.As(err, &uk) || uk.Key != "B" || uk.Path != "a[1]" {
		t.Fatalf("unknown key: %v", err)
	}
	var te *TypeError
	if err := Unmarshal([]byte(`{"a":[{"b":300}]}`), &v); !errors.As(err, &te) || te.Path != "a[0].b" || te.Got != "number 300" {
		t.Fatalf("range: %v", err)
	}
	if err := Unmarshal([]byte(`{"a":{}}`), &v); !errors.As(err, &te) || te.Want != "array" || te.Got != "object" {
		t.Fatalf("kind: %v", err)
	}
	// An escaped key is named unescaped in the path too.
	var m map[string]map[string]int
	var dk *DuplicateKeyError
	if err := Unmarshal([]byte(`{"\u0078":{"a":1,"a":2}}`), &m); !errors.As(err, &dk) || dk.Path != "x" {
		t.Fatalf("path of an escaped key: %v", err)
	}
}
