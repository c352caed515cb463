package memory

import "fmt"

// EchoKey renders a key of a document from outside for an error message.
// Keys are chosen by whoever wrote the document, so only what looks like
// a field name (at most 40 bytes of lowercase letters, digits and '_',
// normal sensitivity) is echoed; anything else could carry a value (a
// path, an id, a secret) and is not repeated.
func EchoKey(key string) string {
	if key == "" || len(key) > 40 {
		return ""
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return ""
		}
	}
	if InspectText(key) != SensitivityNormal {
		return ""
	}
	return fmt.Sprintf(" (%q)", key)
}
