package adapters

import (
	"strings"
	"testing"
)

func TestParseRelease(t *testing.T) {
	ok := map[string]Release{
		"3.4.2":            {3, 4, 2},
		"0.0.0":            {0, 0, 0},
		"999999.0.1":       {999999, 0, 1},
		ContractRelease:    {0, 15, 13},
		"10.20.30":         {10, 20, 30},
		"1.999999.999999":  {1, 999999, 999999},
		"0.15.999999":      {0, 15, 999999},
		"123456.123456.12": {123456, 123456, 12},
	}
	for s, want := range ok {
		if got, err := ParseRelease(s); err != nil || got != want || got.String() != s {
			t.Errorf("%q: %+v %v", s, got, err)
		}
	}
	for _, s := range []string{"", "0.15", "0.15.13.1", "v0.15.13", "0.15.13-rc1", "0.15.13+go", "00.15.13", "0.015.1",
		"0.15.-1", "0.15.+1", " 0.15.13", "0.15.13 ", "1000000.0.0", "0..1", "0.15.x", "０.15.13", strings.Repeat("1", 4096)} {
		if r, err := ParseRelease(s); err == nil {
			t.Errorf("%q parsed as %v", s, r)
		} else if len(err.Error()) > 80 {
			t.Errorf("%q: unbounded error %q", s[:10], err)
		}
	}
}

func TestParseSeries(t *testing.T) {
	if ma, mi, err := ParseSeries("0.15"); err != nil || ma != 0 || mi != 15 {
		t.Errorf("0.15: %d %d %v", ma, mi, err)
	}
	for _, s := range []string{"", "0", "0.15.6", "0.015", "v0.15", "0.15 ", strings.Repeat("9", 100)} {
		if _, _, err := ParseSeries(s); err == nil {
			t.Errorf("%q parsed", s)
		}
	}
}

func TestReleaseOrder(t *testing.T) {
	asc := []string{"0.14.9", "0.15.0", "0.15.6", "0.15.13", "0.16.0", "1.0.0", "3.1.0", "3.4.2", "3.10.0"}
	for i := range asc {
		for j := range asc {
			a, _ := ParseRelease(asc[i])
			b, _ := ParseRelease(asc[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%s vs %s: %d, want %d", a, b, got, want)
			}
		}
	}
	if s := Contract().Series(); s != "0.15" {
		t.Errorf("contract series %s", s)
	}
}

// FuzzParseRelease: whatever parses prints back as its input (one
// spelling per release), and no input takes more than linear time.
func FuzzParseRelease(f *testing.F) {
	for _, s := range []string{"0.15.13", "3.4.2", "0.15", "01.2.3", "1.2.3.4", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseRelease(s); err == nil && r.String() != s {
			t.Fatalf("%q parsed as %v", s, r)
		}
		if ma, mi, err := ParseSeries(s); err == nil && (Release{ma, mi, 0}).Series() != s {
			t.Fatalf("series %q parsed as %d.%d", s, ma, mi)
		}
	})
}
