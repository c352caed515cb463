package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestStoreOfSubject(t *testing.T) {
	const id = "3d1a160e-83e4-4b24-b222-ee5b36ff9ce4"
	cases := []struct {
		subject string
		want    string
		ok      bool
	}{
		{"tree-ring.events." + id, id, true},
		{"tree-ring.events." + strings.ToUpper(id), "", false},
		{"tree-ring.events." + id + ".x", "", false},
		{"tree-ring.events.../../etc", "", false},
		{"tree-ring.events.", "", false},
		{"other.events." + id, "", false},
		{"tree-ring.events.3d1a160e_83e4-4b24-b222-ee5b36ff9ce4", "", false},
		{"tree-ring.events.3d1a160e-83e4-4b24-b222-ee5b36ff9ce", "", false},
	}
	for _, c := range cases {
		got, ok := StoreOfSubject(c.subject)
		if got != c.want || ok != c.ok {
			t.Errorf("StoreOfSubject(%q) = %q, %v; want %q, %v", c.subject, got, ok, c.want, c.ok)
		}
	}
	if Subject(id) != "tree-ring.events."+id {
		t.Errorf("Subject(%s) = %s", id, Subject(id))
	}
}

// FuzzStoreOfSubject: whatever a stream holds, a store id taken from a
// subject is a safe single path element that round-trips.
func FuzzStoreOfSubject(f *testing.F) {
	f.Add("tree-ring.events.3d1a160e-83e4-4b24-b222-ee5b36ff9ce4")
	f.Add("tree-ring.events.../..")
	f.Add("tree-ring.events.")
	f.Fuzz(func(t *testing.T, subject string) {
		id, ok := StoreOfSubject(subject)
		if !ok {
			return
		}
		if filepath.Base(id) != id || strings.ContainsAny(id, "/.\\\x00") || Subject(id) != subject {
			t.Fatalf("subject %q gave store id %q", subject, id)
		}
	})
}

func TestReadSecret(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name, body, want, err string
	}{
		{"plain", "s3cret\n", "s3cret", ""},
		{"crlf", "s3cret\r\nignored\n", "s3cret", ""},
		{"no newline", "s3cret", "s3cret", ""},
		{"empty", "\nx", "", "first line is empty"},
		{"large", strings.Repeat("x", maxSecretBytes+1), "", "larger than"},
	}
	for _, c := range cases {
		got, err := readSecret(write(c.name, c.body))
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %q, %v; want %q, %q", c.name, got, err, c.want, c.err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the secret: %v", c.name, err)
		}
	}
	if _, err := readSecret(filepath.Join(dir, "absent")); err == nil {
		t.Error("an absent password file is not an error")
	}
}

func TestConnectRefusesHalfOptions(t *testing.T) {
	for _, o := range []ConnOptions{
		{},
		{URL: "nats://127.0.0.1:1", User: "u"},
		{URL: "nats://127.0.0.1:1", PasswordFile: "p"},
		{URL: "nats://127.0.0.1:1", TLSCert: "c"},
	} {
		if nc, err := Connect(o); err == nil {
			nc.Close()
			t.Errorf("%+v connected", o)
		}
	}
}

// A stream that could drop events a replica needs is named for what would
// drop them; the stream publish creates drops nothing.
func TestDropsHistory(t *testing.T) {
	if why := dropsHistory(historyStream("S", 3)); why != "" {
		t.Fatalf("the created stream: %s", why)
	}
	cases := map[string]func(c *jetstream.StreamConfig){
		"retention WorkQueue":     func(c *jetstream.StreamConfig) { c.Retention = jetstream.WorkQueuePolicy },
		"max_msgs 10":             func(c *jetstream.StreamConfig) { c.MaxMsgs = 10 },
		"max_msgs_per_subject 10": func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 10 },
		"max_age 1h0m0s":          func(c *jetstream.StreamConfig) { c.MaxAge = time.Hour },
		"discard old":             func(c *jetstream.StreamConfig) { c.Discard = jetstream.DiscardOld },
		"purges are allowed":      func(c *jetstream.StreamConfig) { c.DenyPurge = false },
	}
	for want, edit := range cases {
		c := historyStream("S", 1)
		edit(&c)
		if why := dropsHistory(c); !strings.Contains(why, want) {
			t.Errorf("%s: %q", want, why)
		}
	}
	// Unlimited as the nats CLI writes it (-1) drops nothing.
	c := historyStream("S", 1)
	c.MaxMsgs, c.MaxMsgsPerSubject, c.MaxBytes = -1, -1, -1
	if why := dropsHistory(c); why != "" {
		t.Errorf("-1 limits: %s", why)
	}
}
