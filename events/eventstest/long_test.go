package eventstest

import "testing"

// Long runs a test only under TREE_RING_LONG=1 (exactly "1").
func TestLongSwitch(t *testing.T) {
	for _, c := range []struct {
		value string
		runs  bool
	}{{"", false}, {"0", false}, {"yes", false}, {"1", true}} {
		t.Setenv(LongEnv, c.value)
		ran := false
		t.Run("case", func(t *testing.T) {
			Long(t, "a long case")
			ran = true
		})
		if ran != c.runs {
			t.Errorf("%s=%q: ran %v, want %v", LongEnv, c.value, ran, c.runs)
		}
	}
}
