package adapters

import "testing"

// An earlier build's digest is never the current text's (a change of the
// guidance text adds the old digest to earlierGuidance, never the new), and
// names a guidance path.
func TestEarlierGuidanceIsNotTheCurrent(t *testing.T) {
	paths := map[string]string{}
	for _, f := range GuidanceFiles() {
		paths[f.Path] = SHA256Hex(f.Data)
	}
	for path, sums := range earlierGuidance {
		cur, ok := paths[path]
		if !ok {
			t.Fatalf("%s is not a guidance file", path)
		}
		for _, s := range sums {
			if s == cur {
				t.Fatalf("%s: the current text's digest is listed as an earlier build's", path)
			}
			if !EarlierGuidance(path, s) || EarlierGuidance(path, cur) {
				t.Fatalf("%s: EarlierGuidance disagrees with the list", path)
			}
		}
	}
}
