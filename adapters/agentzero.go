package adapters

import "github.com/tree-ring/tree-ring/fsm"

// Agent Zero: a passive binding only. The separately installed
// tree_ring_memory plugin reads it; init never writes Agent Zero core
// configuration, plugin code or a capability descriptor, and a .a0 marker
// is deliberately not a marker.
const agentZeroBinding = ".tree-ring/activation/agent-zero.json"

func init() {
	register(&Adapter{
		ID: "agent-zero", Name: "Agent Zero", Version: "1", Capability: NativePreflight, Support: PassiveOnly,
		PluginDescriptor: true, PassiveBinding: true,
		Executable:   "agent-zero",
		RestingState: fsm.NeedsPlugin,
		BridgePath:   agentZeroBinding,
		OwnedFiles:   []string{agentZeroBinding},
		Stdin:        adapterStdin([]string{"json"}),
		material: func(c Context) Material {
			return Material{
				BridgePath: agentZeroBinding,
				Files:      []File{{Path: agentZeroBinding, Data: AgentZeroBinding(c), Mode: 0o644}},
			}
		},
	})
}

// AgentZeroBinding is the passive binding document: the protocol version,
// the store and project it binds, the relative memory root and the exact
// JSON stdin/stdout command contract the plugin invokes.
func AgentZeroBinding(c Context) []byte {
	type commandProtocol struct {
		Command   string   `json:"command"`
		Arguments []string `json:"arguments"`
		Stdin     string   `json:"stdin"`
		Stdout    string   `json:"stdout"`
	}
	doc := struct {
		ProtocolVersion        int             `json:"protocol_version"`
		StoreID                string          `json:"store_id"`
		ProjectRootFingerprint string          `json:"project_root_fingerprint"`
		MemoryRoot             string          `json:"memory_root"`
		CommandProtocol        commandProtocol `json:"command_protocol"`
	}{
		ProtocolVersion: ProtocolVersion, StoreID: c.StoreID, ProjectRootFingerprint: c.ProjectRootFingerprint,
		MemoryRoot: StoreDir,
		CommandProtocol: commandProtocol{
			Command:   "tree-ring",
			Arguments: []string{"--root", ".tree-ring", "integrations", "preflight", "--harness", "agent-zero", "--input-json-stdin", "--context-format", "json"},
			Stdin:     "json", Stdout: "json",
		},
	}
	return prettyJSON(doc)
}
