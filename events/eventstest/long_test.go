package eventstest

import "testing"

// The switch is on only for TREE_RING_LONG=1 exactly.
func TestLongSuites(t *testing.T) {
	for value, on := range map[string]bool{"": false, "0": false, "yes": false, "true": false, "1": true} {
		t.Setenv(LongEnv, value)
		if LongSuites() != on {
			t.Errorf("%s=%q: LongSuites() = %v", LongEnv, value, !on)
		}
	}
}
