package adapters

import "github.com/tree-ring/tree-ring/fsm"

// Pi: a project extension that runs preflight on before_agent_start, and the
// shared skill. Pi from 0.79 loads project extensions only after the user
// trusts the project in Pi itself, so the recorded resting state is
// needs-trust (as the Rust implementation records it) and status reads
// the installed Pi's version and its trust settings live (pi_trust.go):
// no gate (0.73) or trusted is configured-awaiting-proof. Tree Ring never
// edits Pi's trust settings.
const piExtension = ".pi/extensions/tree-ring-memory.ts"

func init() {
	register(&Adapter{
		ID: "pi", Name: "Pi", Version: "1", Capability: NativePreflight, Support: Maintained,
		TrustGate:      decisionGate(piTrust, piTrustStep),
		Executable:     "pi",
		ProjectMarkers: []string{".pi", "pi.toml"},
		HomeMarkers:    []string{".pi"},
		RestingState:   fsm.NeedsTrust,
		TrustStep:      piTrustStep,
		BridgePath:     piExtension,
		OwnedFiles:     []string{SharedSkill, piExtension},
		Stdin:          adapterStdin([]string{"pi-before-agent-start"}, "task_hint"),
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
// process itself because Pi has no handler timeout, and it fails open: a
// spawn failure, an EPIPE on the child's stdin (a binary that exits before
// reading), a non-zero exit, a timeout or malformed output each resolve to
// no message, so Pi starts without memory instead of dying on an unhandled
// error (issue 13; tested with a fake Pi host in Node and the real Pi in
// adapters/acceptance).
const piExtensionSource = `// Tree Ring Memory bridge for Pi (adapter version 1). Published create-only by
// tree-ring init; Tree Ring never rewrites it. Review before trusting the project.
// Any failure of the preflight leaves Pi running without Tree Ring memory.
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { join } from "node:path";

const TIMEOUT_MS = 10_000;
const MAX_OUTPUT = 1 << 20;
const FALLBACK_HINT = "project startup constraints";

type Result = { code: number | null; stdout: string; stderr: string; failure?: string };

function treeRing(root: string): string {
  const local = join(root, ".tree-ring", "bin", "tree-ring");
  try {
    accessSync(local, constants.X_OK);
    return local;
  } catch {
    return "tree-ring";
  }
}

function preflight(root: string, request: object): Promise<Result> {
  return new Promise((resolve) => {
    let stdout = "";
    let stderr = "";
    let settled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (r: Result) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      resolve(r);
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(
        treeRing(root),
        ["--root", join(root, ".tree-ring"), "integrations", "preflight", "--harness", "pi", "--input-json-stdin", "--context-format", "pi-before-agent-start"],
        { cwd: root, stdio: ["pipe", "pipe", "pipe"] },
      );
    } catch (e) {
      finish({ code: null, stdout: "", stderr: "", failure: "spawn: " + String(e) });
      return;
    }
    timer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {}
      finish({ code: null, stdout: "", stderr, failure: "timeout" });
    }, TIMEOUT_MS);
    // The child may exit before reading its stdin: the write then fails
    // with EPIPE on this stream, and the exit status decides.
    child.stdin?.on("error", () => {});
    child.stdout?.on("data", (d) => {
      if (stdout.length < MAX_OUTPUT) stdout += d;
    });
    child.stderr?.on("data", (d) => {
      if (stderr.length < MAX_OUTPUT) stderr += d;
    });
    child.on("error", (e) => finish({ code: null, stdout: "", stderr, failure: "spawn: " + String(e) }));
    child.on("close", (code) => finish({ code, stdout, stderr }));
    try {
      child.stdin?.end(JSON.stringify(request));
    } catch {}
  });
}

function context(result: Result): string | undefined {
  if (result.code !== 0) return undefined;
  try {
    const response = JSON.parse(result.stdout);
    return typeof response?.context === "string" && response.context !== "" ? response.context : undefined;
  } catch {
    return undefined;
  }
}

function warn(ctx: any, result: Result) {
  const why = result.failure ?? (result.code !== 0 ? "exit " + String(result.code) : "malformed output");
  try {
    if (ctx?.hasUI) ctx.ui.notify("Tree Ring memory unavailable (" + why + "); starting without it", "warning");
  } catch {}
}

export default function treeRingMemory(pi: any) {
  pi.on("before_agent_start", async (event: any, ctx: any) => {
    try {
      const session = ctx.sessionManager?.getSessionFile?.() ?? "pi-ephemeral";
      const request = { agent_profile: "pi", workflow_id: session, session_id: session, task_hint: event?.prompt };
      let result = await preflight(ctx.cwd, request);
      if (result.code !== 0 && result.stderr.includes("sensitive-task-hint")) {
        result = await preflight(ctx.cwd, { ...request, task_hint: FALLBACK_HINT });
      }
      const text = context(result);
      if (text === undefined) {
        warn(ctx, result);
        return undefined;
      }
      return { message: { customType: "tree-ring-preflight", content: text, display: false } };
    } catch {
      return undefined;
    }
  });
}
`
