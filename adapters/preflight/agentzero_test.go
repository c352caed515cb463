package preflight

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const goodDescriptor = `{
  "schema_version": 1,
  "kind": "tree-ring-agent-zero-plugin-capability",
  "plugin_id": "tree_ring_memory",
  "plugin_version": "3.1.0",
  "activation_protocol_version": 1,
  "tree_ring_version": {
    "min": "0.14.0",
    "minor": "0.14"
  },
  "enabled": true
}
`

const goodPluginYAML = "name: tree_ring_memory\ntitle: Tree Ring Memory\nversion: \"3.1.0\" # release\nsettings:\n  name: nested names do not count\n"

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

func TestLoadDescriptor(t *testing.T) {
	path, project := plugin(t, goodDescriptor, goodPluginYAML)
	d, err := LoadDescriptor(path, project)
	if err != nil || d.PluginVersion != "3.1.0" {
		t.Fatalf("valid descriptor: %+v %v", d, err)
	}
	for _, c := range CompatiblePlugins {
		desc := strings.NewReplacer(`"3.1.0"`, `"`+c.PluginVersion+`"`, `"0.14.0"`, `"`+c.Min+`"`, `"0.14"`, `"`+c.Minor+`"`).Replace(goodDescriptor)
		p, proj := plugin(t, desc, strings.Replace(goodPluginYAML, "3.1.0", c.PluginVersion, 1))
		if _, err := LoadDescriptor(p, proj); err != nil {
			t.Errorf("%+v: %v", c, err)
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
		"incompatible pair":   {strings.Replace(goodDescriptor, `"min": "0.14.0"`, `"min": "0.15.3"`, 1), goodPluginYAML},
		"unknown release":     {strings.Replace(goodDescriptor, `"3.1.0"`, `"9.9.9"`, 1), strings.Replace(goodPluginYAML, "3.1.0", "9.9.9", 1)},
		"no plugin.yaml":      {goodDescriptor, ""},
		"yaml other version":  {goodDescriptor, strings.Replace(goodPluginYAML, "3.1.0", "3.2.0", 1)},
		"yaml other name":     {goodDescriptor, strings.Replace(goodPluginYAML, "name: tree_ring_memory", "name: other", 1)},
		"yaml name twice":     {goodDescriptor, goodPluginYAML + "name: tree_ring_memory\n"},
		"oversize descriptor": {goodDescriptor + strings.Repeat(" ", MaxDescriptorBytes), goodPluginYAML},
		"not an object":       {`[]`, goodPluginYAML},
		"tree_ring_version []": {strings.Replace(goodDescriptor, `{
    "min": "0.14.0",
    "minor": "0.14"
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
	id := Identity{"codex:explorer:0123456789abcdef", "s1", "agent-1"}
	reason := CheckpointReason("0f0e0d0c-0b0a-4908-8706-050403020100", "project-abc", id)
	lines := strings.Split(reason, "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "Tree Ring automatic capture checkpoint 0f0e0d0c-0b0a-4908-8706-050403020100. ") {
		t.Fatalf("reason layout:\n%s", reason)
	}
	for slot, l := range lines[1:4] {
		want := `project_root="$(git rev-parse --show-toplevel 2>/dev/null || pwd)"; tree_ring="$project_root/.tree-ring/bin/tree-ring"; if [ ! -x "$tree_ring" ]; then tree_ring=tree-ring; fi; "$tree_ring" --root "$project_root/.tree-ring" capture "<concise summary>" --event-type <preference|decision|lesson|warning|correction|seed> --ring <cambium|scar|seed> --project "project-abc" --agent-profile "codex:explorer:0123456789abcdef" --workflow-id "s1" --session-id "agent-1" --operation-id auto-0f0e0d0c-0b0a-4908-8706-050403020100-` + string(rune('1'+slot)) + ` --source-ref agent-checkpoint:0f0e0d0c-0b0a-4908-8706-050403020100`
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
