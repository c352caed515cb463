package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type inner struct {
	Name string `json:"name"`
}

type embedded struct {
	From string `json:"from"`
}

type outer struct {
	embedded
	ID      string           `json:"id"`
	Items   []inner          `json:"items"`
	Ptr     *inner           `json:"ptr,omitempty"`
	ByName  map[string]inner `json:"by_name"`
	Raw     json.RawMessage  `json:"raw"`
	Any     any              `json:"any"`
	Skipped string           `json:"-"`
	NoTag   int
}

func TestUnmarshal(t *testing.T) {
	ok := `{"from":"a","id":"x","items":[{"name":"n"}],"ptr":{"name":"p"},"by_name":{"k":{"name":"v"}},"raw":{"Anything":[1,{"x":null}]},"any":{"b":true},"NoTag":3}`
	var v outer
	if err := Unmarshal([]byte(ok), &v); err != nil {
		t.Fatal(err)
	}
	if v.From != "a" || v.Items[0].Name != "n" || v.Ptr.Name != "p" || v.ByName["k"].Name != "v" || v.NoTag != 3 {
		t.Fatalf("decoded %+v", v)
	}
	cases := []struct {
		in        string
		key, path string
		dup       bool
	}{
		{`{"ID":"x"}`, "ID", "", false},
		{`{"Skipped":"x"}`, "Skipped", "", false},
		{`{"notag":1}`, "notag", "", false},
		{`{"items":[{"name":"n"},{"nAme":"n"}]}`, "nAme", "items[1]", false},
		{`{"ptr":{"name":"p","x":1}}`, "x", "ptr", false},
		{`{"by_name":{"k":{"name":"v","extra":0}}}`, "extra", "by_name.k", false},
		{`{"id":"x","id":"y"}`, "id", "", true},
		{`{"from":"x","fr\u006fm":"y"}`, "from", "", true},
		{`{"by_name":{"k":{},"k":{}}}`, "k", "by_name", true},
		{`{"raw":{"a":1,"a":2}}`, "a", "raw", true},
		{`{"any":[{"a":1,"a":2}]}`, "a", "any[0]", true},
	}
	for _, c := range cases {
		var v outer
		err := Unmarshal([]byte(c.in), &v)
		var uk *UnknownKeyError
		var dk *DuplicateKeyError
		switch {
		case c.dup && errors.As(err, &dk):
			if dk.Key != c.key || dk.Path != c.path {
				t.Errorf("%s: duplicate %q at %q, want %q at %q", c.in, dk.Key, dk.Path, c.key, c.path)
			}
		case !c.dup && errors.As(err, &uk):
			if uk.Key != c.key || uk.Path != c.path {
				t.Errorf("%s: unknown %q at %q, want %q at %q", c.in, uk.Key, uk.Path, c.key, c.path)
			}
		default:
			t.Errorf("%s: error %v", c.in, err)
		}
	}
}

func TestUnmarshalSyntax(t *testing.T) {
	bad := []string{
		``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{a:1}`,
		`01`, `1.`, `.5`, `1e`, `-`, `+1`, `tru`, `nul`, `"abc`, `"\x"`, `"\u12"`, "\"a\tb\"",
		`"` + "\xff" + `"`, `{} {}`, `{}x`, `[` + strings.Repeat(`[`, MaxDepth) + strings.Repeat(`]`, MaxDepth+1),
	}
	for _, in := range bad {
		if err := Valid([]byte(in)); err == nil {
			t.Errorf("Valid accepted %q", in)
		}
	}
	good := []string{
		`0`, `-0.5e+10`, `1E9`, `"\u00e9\ud83d\ude00\/"`, ` {"a" : [ true , false , null ] } `,
		strings.Repeat(`[`, MaxDepth) + strings.Repeat(`]`, MaxDepth), `"é"`,
	}
	for _, in := range good {
		if err := Valid([]byte(in)); err != nil {
			t.Errorf("Valid rejected %q: %v", in, err)
		}
	}
}

func TestUnmarshalTypeError(t *testing.T) {
	var v outer
	if err := Unmarshal([]byte(`{"items":"x"}`), &v); err == nil || !strings.Contains(err.Error(), "items") {
		t.Fatalf("type error: %v", err)
	}
	if err := Unmarshal([]byte(`{}`), v); err == nil {
		t.Fatal("accepted a non-pointer target")
	}
}

// FuzzValid checks the hand-written scanner against encoding/json: it
// never accepts what encoding/json rejects.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"\ud800"`, `-0.0e-0`, `{"a":1,"a":2}`, `[[[]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if Valid(data) == nil && !json.Valid(data) {
			t.Fatalf("Valid accepted invalid JSON %q", data)
		}
	})
}

type fuzzTarget struct {
	embedded
	S   string            `json:"s"`
	I   int8              `json:"i"`
	U   uint16            `json:"u"`
	F   float32           `json:"f"`
	B   bool              `json:"b"`
	P   *inner            `json:"p"`
	L   []inner           `json:"l"`
	A   [2]int            `json:"a"`
	M   map[string][]int  `json:"m"`
	R   json.RawMessage   `json:"r"`
	X   any               `json:"x"`
	Ptr *int              `json:"ptr"`
	Str map[string]string `json:"str"`
}

// FuzzUnmarshal: whatever the strict decoder accepts, encoding/json
// accepts too and decodes to the same value.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"from":"a","s":"x\u00e9","i":-128,"u":65535,"f":1.5e3,"b":true,"p":{"name":"n"},"l":[{"name":"a"},{}],"a":[1,2,3],"m":{"k":[1]},"r":{"z":[]},"x":[1,"a",null],"ptr":7,"str":{"a":"b"}}`,
		`{"i":128}`, `{"s":null,"l":null,"p":null}`, `{"a":[]}`, `{"l":[]}`, `{"S":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var strict, loose fuzzTarget
		if err := Unmarshal(data, &strict); err != nil {
			return
		}
		if err := json.Unmarshal(data, &loose); err != nil {
			t.Fatalf("strict accepted what encoding/json rejects: %v\n%q", err, data)
		}
		a, _ := json.Marshal(strict)
		b, _ := json.Marshal(loose)
		if string(a) != string(b) {
			t.Fatalf("decoders disagree on %q:\nstrict %s\nloose  %s", data, a, b)
		}
	})
}
