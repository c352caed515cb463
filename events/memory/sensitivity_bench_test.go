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
	saved := secretPatterns
	secretPatterns = rules
	defer func() { secretPatterns = saved }()
	for _, s := range benchTexts { // compile outside the timing
		SecretKind(s)
	}
	b.ResetTimer()
	for b.Loop() {
		for _, s := range benchTexts {
			if SecretKind(s) != "" {
				b.Fatal(s)
			}
		}
	}
}

func BenchmarkSecretKind(b *testing.B) {
	b.Run("published", func(b *testing.B) { benchDetector(b, secretPatterns[:publishedRules]) })
	b.Run("all", func(b *testing.B) { benchDetector(b, secretPatterns) })
}
