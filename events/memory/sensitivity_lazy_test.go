package memory

import (
	"regexp"
	"testing"
)

// The detector's patterns compile lazily; every one must be valid.
func TestSensitivityPatternsCompile(t *testing.T) {
	for _, p := range secretPatterns {
		if _, err := regexp.Compile(p.re.src); err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
	}
	for _, p := range categoryPatterns {
		if _, err := regexp.Compile(p.re.src); err != nil {
			t.Errorf("%s: %v", p.class, err)
		}
	}
}
