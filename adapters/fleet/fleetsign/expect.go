package fleetsign

import (
	"bufio"
	"crypto/ed25519"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/tree-ring/tree-ring/events"
)

// Expected is one line of a fleet file: a store an auditor expects, the
// public key its history must be signed with, and a label for people.
type Expected struct {
	StoreID   string            `json:"store_id"`
	PublicKey ed25519.PublicKey `json:"-"`
	Key       string            `json:"public_key"`
	Label     string            `json:"label"`
}

// Line is the fleet file line of a store, as `fleet identity` prints it.
func Line(storeID string, pub ed25519.PublicKey, label string) string {
	return storeID + " " + EncodeKey(pub) + " " + CleanLabel(label)
}

// CleanLabel keeps a label on one line of printable characters, at most
// 64 (a hostname by default).
func CleanLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return '-'
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 64 {
		s = string(r[:64])
	}
	if s == "" {
		return "-"
	}
	return s
}

// maxFleetFile bounds a fleet file (about 120 bytes a store).
const maxFleetFile = 16 << 20

// ParseExpect reads a fleet file: one store per line, `STORE_ID
// PUBLIC_KEY LABEL` (the label is the rest of the line and optional);
// blank lines and lines starting with # are skipped. A store listed twice
// is refused: which key would count?
func ParseExpect(r io.Reader) (map[string]Expected, error) {
	out := map[string]Expected{}
	sc := bufio.NewScanner(io.LimitReader(r, maxFleetFile))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			return nil, fmt.Errorf("line %d: want STORE_ID PUBLIC_KEY [LABEL]", n)
		}
		if !events.ValidStoreID(f[0]) {
			return nil, fmt.Errorf("line %d: %q is not a store id", n, f[0])
		}
		pub, err := DecodeKey(f[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, dup := out[f[0]]; dup {
			return nil, fmt.Errorf("line %d: store %s is listed twice", n, f[0])
		}
		label := "-"
		if len(f) > 2 {
			label = CleanLabel(strings.Join(f[2:], " "))
		}
		out[f[0]] = Expected{StoreID: f[0], PublicKey: pub, Key: f[1], Label: label}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no store listed")
	}
	return out, nil
}
