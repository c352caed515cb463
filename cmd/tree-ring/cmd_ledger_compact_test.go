package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Given a store whose memories were forgotten (free pages), when `ledger
// compact` runs, then the file shrinks, audit verify passes, the events
// are the same and recall still answers.
func TestLedgerCompact(t *testing.T) {
	p := newHP(t, ".claude")
	p.init()
	var ids []string
	for i := range 60 {
		ids = append(ids, strings.TrimSpace(p.ok("", "remember", fmt.Sprintf("Compaction note %d keeps the vet gate green", i), "--event-type", "lesson")))
	}
	for _, id := range ids[:40] {
		p.ok("", "forget", id, "--reason", "test")
	}
	events := p.ok("", "events")
	var out struct {
		OK          bool  `json:"ok"`
		BytesBefore int64 `json:"bytes_before"`
		BytesAfter  int64 `json:"bytes_after"`
		Verified    struct {
			Events uint64 `json:"events"`
		} `json:"verified"`
	}
	raw := p.ok("", "--json", "ledger", "compact")
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatal(err)
	}
	if !out.OK || out.BytesAfter <= 0 || out.BytesAfter >= out.BytesBefore || out.Verified.Events == 0 {
		t.Fatalf("compact: %s", raw)
	}
	p.ok("", "audit", "verify")
	if got := p.ok("", "events"); got != events {
		t.Error("the events changed")
	}
	if got := p.ok("", "recall", "compaction"); !strings.Contains(got, ids[59]) {
		t.Errorf("recall after compact: %q", got)
	}
}
