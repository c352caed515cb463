package adapters

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/events"
)

func sampleManifest() Manifest {
	c := Context{StoreID: "01234567-89ab-4def-8123-456789abcdef", ProjectRootFingerprint: strings.Repeat("a", 64)}
	m := Manifest{SchemaVersion: 1, ProtocolVersion: 1, StoreID: c.StoreID, ProjectRootFingerprint: c.ProjectRootFingerprint, CLIVersion: "0.1.0", Harnesses: map[string]Record{}}
	for _, a := range All() {
		if a.Publishes() {
			m.Harnesses[a.ID] = a.Record(a.Material(c))
		}
	}
	return m
}

func TestManifestRoundTrip(t *testing.T) {
	m := sampleManifest()
	enc := m.Encode()
	if !bytes.HasSuffix(enc, []byte("}\n")) || !bytes.Contains(enc, []byte("\n  \"harnesses\": {")) {
		t.Fatalf("not pretty JSON with a trailing newline:\n%s", enc)
	}
	got, err := DecodeManifest(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !got.SemanticallyEqual(m) || !bytes.Equal(got.Encode(), enc) {
		t.Fatal("decode(encode(m)) differs from m")
	}
	got.CLIVersion = "9.9.9"
	if !got.SemanticallyEqual(m) {
		t.Fatal("cli_version must not matter semantically")
	}
	r := got.Harnesses["codex"]
	r.State = "active"
	got.Harnesses["codex"] = r
	if got.SemanticallyEqual(m) {
		t.Fatal("a changed record compared equal")
	}
}

func TestDecodeManifestRejects(t *testing.T) {
	good := string(sampleManifest().Encode())
	rep := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	cases := map[string]struct{ data, want string }{
		"unknown key":            {rep(`"cli_version"`, `"extra": 1, "cli_version"`), `unknown key "extra"`},
		"unknown nested key":     {rep(`"bridge_path"`, `"expires_at": "x", "bridge_path"`), `unknown key "expires_at"`},
		"duplicate key":          {rep(`"cli_version"`, `"store_id": "x", "cli_version"`), `duplicate key "store_id"`},
		"missing store_id":       {rep(`"store_id": "01234567-89ab-4def-8123-456789abcdef",`, ``), `missing key "store_id"`},
		"protocol 2":             {rep(`"protocol_version": 1`, `"protocol_version": 2`), "protocol_version 2"},
		"uuid v1":                {rep(`89ab-4def`, `89ab-1def`), "version-4 UUID"},
		"unregistered harness":   {rep(`"pi": {`, `"no-such-harness": {`), `"no-such-harness" is not a registered adapter`},
		"bad state":              {rep(`"state": "needs-trust"`, `"state": "ready"`), `state "ready"`},
		"dotdot path":            {rep(`".pi/extensions/tree-ring-memory.ts"`, `"../x.ts"`), "bad component"},
		"absolute path":          {rep(`"path": ".codex/hooks.json"`, `"path": "/etc/hooks.json"`), "project-relative"},
		"not allow-listed":       {rep(`"path": ".codex/hooks.json"`, `"path": ".codex/config.toml"`), "allow-list"},
		"short digest":           {rep(`"bridge_fingerprint": "`, `"bridge_fingerprint": "ab`), "64 lowercase hex"},
		"bad separator":          {rep(`"block_id": "codex",`, `"block_id": "codex", "leading_separator": " ",`), "leading_separator"},
		"bridge path not owned":  {rep(`"bridge_path": ".pi/extensions/tree-ring-memory.ts"`, `"bridge_path": "AGENTS.md"`), "bridge_path"},
		"capability prefix":      {rep(`"cli_version": "0.1.0"`, `"cli_version": "trcap_v1_x"`), "capability prefix"},
		"file and block overlap": {rep(`"path": ".codex/hooks.json"`, `"path": "AGENTS.md"`), "both as file and as block"},
		"not JSON":               {"{", "invalid JSON"},
		"too large":              {good + strings.Repeat(" ", MaxBridgeFileBytes), "larger than"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeManifest([]byte(c.data))
			var me *ManifestError
			if !errors.As(err, &me) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a *ManifestError containing %q", err, c.want)
			}
		})
	}
}

func TestDecodeManifestDefaults(t *testing.T) {
	data := `{"schema_version":1,"protocol_version":1,"store_id":"01234567-89ab-4def-8123-456789abcdef",
	"project_root_fingerprint":"` + strings.Repeat("a", 64) + `","cli_version":"0.14.0",
	"harnesses":{"agent-zero":{"state":"needs-plugin","adapter_capability":"native-preflight"}}}`
	m, err := DecodeManifest([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Harnesses["agent-zero"]; r.AdapterVersion != "1" || r.BridgeFingerprint != "" || len(r.OwnedFiles) != 0 {
		t.Fatalf("defaults: %+v", r)
	}
}

// FuzzDecodeManifest: never panics; whatever decodes re-encodes to a
// manifest that decodes to the same thing (the encoding is canonical).
func FuzzDecodeManifest(f *testing.F) {
	f.Add(sampleManifest().Encode())
	f.Add([]byte(`{"schema_version":1,"protocol_version":1,"store_id":"01234567-89ab-4def-8123-456789abcdef","project_root_fingerprint":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","cli_version":"0.14.0","harnesses":{"claude-code":{"state":"configured-awaiting-proof","adapter_version":"1","adapter_capability":"native-preflight","bridge_fingerprint":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb","bridge_path":".claude/settings.json","owned_files":[{"path":".claude/skills/tree-ring-memory/SKILL.md","sha256":"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"}],"managed_blocks":[{"path":".claude/settings.json","block_id":"claude-code","sha256":"dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd","leading_separator":"\n"}]}}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest(data)
		if err != nil {
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		enc := m.Encode()
		m2, err := DecodeManifest(enc)
		if err != nil {
			t.Fatalf("re-decode: %v\n%s", err, enc)
		}
		if !m2.SemanticallyEqual(m) || m2.CLIVersion != m.CLIVersion || !bytes.Equal(m2.Encode(), enc) {
			t.Fatal("encoding is not canonical")
		}
	})
}

// The ledger's contracts materialize as the adapters' records: ContractOf
// and RecordOf are inverse, and ManifestOf states every folded record,
// published or planned, in the bytes Encode publishes.
func TestManifestOfLedgerRecords(t *testing.T) {
	want := sampleManifest()
	recs := map[string]events.BridgeRecord{}
	published := true
	for id, r := range want.Harnesses {
		c := ContractOf(r)
		// Reverse the files and blocks: the manifest is in fingerprint order
		// whatever order the event stated.
		slices.Reverse(c.OwnedFiles)
		slices.Reverse(c.ManagedBlocks)
		if got := RecordOf(c); !got.Equal(r) {
			t.Fatalf("%s: RecordOf(ContractOf(r)) = %+v, want %+v", id, got, r)
		}
		recs[id] = events.BridgeRecord{Published: published, Contract: c}
		published = !published
	}
	got := ManifestOf(want.StoreID, want.ProjectRootFingerprint, want.CLIVersion, recs)
	if !bytes.Equal(got.Encode(), want.Encode()) {
		t.Fatalf("ManifestOf:\n%s\nwant\n%s", got.Encode(), want.Encode())
	}
	empty := ManifestOf(want.StoreID, want.ProjectRootFingerprint, "0.2.0", nil)
	if empty.Harnesses == nil || len(empty.Harnesses) != 0 || empty.CLIVersion != "0.2.0" || empty.SchemaVersion != SchemaVersion {
		t.Fatalf("empty manifest %+v", empty)
	}
}
