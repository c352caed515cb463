package memory

import (
	"regexp"
	"slices"
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

// A rule's regexp is compiled only when a text reaches it: texts without
// its triggers (or without what it requires) compile nothing, so a hook
// whose texts trigger no rule compiles no regexp.
func TestPatternsCompileOnFirstUse(t *testing.T) {
	rules := slices.Clone(secretPatterns)
	for i := range rules {
		rules[i].re = lazy(rules[i].re.src)
	}
	d := newDetector(rules)
	compiled := func() []string {
		var names []string
		for _, p := range rules {
			if p.re.re != nil {
				names = append(names, p.name)
			}
		}
		return names
	}
	for _, s := range []string{"Implementation note 7 for subsystem 3.", "see https://example.com/x", "aws region us-east-1",
		"the API key goes in the keychain, token budget is 8k"} {
		if i, _ := d.detect(s, false); i >= 0 {
			t.Fatalf("%q flagged", s)
		}
	}
	if got := compiled(); len(got) != 0 {
		t.Fatalf("texts that reach no pattern compiled %v", got)
	}
	if i, _ := d.detect("password = hunter2", false); i < 0 || rules[i].name != "secret_assignment" {
		t.Fatalf("password = hunter2: rule %d", i)
	}
	if got := compiled(); !slices.Equal(got, []string{"secret_assignment"}) {
		t.Fatalf("compiled %v, want only secret_assignment", got)
	}
}

// Prose that reaches only the short service prefixes (api-, pat., -us)
// compiles their small pattern, never the large one of the other
// service formats.
func TestShortServicePrefixesCompileTheirOwnPattern(t *testing.T) {
	rules := slices.Clone(secretPatterns)
	for i := range rules {
		rules[i].re = lazy(rules[i].re.src)
	}
	d := newDetector(rules)
	if i, _ := d.detect("the api-gateway serves the pat. field to en-us users", false); i >= 0 {
		t.Fatalf("flagged by %s", rules[i].name)
	}
	var compiled []string
	for _, p := range rules {
		if p.re.re != nil {
			compiled = append(compiled, p.name)
		}
	}
	if !slices.Equal(compiled, []string{"service_token_short_prefix"}) {
		t.Fatalf("compiled %v, want only service_token_short_prefix", compiled)
	}
}
