package preflight

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/events/strictjson"
)

// The Agent Zero plugin descriptor: an internal transport between the
// separately installed tree_ring_memory plugin and this CLI, never a user
// setting, project file, stdin field or receipt field.
const (
	// DescriptorEnv carries the descriptor's absolute path.
	DescriptorEnv = "TREE_RING_AGENT_ZERO_PLUGIN_MANIFEST"
	// DescriptorName is the descriptor's fixed file name at the plugin root.
	DescriptorName = "activation-capability.json"
	// MaxDescriptorBytes bounds the descriptor and its sibling plugin.yaml.
	MaxDescriptorBytes = 16 << 10
	descriptorKind     = "tree-ring-agent-zero-plugin-capability"
	pluginID           = "tree_ring_memory"
)

// FirstCompatiblePlugin is the first tree_ring_memory release with an
// activation descriptor (the protocol's example descriptor); no earlier
// release can be compatible.
const FirstCompatiblePlugin = "3.1.0"

// Descriptor is a validated plugin capability descriptor.
type Descriptor struct {
	PluginVersion string
	Min, Minor    string
}

// DescriptorError says why a descriptor was refused; the harness then
// stays needs-plugin. It never carries the path or file content.
type DescriptorError struct{ Reason string }

func (e *DescriptorError) Error() string { return "Agent Zero plugin descriptor: " + e.Reason }

func descErr(format string, a ...any) error {
	return &DescriptorError{Reason: fmt.Sprintf(format, a...)}
}

// ErrNoDescriptor is returned when the transport variable is unset.
var ErrNoDescriptor = &DescriptorError{Reason: DescriptorEnv + " is not set (only the tree_ring_memory plugin sets it)"}

// LoadDescriptor validates the descriptor at path for the project at
// canonicalProject: an absolute, clean path named activation-capability.json;
// a regular file that is not a symlink, at most 16 KiB, outside the project
// (after resolving its directory); the exact schema {schema_version: 1,
// kind, plugin_id: tree_ring_memory, plugin_version,
// activation_protocol_version: 1, tree_ring_version: {min, minor},
// enabled: true} with no other key; a compatible series; and a sibling
// plugin.yaml (regular, not a symlink, at most 16 KiB) whose top-level
// name: and version: each appear exactly once and equal tree_ring_memory
// and plugin_version. Compatibility is by series (CheckSeries) against the
// release this core implements, adapters.ContractRelease.
func LoadDescriptor(path, canonicalProject string) (Descriptor, error) {
	if path == "" {
		return Descriptor{}, ErrNoDescriptor
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return Descriptor{}, descErr("the path must be absolute and clean")
	}
	if filepath.Base(path) != DescriptorName {
		return Descriptor{}, descErr("the file must be named %s", DescriptorName)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return Descriptor{}, descErr("its directory cannot be resolved")
	}
	if rel, err := filepath.Rel(canonicalProject, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return Descriptor{}, descErr("it must live outside the project")
	}
	data, err := readRegular(dir, DescriptorName)
	if err != nil {
		return Descriptor{}, err
	}
	d, err := decodeDescriptor(data)
	if err != nil {
		return Descriptor{}, err
	}
	yaml, err := readRegular(dir, "plugin.yaml")
	if err != nil {
		return Descriptor{}, err
	}
	if err := checkPluginYAML(yaml, d); err != nil {
		return Descriptor{}, err
	}
	return d, nil
}

// rawDescriptor detects the descriptor's absent members.
type rawDescriptor struct {
	SchemaVersion             *int    `json:"schema_version"`
	Kind                      *string `json:"kind"`
	PluginID                  *string `json:"plugin_id"`
	PluginVersion             *string `json:"plugin_version"`
	ActivationProtocolVersion *int    `json:"activation_protocol_version"`
	TreeRingVersion           *struct {
		Min   *string `json:"min"`
		Minor *string `json:"minor"`
	} `json:"tree_ring_version"`
	Enabled *bool `json:"enabled"`
}

// check applies the descriptor's schema to its members.
func (raw rawDescriptor) check() error {
	switch {
	case raw.SchemaVersion == nil || *raw.SchemaVersion != 1:
		return descErr("schema_version must be 1")
	case raw.Kind == nil || *raw.Kind != descriptorKind:
		return descErr("kind must be %s", descriptorKind)
	case raw.PluginID == nil || *raw.PluginID != pluginID:
		return descErr("plugin_id must be %s", pluginID)
	case raw.PluginVersion == nil:
		return descErr("plugin_version is missing")
	case raw.ActivationProtocolVersion == nil || *raw.ActivationProtocolVersion != 1:
		return descErr("activation_protocol_version must be 1")
	case raw.TreeRingVersion == nil || raw.TreeRingVersion.Min == nil || raw.TreeRingVersion.Minor == nil:
		return descErr("tree_ring_version needs min and minor")
	case raw.Enabled == nil:
		return descErr("enabled is missing")
	case !*raw.Enabled:
		return descErr("the plugin is disabled")
	}
	return nil
}

// decodeDescriptor applies the descriptor's schema and the compatibility
// allow-list to its bytes (LoadDescriptor has checked where they came from).
func decodeDescriptor(data []byte) (Descriptor, error) {
	var raw rawDescriptor
	if err := strictjson.Unmarshal(data, &raw); err != nil {
		var uk *strictjson.UnknownKeyError
		if errors.As(err, &uk) {
			return Descriptor{}, descErr("unknown key%s", memory.EchoKey(uk.Key))
		}
		return Descriptor{}, descErr("not a descriptor object")
	}
	if err := raw.check(); err != nil {
		return Descriptor{}, err
	}
	d := Descriptor{PluginVersion: *raw.PluginVersion, Min: *raw.TreeRingVersion.Min, Minor: *raw.TreeRingVersion.Minor}
	if err := CheckSeries(d, adapters.Contract()); err != nil {
		return Descriptor{}, err
	}
	return d, nil
}

// checkPluginYAML requires the sibling plugin.yaml to declare name
// tree_ring_memory and d's plugin version, each exactly once at the top
// level.
func checkPluginYAML(yaml []byte, d Descriptor) error {
	name, nameN := topLevel(yaml, "name")
	version, versionN := topLevel(yaml, "version")
	if nameN != 1 || versionN != 1 || name != pluginID || version != d.PluginVersion {
		return descErr("the sibling plugin.yaml does not declare name %s and version %s exactly once", pluginID, "plugin_version")
	}
	return nil
}

// CheckSeries decides whether a descriptor is compatible with the core
// release core. The descriptor declares the Tree Ring series its plugin
// release works with (tree_ring_version.minor, from tree_ring_version.min
// on); the protocol makes that a release boundary. It is compatible when
// plugin_version is a release at or after FirstCompatiblePlugin, min lies
// in the series minor, the series is core's MAJOR.MINOR and core is at
// least min. Any later plugin release of a series is accepted: there is no
// list of known releases to extend. A refusal names the plugin release,
// the series it needs and core's release; it never echoes an unparsed
// value.
func CheckSeries(d Descriptor, core adapters.Release) error {
	plugin, err := adapters.ParseRelease(d.PluginVersion)
	if err != nil {
		return descErr("plugin_version is not a MAJOR.MINOR.PATCH release")
	}
	if first, _ := adapters.ParseRelease(FirstCompatiblePlugin); plugin.Compare(first) < 0 {
		return descErr("plugin %s predates %s, the first release with an activation descriptor", plugin, FirstCompatiblePlugin)
	}
	major, minor, err := adapters.ParseSeries(d.Minor)
	if err != nil {
		return descErr("tree_ring_version.minor is not a MAJOR.MINOR series")
	}
	from, err := adapters.ParseRelease(d.Min)
	if err != nil {
		return descErr("tree_ring_version.min is not a MAJOR.MINOR.PATCH release")
	}
	if from.Major != major || from.Minor != minor {
		return descErr("plugin %s declares tree_ring_version.min %s outside its series %d.%d", plugin, from, major, minor)
	}
	if core.Major != major || core.Minor != minor || core.Compare(from) < 0 {
		return descErr("plugin %s requires Tree Ring %s through %d.%d.x; this core implements %s", plugin, from, major, minor, core)
	}
	return nil
}

// readRegular reads name in the canonical directory dir: a regular,
// non-symlink file of at most MaxDescriptorBytes, through the pinned-root
// layer (no symlink followed, a fifo never waited on).
func readRegular(dir, name string) ([]byte, error) {
	root, err := adapters.OpenProjectRoot(dir)
	if err != nil {
		return nil, descErr("%s cannot be opened", name)
	}
	defer root.Close()
	e, err := root.ReadFile(name, MaxDescriptorBytes)
	var sl *adapters.SymlinkError
	var nr *adapters.NotRegularError
	var tl *adapters.TooLargeError
	switch {
	case errors.As(err, &sl):
		return nil, descErr("%s is a symlink", name)
	case errors.As(err, &nr):
		return nil, descErr("%s is not a regular file", name)
	case errors.As(err, &tl):
		return nil, descErr("%s is larger than %d bytes", name, MaxDescriptorBytes)
	case err != nil, !e.Exists:
		return nil, descErr("%s cannot be opened", name)
	}
	return e.Data, nil
}

// topLevel returns the value of the last top-level "key:" line of a YAML
// document (unquoted, trailing comment removed) and how many there are.
// Only unindented lines count, so nested keys of the same name do not.
func topLevel(doc []byte, key string) (string, int) {
	var val string
	n := 0
	for _, line := range bytes.Split(doc, []byte("\n")) {
		l := strings.TrimRight(string(line), "\r")
		rest, ok := strings.CutPrefix(l, key+":")
		if !ok {
			continue
		}
		n++
		if i := strings.Index(rest, " #"); i >= 0 {
			rest = rest[:i]
		}
		rest = strings.TrimSpace(rest)
		if len(rest) >= 2 && (rest[0] == '"' && rest[len(rest)-1] == '"' || rest[0] == '\'' && rest[len(rest)-1] == '\'') {
			rest = rest[1 : len(rest)-1]
		}
		val = rest
	}
	return val, n
}
