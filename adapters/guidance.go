package adapters

import "github.com/tree-ring/tree-ring/fsm"

// Guidance-only harnesses: detected so that users see them, never bridged
// and never active, until someone authors a native adapter (see
// docs/adapters/README.md).
func init() {
	for _, a := range []*Adapter{
		{ID: "hermes", Name: "Hermes", Executable: "hermes", ProjectMarkers: []string{".hermes", "hermes.toml"}, HomeMarkers: []string{".hermes"}},
		{ID: "opencode", Name: "OpenCode", Executable: "opencode", ProjectMarkers: []string{".opencode", "opencode.json", "opencode.toml"}, HomeMarkers: []string{".opencode"}},
		{ID: "goose", Name: "Goose", Executable: "goose", ProjectMarkers: []string{".goose", "goosehints"}, HomeMarkers: []string{".goose"}},
	} {
		a.Version = "0"
		a.Capability = GuidanceOnly
		a.Support = Unsupported
		a.RestingState = fsm.Unsupported
		a.Stdin = StdinContract{Mode: NoStdin}
		register(a)
	}
}
