package events

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// TypeStoreLabeled names a store for people (tree-ring fleet label;
// docs/fleet.md): the label travels with the history to every replica,
// and fleet status shows it beside the store id. The newest one counts.
const TypeStoreLabeled = "store.labeled"

func init() { register[StoreLabeled](TypeStoreLabeled, 1, StoreStream) }

// MaxLabelRunes bounds a label (a hostname fits).
const MaxLabelRunes = 64

// StoreLabeled is the store's label: what the user gave, one word of
// printable characters (fleetsign.CleanLabel makes one of any text).
type StoreLabeled struct {
	StoreID string `json:"store_id"`
	Label   string `json:"label"`
}

// Check bounds every field: a store id, a label of 1 to MaxLabelRunes
// printable, non-space characters.
func (p StoreLabeled) Check() error {
	if !uuidV4(p.StoreID) {
		return fmt.Errorf("store_id %q is not a hyphenated lowercase version-4 UUID", p.StoreID)
	}
	if n := utf8.RuneCountInString(p.Label); n == 0 || n > MaxLabelRunes || !utf8.ValidString(p.Label) {
		return fmt.Errorf("label: want 1 to %d characters", MaxLabelRunes)
	}
	for _, r := range p.Label {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("label: %q is not a printable, non-space character", r)
		}
	}
	return nil
}
