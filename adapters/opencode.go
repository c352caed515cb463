package adapters

import "github.com/tree-ring/tree-ring/fsm"

// OpenCode: a project plugin that runs the project-local preflight before
// the first model request of each (session, agent) and adds its context to
// that session's requests. OpenCode has no stdin/exit-code hook contract:
// plugins are modules loaded in-process (with no trust step) whose hooks
// fail the whole turn when they throw, so the bridge calls the binary the
// way the Pi extension does and swallows every child error. The contract
// was established against OpenCode 1.18.33 (docs/adapters/opencode.md).
const opencodePlugin = ".opencode/plugins/tree-ring-memory.ts"

func init() {
	register(&Adapter{
		ID: "opencode", Name: "OpenCode", Version: "1", Capability: NativePreflight, Support: Maintained,
		Executable:     "opencode",
		ProjectMarkers: []string{".opencode", "opencode.json", "opencode.jsonc", "opencode.toml"},
		HomeMarkers:    []string{".opencode", ".config/opencode"},
		RestingState:   fsm.ConfiguredAwaitingProof,
		BridgePath:     opencodePlugin,
		OwnedFiles:     []string{opencodePlugin},
		Stdin:          adapterStdin([]string{"json"}),
		material: func(Context) Material {
			return Material{
				BridgePath: opencodePlugin,
				Files:      []File{{Path: opencodePlugin, Data: []byte(opencodePluginSource), Mode: 0o644}},
			}
		},
	})
}

// opencodePluginSource is the OpenCode bridge. It sends only the session
// identity (never the prompt) to the project-local preflight, on stdin, and
// adds the returned context as a synthetic text part to the first user
// message of the requests OpenCode builds for that session's agent loop.
// experimental.chat.messages.transform runs for the agent loop only, not
// for OpenCode's title generator (whose system transform shares the
// session id), and the hidden agents are skipped by name, so no side call
// gets the brief. The preflight runs once per (session, agent) and its
// result, or its failure, is kept for the process: every failure (no
// binary, spawn error, EPIPE, non-zero exit, timeout, oversized or
// malformed output) resolves to no context, because a throwing hook fails
// the user's turn.
const opencodePluginSource = `// Tree Ring Memory bridge for OpenCode (adapter version 1). Published create-only by
// tree-ring init; Tree Ring never rewrites it. It runs the project-local preflight
// once per session and agent and adds the returned brief to that session's model
// requests; on any failure the session runs without it.
import { spawn } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { join } from "node:path";

const TIMEOUT_MS = 10_000;
const MAX_OUTPUT_BYTES = 1 << 20;
// OpenCode's hidden agents make their own model calls; they get no brief.
const HIDDEN_AGENTS = new Set(["title", "summary", "compaction"]);

function treeRing(root: string): string {
  const local = join(root, ".tree-ring", "bin", "tree-ring");
  try {
    accessSync(local, constants.X_OK);
    return local;
  } catch {
    return "tree-ring";
  }
}

function preflight(root: string, request: object): Promise<string | undefined> {
  return new Promise((settle) => {
    let done = false;
    let timer: any;
    const resolve = (context: string | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      settle(context);
    };
    let child: any;
    try {
      child = spawn(
        treeRing(root),
        ["--root", join(root, ".tree-ring"), "integrations", "preflight", "--harness", "opencode", "--input-json-stdin", "--context-format", "json"],
        { cwd: root, stdio: ["pipe", "pipe", "ignore"] },
      );
    } catch {
      resolve(undefined);
      return;
    }
    // Our own bound: a grandchild holding stdout open must not hold the turn.
    timer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {}
      resolve(undefined);
    }, TIMEOUT_MS);
    let stdout = "";
    let size = 0;
    child.stdout.on("data", (d: any) => {
      size += d.length;
      if (size <= MAX_OUTPUT_BYTES) stdout += d;
    });
    child.stdin.on("error", () => {});
    child.on("error", () => resolve(undefined));
    child.on("close", (code: number | null) => {
      if (code !== 0 || size > MAX_OUTPUT_BYTES) return resolve(undefined);
      try {
        const response = JSON.parse(stdout);
        resolve(typeof response.context === "string" && response.context !== "" ? response.context : undefined);
      } catch {
        resolve(undefined);
      }
    });
    try {
      child.stdin.end(JSON.stringify(request));
    } catch {
      resolve(undefined);
    }
  });
}

export const TreeRingMemory = async (input: any) => {
  const roots = [input?.directory, input?.worktree].filter((d) => typeof d === "string" && d !== "/");
  const root = roots.find((d) => existsSync(join(d, ".tree-ring")));
  const briefs = new Map<string, Promise<string | undefined>>();
  return {
    "experimental.chat.messages.transform": async (_input: any, output: any) => {
      try {
        if (!root) return;
        const user = output?.messages?.find((m: any) => m?.info?.role === "user");
        const info = user?.info;
        if (!info || typeof info.sessionID !== "string" || typeof info.agent !== "string" || HIDDEN_AGENTS.has(info.agent)) return;
        const key = info.sessionID + "\u0000" + info.agent;
        let brief = briefs.get(key);
        if (!brief) {
          brief = preflight(root, { agent_profile: "opencode:" + info.agent, workflow_id: info.sessionID, session_id: info.sessionID });
          briefs.set(key, brief);
        }
        const context = await brief;
        if (!context || !Array.isArray(user.parts)) return;
        user.parts.unshift({ id: info.id + "-tree-ring", sessionID: info.sessionID, messageID: info.id, type: "text", text: context, synthetic: true });
      } catch {
        // Fail open: a throwing hook would fail the user's turn.
      }
    },
  };
};
`
