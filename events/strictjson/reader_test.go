package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestReader(t *testing.T) {
	doc := []byte(` {"s":"a\"b","\u006e":7,"raw":{"k":[1,{"deep":true}]},"skip":[1,2],"o":{"x":"y"}} `)
	r := NewReader(doc, Limits{})
	got := map[string]string{}
	var nested []string
	err := r.Object(func(key []byte) error {
		switch k := string(key); k {
		case "s":
			s, err := r.String()
			got[k] = string(s)
			return err
		case "n":
			n, err := r.Uint()
			got[k] = string(rune('0' + n))
			return err
		case "raw":
			raw, err := r.RawKeys(func(key []byte) { nested = append(nested, string(key)) })
			got[k] = string(raw)
			return err
		case "o":
			return r.Object(func(key []byte) error {
				got["o."+string(key)] = r.Path()
				return nil
			})
		}
		return nil // "skip": skipped by Object
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"s": `a"b`, "n": "7", "raw": `{"k":[1,{"deep":true}]}`, "o.x": "o.x"}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(nested, []string{"k", "deep"}) {
		t.Fatalf("got %v %v", got, nested)
	}
}

func TestReaderArrayAndBool(t *testing.T) {
	r := NewReader([]byte(` [true, false ,{"k":1},"skipped",[true]] `), Limits{})
	var got []string
	err := r.Array(func(i int) error {
		switch i {
		case 0, 1:
			b, err := r.Bool()
			got = append(got, r.Path()+"="+map[bool]string{true: "true", false: "false"}[b])
			return err
		case 4:
			return r.Array(func(int) error {
				b, err := r.Bool()
				got = append(got, r.Path()+"="+map[bool]string{true: "true", false: "false"}[b])
				return err
			})
		}
		return nil // 2 and 3: skipped by Array
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"[0]=true", "[1]=false", "[4][0]=true"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	r = NewReader([]byte(`[-9223372036854775808, 0, 9223372036854775807, -0]`), Limits{})
	var ints []int64
	if err := r.Array(func(int) error { n, err := r.Int(); ints = append(ints, n); return err }); err != nil {
		t.Fatal(err)
	}
	if want := []int64{-1 << 63, 0, 1<<63 - 1, 0}; !reflect.DeepEqual(ints, want) {
		t.Fatalf("Int: %v, want %v", ints, want)
	}
	r = NewReader([]byte(`[]`), Limits{})
	if err := r.Array(func(int) error { t.Fatal("an element in []"); return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestReaderRefusals(t *testing.T) {
	cases := []struct {
		in   string
		read func(r *Reader) error
		want any
	}{
		{`[]`, func(r *Reader) error { return r.Object(func([]byte) error { return nil }) }, new(*TypeError)},
		{`{"a":1}`, func(r *Reader) error {
			return r.Object(func([]byte) error { _, err := r.String(); return err })
		}, new(*TypeError)},
		{`{"a":-1}`, func(r *Reader) error {
			return r.Object(func([]byte) error { _, err := r.Uint(); return err })
		}, new(*TypeError)},
		{`{"a":1.5}`, func(r *Reader) error {
			return r.Object(func([]byte) error { _, err := r.Uint(); return err })
		}, new(*TypeError)},
		{`{"a":1.5}`, func(r *Reader) error {
			return r.Object(func([]byte) error { _, err := r.Int(); return err })
		}, new(*TypeError)},
		{`{"a":9223372036854775808}`, func(r *Reader) error {
			return r.Object(func([]byte) error { _, err := r.Int(); return err })
		}, new(*TypeError)},
		{`{"a":"1"}`, func(r *Reader) error {
			return r.Object(func([]byte) error { _, err := r.Int(); return err })
		}, new(*TypeError)},
		{`{"a":1,"a":2}`, func(r *Reader) error { return r.Object(func([]byte) error { return nil }) }, new(*DuplicateKeyError)},
		{`{"a":[1,}`, func(r *Reader) error { return r.Object(func([]byte) error { return nil }) }, new(*SyntaxError)},
		{`{"a":1}}`, func(r *Reader) error {
			if err := r.Object(func([]byte) error { return nil }); err != nil {
				return err
			}
			return r.End()
		}, new(*SyntaxError)},
		{``, func(r *Reader) error { return r.Skip() }, new(*SyntaxError)},
		{`{}`, func(r *Reader) error { return r.Array(func(int) error { return nil }) }, new(*TypeError)},
		{`[1,]`, func(r *Reader) error { return r.Array(func(int) error { return nil }) }, new(*SyntaxError)},
		{`[1 2]`, func(r *Reader) error { return r.Array(func(int) error { return nil }) }, new(*SyntaxError)},
		{`"true"`, func(r *Reader) error { _, err := r.Bool(); return err }, new(*TypeError)},
		{`nul`, func(r *Reader) error { _, err := r.Bool(); return err }, new(*SyntaxError)},
		{`tru`, func(r *Reader) error { _, err := r.Bool(); return err }, new(*SyntaxError)},
		{`null`, func(r *Reader) error { _, err := r.Bool(); return err }, new(*TypeError)},
	}
	for _, c := range cases {
		r := NewReader([]byte(c.in), Limits{})
		err := c.read(&r)
		if err == nil || !errors.As(err, c.want) {
			t.Errorf("%q: error %T %v, want %T", c.in, err, err, c.want)
		}
		// The error is sticky.
		if _, again := r.Raw(); again == nil {
			t.Errorf("%q: read after an error succeeded", c.in)
		}
	}
}

// FuzzReader: the Reader and Unmarshal read every document the same way:
// the same verdict, and for an object the same top-level keys with the
// same values.
func FuzzReader(f *testing.F) {
	for _, s := range []string{`{"a":"x","\u0062":[1,{"c":null}],"d":{"e":1.5e3}}`, `{"\b":[]}`, `{"a":1,"\u0061":2}`, `{"a":"\ud800"}`, `[1]`, `{"a":1}x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]json.RawMessage
		werr := Unmarshal(data, &want)
		if werr == nil && want == nil {
			return // null: a nil map for Unmarshal, not an object for the Reader
		}
		r := NewReader(data, Limits{})
		got := map[string]json.RawMessage{}
		gerr := r.Object(func(key []byte) error {
			raw, err := r.Raw()
			got[string(key)] = raw
			return err
		})
		if gerr == nil {
			gerr = r.End()
		}
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("Unmarshal %v, Reader %v on %q", werr, gerr, data)
		}
		if werr == nil && !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("Unmarshal %q, Reader %q", want, got)
		}
	})
}

// TestPathPastNear: paths deeper than the segments a decoder holds in
// place (pathStack.near) name every level, through Unmarshal and the
// Reader alike, and a duplicate among an object's first smallKeys keys
// (compared, not hashed) is found as one past them is.
func TestPathPastNear(t *testing.T) {
	var deep, want strings.Builder
	for i := range 11 {
		fmt.Fprintf(&deep, `{"k%d":[`, i)
		if i > 0 {
			want.WriteByte('.')
		}
		fmt.Fprintf(&want, "k%d[0]", i)
	}
	deep.WriteString(`{"a":1,"a":2}`)
	deep.WriteString(strings.Repeat("]}", 11))
	var dk *DuplicateKeyError
	if err := Valid([]byte(deep.String())); !errors.As(err, &dk) || dk.Path != want.String() {
		t.Fatalf("Valid: %v, want the path %s", err, want.String())
	}
	r := NewReader([]byte(deep.String()), Limits{})
	if err := r.Skip(); !errors.As(err, &dk) || dk.Path != want.String() {
		t.Fatalf("Reader: %v, want the path %s", err, want.String())
	}
	// The same decoder walks on past a deep value: the path shrinks back.
	clean := strings.Replace(deep.String(), `,"a":2`, "", 1)
	r = NewReader([]byte(`{"x":`+clean+`,"y":{"b":1,"b":2}}`), Limits{})
	if err := r.Skip(); !errors.As(err, &dk) || dk.Path != "y" {
		t.Fatalf("after a deep value: %v, want the path y", err)
	}
	for _, n := range []int{2, 17, smallKeys, smallKeys + 1} {
		var obj strings.Builder
		obj.WriteByte('{')
		for i := range n {
			fmt.Fprintf(&obj, `"key%02d":%d,`, i, i)
		}
		obj.WriteString(`"key00":0}`)
		if err := Valid([]byte(obj.String())); !errors.As(err, &dk) || dk.Key != "key00" {
			t.Errorf("%d keys then a repeat: %v", n, err)
		}
	}
}

// TestReaderTypedMembers: Str, GoInt and UnknownKey, the calls the
// hand-written decoders are made of.
func TestReaderTypedMembers(t *testing.T) {
	r := NewReader([]byte(`{"s":"a\u00e9","n":-7,"o":{"z":1}}`), Limits{})
	var s string
	var n int
	err := r.Object(func(k []byte) (err error) {
		switch string(k) {
		case "s":
			s, err = r.Str()
		case "n":
			n, err = r.GoInt()
		case "o":
			return r.Object(func(k []byte) error { return r.UnknownKey(k) })
		}
		return err
	})
	var uk *UnknownKeyError
	if !errors.As(err, &uk) || uk.Key != "z" || uk.Path != "o" || s != "aé" || n != -7 {
		t.Fatalf("got %q %d %v", s, n, err)
	}
	r = NewReader([]byte(`{"n":1.5}`), Limits{})
	var te *TypeError
	if err := r.Object(func([]byte) error { _, err := r.GoInt(); return err }); !errors.As(err, &te) || te.Path != "n" {
		t.Fatalf("GoInt of 1.5: %v", err)
	}
}
