package preflight

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tree-ring/tree-ring/adapters"
)

const goodDescriptor = `{
  "schema_version": 1,
  "kind": "tree-ring-agent-zero-plugin-capability",
  "plugin_id": "tree_ring_memory",
  "plugin_version": "3.4.1",
  "activation_protocol_version": 1,
  "tree_ring_version": {
    "min": "0.15.6",
    "minor": "0.15"
  },
  "enabled": true
}
`

const goodPluginYAML = "name: tree_ring_memory\ntitle: Tree Ring Memory\nversion: \"3.4.1\" # release\nsettings:\n  name: nested names do not count\n"

// plugin writes a plugin root with a descriptor and plugin.yaml and returns
// the descriptor path and a project directory (elsewhere).
func plugin(t *testing.T, desc, yaml string) (string, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "plugins", "tree_ring_memory")
	project := filepath.Join(base, "project")
	for _, d := range []string{root, project} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, DescriptorName), []byte(desc), 0o644); err != nil {
		t.Fatal(err)
	}
	if yaml != "" {
		if err := os.WriteFile(filepath.Join(root, "plugin.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(root, DescriptorName), project
}

// descriptorFor is goodDescriptor with another release and series.
func descriptorFor(plugin, from, series string) string {
	return strings.NewReplacer(`"3.4.1"`, `"`+plugin+`"`, `"0.15.6"`, `"`+from+`"`, `"0.15"`, `"`+series+`"`).Replace(goodDescriptor)
}

// The published plugin releases with their descriptors' series, and later
// releases of the same series, load against this core (0.15.13); a release
// of another series does not, and says why with both versions.
func TestLoadDescriptor(t *testing.T) {
	cases := []struct {
		plugin, from, series string
		refusal              string // "" when accepted
	}{
		{"3.2.0", "0.15.3", "0.15", ""},
		{"3.3.0", "0.15.3", "0.15", ""},
		{"3.3.1", "0.15.3", "0.15", ""},
		{"3.4.0", "0.15.5", "0.15", ""},
		{"3.4.1", "0.15.6", "0.15", ""},
		{"3.4.2", "0.15.6", "0.15", ""},
		{"3.10.0", "0.15.13", "0.15", ""},
		{"3.1.0", "0.14.0", "0.14", "plugin 3.1.0 requires Tree Ring 0.14.0 through 0.14.x; this core implements 0.15.13"},
		{"3.5.0", "0.16.0", "0.16", "plugin 3.5.0 requires Tree Ring 0.16.0 through 0.16.x; this core implements 0.15.13"},
		{"3.4.9", "0.15.14", "0.15", "plugin 3.4.9 requires Tree Ring 0.15.14 through 0.15.x; this core implements 0.15.13"},
		{"3.0.1", "0.15.6", "0.15", "plugin 3.0.1 predates 3.1.0, the first release with an activation descriptor"},
	}
	for _, c := range cases {
		p, proj := plugin(t, descriptorFor(c.plugin, c.from, c.series), strings.Replace(goodPluginYAML, "3.4.1", c.plugin, 1))
		d, err := LoadDescriptor(p, proj)
		switch {
		case c.refusal == "" && (err != nil || d != Descriptor{c.plugin, c.from, c.series}):
			t.Errorf("%s (%s): %+v %v", c.plugin, c.series, d, err)
		case c.refusal != "" && (err == nil || err.Error() != "Agent Zero plugin descriptor: "+c.refusal):
			t.Errorf("%s (%s): got %v, want %s", c.plugin, c.series, err, c.refusal)
		}
	}
}

// CheckSeries against several core releases: the series must be the
// core's MAJOR.MINOR and the core at least min; min must lie in the series.
func TestCheckSeries(t *testing.T) {
	core := func(s string) adapters.Release {
		r, err := adapters.ParseRelease(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cases := []struct {
		core, plugin, from, series string
		refusal                    string
	}{
		{"0.15.6", "3.4.1", "0.15.6", "0.15", ""},
		{"0.15.5", "3.4.1", "0.15.6", "0.15", "plugin 3.4.1 requires Tree Ring 0.15.6 through 0.15.x; this core implements 0.15.5"},
		{"0.16.0", "3.4.1", "0.15.6", "0.15", "plugin 3.4.1 requires Tree Ring 0.15.6 through 0.15.x; this core implements 0.16.0"},
		{"0.16.2", "3.5.0", "0.16.0", "0.16", ""},
		{"1.15.13", "3.4.1", "0.15.6", "0.15", "plugin 3.4.1 requires Tree Ring 0.15.6 through 0.15.x; this core implements 1.15.13"},
		{"0.14.9", "3.1.0", "0.14.0", "0.14", ""},
		{"0.15.13", "3.1.0", "0.14.0", "0.15", "plugin 3.1.0 declares tree_ring_version.min 0.14.0 outside its series 0.15"},
		{"0.15.13", "3.4.1", "0.15.6", "0.15.6", "tree_ring_version.minor is not a MAJOR.MINOR series"},
		{"0.15.13", "3.4.1", "0.15", "0.15", "tree_ring_version.min is not a MAJOR.MINOR.PATCH release"},
		{"0.15.13", "3.4.1", "0.15.06", "0.15", "tree_ring_version.min is not a MAJOR.MINOR.PATCH release"},
		{"0.15.13", "3.4.1-rc1", "0.15.6", "0.15", "plugin_version is not a MAJOR.MINOR.PATCH release"},
		{"0.15.13", "v3.4.1", "0.15.6", "0.15", "plugin_version is not a MAJOR.MINOR.PATCH release"},
		{"0.15.13", "", "0.15.6", "0.15", "plugin_version is not a MAJOR.MINOR.PATCH release"},
		{"0.15.13", "3.0.9", "0.15.6", "0.15", "plugin 3.0.9 predates 3.1.0, the first release with an activation descriptor"},
	}
	for _, c := range cases {
		err := CheckSeries(Descriptor{c.plugin, c.from, c.series}, core(c.core))
		var de *DescriptorError
		switch {
		case c.refusal == "" && err != nil:
			t.Errorf("core %s, %+v: %v", c.core, c, err)
		case c.refusal != "" && (!errors.As(err, &de) || de.Reason != c.refusal):
			t.Errorf("core %s, plugin %s: got %v, want %s", c.core, c.plugin, err, c.refusal)
		}
	}
}

func TestLoadDescriptorRefusals(t *testing.T) {
	var de *DescriptorError
	if _, err := LoadDescriptor("", "/p"); !errors.As(err, &de) {
		t.Errorf("unset: %v", err)
	}
	cases := map[string]struct{ desc, yaml string }{
		"unknown key":   {strings.Replace(goodDescriptor, `"enabled"`, `"capability": "x", "enabled"`, 1), goodPluginYAML},
		"duplicate key": {strings.Replace(goodDescriptor, `"enabled": true`, `"enabled": true, "enabled": true`, 1), goodPluginYAML},
		"disabled":      {strings.Replace(goodDescriptor, `"enabled": true`, `"enabled": false`, 1), goodPluginYAML},
		"no enabled": {strings.Replace(goodDescriptor, `,
  "enabled": true`, ``, 1), goodPluginYAML},
		"wrong kind":          {strings.Replace(goodDescriptor, "plugin-capability", "plugin", 1), goodPluginYAML},
		"wrong plugin id":     {strings.Replace(goodDescriptor, `"plugin_id": "tree_ring_memory"`, `"plugin_id": "other"`, 1), goodPluginYAML},
		"schema 2":            {strings.Replace(goodDescriptor, `"schema_version": 1`, `"schema_version": 2`, 1), goodPluginYAML},
		"protocol 2":          {strings.Replace(goodDescriptor, `"activation_protocol_version": 1`, `"activation_protocol_version": 2`, 1), goodPluginYAML},
		"min outside series":  {strings.Replace(goodDescriptor, `"min": "0.15.6"`, `"min": "0.14.0"`, 1), goodPluginYAML},
		"other series":        {descriptorFor("3.5.0", "0.16.0", "0.16"), strings.Replace(goodPluginYAML, "3.4.1", "3.5.0", 1)},
		"not a release":       {strings.Replace(goodDescriptor, `"3.4.1"`, `"3.4"`, 1), strings.Replace(goodPluginYAML, "3.4.1", "3.4", 1)},
		"no plugin.yaml":      {goodDescriptor, ""},
		"yaml other version":  {goodDescriptor, strings.Replace(goodPluginYAML, "3.4.1", "3.4.2", 1)},
		"yaml other name":     {goodDescriptor, strings.Replace(goodPluginYAML, "name: tree_ring_memory", "name: other", 1)},
		"yaml name twice":     {goodDescriptor, goodPluginYAML + "name: tree_ring_memory\n"},
		"oversize descriptor": {goodDescriptor + strings.Repeat(" ", MaxDescriptorBytes), goodPluginYAML},
		"not an object":       {`[]`, goodPluginYAML},
		"tree_ring_version []": {strings.Replace(goodDescriptor, `{
    "min": "0.15.6",
    "minor": "0.15"
  }`, `[]`, 1), goodPluginYAML},
	}
	for name, c := range cases {
		p, proj := plugin(t, c.desc, c.yaml)
		if _, err := LoadDescriptor(p, proj); !errors.As(err, &de) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Path rules: absolute, clean, fixed name, outside the project, not a symlink.
	p, proj := plugin(t, goodDescriptor, goodPluginYAML)
	dir := filepath.Dir(p)
	rel, _ := filepath.Rel(mustWd(t), p)
	inside := filepath.Join(proj, "vendor", "tree_ring_memory")
	if err := os.MkdirAll(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{DescriptorName, "plugin.yaml"} {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		os.WriteFile(filepath.Join(inside, f), b, 0o644)
	}
	link := filepath.Join(filepath.Dir(dir), "linked")
	os.MkdirAll(link, 0o755)
	os.Symlink(p, filepath.Join(link, DescriptorName))
	os.WriteFile(filepath.Join(link, "plugin.yaml"), []byte(goodPluginYAML), 0o644)
	paths := map[string]string{
		"relative":       rel,
		"unclean":        dir + "/./" + DescriptorName,
		"other name":     filepath.Join(dir, "plugin.yaml"),
		"inside project": filepath.Join(inside, DescriptorName),
		"symlink":        filepath.Join(link, DescriptorName),
		"missing":        filepath.Join(proj, "nope", DescriptorName),
	}
	for name, path := range paths {
		if _, err := LoadDescriptor(path, proj); !errors.As(err, &de) {
			t.Errorf("%s: %v", name, err)
		} else if strings.Contains(err.Error(), proj) || strings.Contains(err.Error(), dir) {
			t.Errorf("%s: the error names a path: %v", name, err)
		}
	}
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

func TestOutputs(t *testing.T) {
	if got := string(HookOutput(SubagentStart, "a <b> & \"c\"\n")); got != `{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"a <b> & \"c\"\n"}}`+"\n" {
		t.Errorf("hook output %s", got)
	}
	id := Identity{AgentProfile: "codex:explorer:0123456789abcdef", WorkflowID: "s1", SessionID: "agent-1"}
	reason := CheckpointReason("0f0e0d0c-0b0a-4908-8706-050403020100", "project-abc", "/srv/my-proj", id)
	lines := strings.Split(reason, "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "Tree Ring automatic capture checkpoint 0f0e0d0c-0b0a-4908-8706-050403020100. ") {
		t.Fatalf("reason layout:\n%s", reason)
	}
	for slot, l := range lines[1:4] {
		want := `/srv/my-proj/.tree-ring/bin/tree-ring --root /srv/my-proj/.tree-ring capture SUMMARY --event-type TYPE --ring RING --project project-abc --agent-profile codex:explorer:0123456789abcdef --workflow-id s1 --session-id agent-1 --operation-id auto-0f0e0d0c-0b0a-4908-8706-050403020100-` + string(rune('1'+slot)) + ` --source-ref agent-checkpoint:0f0e0d0c-0b0a-4908-8706-050403020100`
		if l != want {
			t.Errorf("line %d:\n got %s\nwant %s", slot+1, l, want)
		}
	}
	if strings.Contains(reason, "--scope") || !strings.Contains(lines[4], "If nothing durable occurred, write nothing") {
		t.Errorf("reason: %s", reason)
	}
	if got := string(StopOutput("r")); got != `{"decision":"block","reason":"r"}`+"\n" || string(StopDone) != "{}\n" {
		t.Errorf("stop outputs %s %s", got, StopDone)
	}
}

// The capture lines hold nothing a shell or an XML escape treats specially
// (no $(...), redirection, quote, pipe, ampersand or angle bracket): only
// the project path is quoted, and only when it needs it.
func TestCheckpointLinesAreInert(t *testing.T) {
	id := Identity{AgentProfile: "claude-code:Explore:0123456789abcdef", WorkflowID: "session-0123", SessionID: "agent-abc"}
	for _, c := range []struct{ root, bin string }{
		{"/home/u/src/app", "/home/u/src/app/.tree-ring/bin/tree-ring --root /home/u/src/app/.tree-ring "},
		{"/home/u/my app", `'/home/u/my app/.tree-ring/bin/tree-ring' --root '/home/u/my app/.tree-ring' `},
		{"/home/u/it's", `'/home/u/it'\''s/.tree-ring/bin/tree-ring' --root '/home/u/it'\''s/.tree-ring' `},
	} {
		reason := CheckpointReason("cp-1", "app", c.root, id)
		lines := strings.Split(reason, "\n")[1:4]
		for _, l := range lines {
			if !strings.HasPrefix(l, c.bin+"capture SUMMARY --event-type TYPE --ring RING ") {
				t.Errorf("%s: line %s", c.root, l)
			}
			rest := strings.TrimPrefix(l, c.bin)
			if strings.ContainsAny(rest, "$`\"'<>&|;()\\*?[]{}~#!") {
				t.Errorf("%s: a shell or XML metacharacter in %s", c.root, rest)
			}
		}
		if prose := strings.Split(reason, "\n")[0] + strings.Split(reason, "\n")[4]; strings.ContainsAny(prose, "<>&'\"") {
			t.Errorf("the instructions hold an XML metacharacter: %s", prose)
		}
	}
}
