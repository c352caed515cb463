package memory

import "testing"

// The detector on typical summaries (prose, a URL, an assignment-like
// phrase), with every rule and with the published rules only (the first
// publishedRules entries): the cost of ours, as a ratio in the same run.
var benchTexts = []string{
	"Run make before pushing; the CI lint step fails otherwise",
	"see https://github.com/tree-ring/tree-ring/issues/13 for the capture lines",
	"the API key goes in the keychain, token budget is 8k, aws region us-east-1",
	"Prefer table tests with a fixed clock and the sequential ULID source",
}

const publishedRules = 8

func benchDetector(b *testing.B, rules []secretRule) {
	d := newDetector(rules)
	for _, s := range benchTexts { // compile outside the timing
		d.detect(s, false)
	}
	b.ResetTimer()
	for b.Loop() {
		for _, s := range benchTexts {
			if i, _ := d.detect(s, false); i >= 0 {
				b.Fatal(s)
			}
		}
	}
}

func BenchmarkSecretKind(b *testing.B) {
	b.Run("published", func(b *testing.B) { benchDetector(b, secretPatterns[:publishedRules]) })
	b.Run("all", func(b *testing.B) { benchDetector(b, secretPatterns) })
}

// InspectText on the same texts against its oracle (one search per
// trigger, the text prepared per detector): the one-pass index's gain.
func BenchmarkInspectText(b *testing.B) {
	for _, c := range []struct {
		name string
		fn   func(string) string
	}{{"index", InspectText}, {"oracle", oracleInspectText}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				for _, s := range benchTexts {
					if c.fn(s) != SensitivityNormal {
						b.Fatal(s)
					}
				}
			}
		})
	}
}
