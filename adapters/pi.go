package adapters

import "github.com/tree-ring/tree-ring/fsm"

// Pi: a project extension that runs preflight on before_agent_start, and the
// shared skill. Pi loads project extensions only after the user trusts the
// project in Pi itself, so the resting state is needs-trust: Tree Ring never
// edits Pi's trust settings.
const piExtension = ".pi/extensions/tree-ring-memory.ts"

func init() {
	register(&Adapter{
		ID: "pi", Name: "Pi", Version: "1", Capability: NativePreflight, Support: Maintained,
		TrustGate:      true,
		Executable:     "pi",
		ProjectMarkers: []string{".pi", "pi.toml"},
		HomeMarkers:    []string{".pi"},
		RestingState:   fsm.NeedsTrust,
		BridgePath:     piExtension,
		OwnedFiles:     []string{SharedSkill, piExtension},
		Stdin: StdinContract{
			Mode:            AdapterStdin,
			ContextFormats:  []string{"pi-before-agent-start"},
			Required:        []string{"agent_profile", "workflow_id", "session_id"},
			Optional:        []string{"task_hint"},
			Forbidden:       adapterForbidden,
			ForbiddenNested: true,
			Output:          `{"context":"...","state":"active"|"active-isolated","receipt":{ActivationReceiptSummary}}`,
		},
		material: func(Context) Material {
			return Material{
				BridgePath: piExtension,
				Files: []File{
					{Path: SharedSkill, Data: []byte(SkillBridge), Mode: 0o644},
					{Path: piExtension, Data: []byte(piExtensionSource), Mode: 0o644},
				},
			}
		},
	})
}

// piExtensionSource is the Pi bridge. It sends only the local session
// identity (and the prompt as an optional task hint, on stdin only) to the
// project-local preflight and returns its context as a hidden message. On a
// sensitive hint it retries with a fixed neutral hint. It bounds the child
// process itself because Pi has no handler timeout.
const piExtensionSource = `// Tree Ring Memory bridge for Pi (adapter version 1). Published create-only by
// tree-ring init; Tree Ring never rewrites it. Review before trusting the project.
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { join } from "node:path";

const TIMEOUT_MS = 10_000;
const FALLBACK_HINT = "project startup constraints";

function treeRing(root: string): string {
  const local = join(root, ".tree-ring", "bin", "tree-ring");
  try {
    accessSync(local, constants.X_OK);
    return local;
  } catch {
    return "tree-ring";
  }
}

function preflight(root: string, request: object): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      treeRing(root),
      ["--root", join(root, ".tree-ring"), "integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start"],
      { cwd: root, stdio: ["pipe", "pipe", "pipe"], timeout: TIMEOUT_MS },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", () => resolve({ code: null, stdout: "", stderr: "" }));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(JSON.stringify(request));
  });
}

export default function treeRingMemory(pi: any) {
  pi.on("before_agent_start", async (event: any, ctx: any) => {
    const session = ctx.sessionManager?.getSessionFile?.() ?? "pi-ephemeral";
    const request = { agent_profile: "pi", workflow_id: session, session_id: session, task_hint: event.prompt };
    let result = await preflight(ctx.cwd, request);
    if (result.code !== 0 && result.stderr.includes("sensitive-task-hint")) {
      result = await preflight(ctx.cwd, { ...request, task_hint: FALLBACK_HINT });
    }
    if (result.code !== 0) return undefined;
    const response = JSON.parse(result.stdout);
    return { message: { customType: "tree-ring-preflight", content: response.context, display: false } };
  });
}
`
