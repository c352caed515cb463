// A fake Pi host: loads a Pi extension module the way Pi does (its default
// export receives the extension API), fires before_agent_start once with the
// given prompt and a context shaped like Pi's, and prints the handler's
// result as one JSON line. It installs no error handler of its own: an
// error the extension leaves unhandled crashes this process, as it crashes
// Pi. Usage: node fakepi.mjs EXTENSION CWD PROMPT_FILE
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [extension, cwd, promptFile] = process.argv.slice(2);
const mod = await import(pathToFileURL(extension).href);
const handlers = new Map();
mod.default({ on: (event, fn) => handlers.set(event, fn) });
const handler = handlers.get("before_agent_start");
if (!handler) {
  console.error("the extension registers no before_agent_start handler");
  process.exit(64);
}
const notices = [];
const ctx = {
  cwd,
  hasUI: true,
  ui: { notify: (text, level) => notices.push({ text, level }) },
  sessionManager: { getSessionFile: () => "/home/u/.pi/agent/sessions/s1.jsonl" },
};
const result = await handler({ prompt: readFileSync(promptFile, "utf8") }, ctx);
process.stdout.write(JSON.stringify({ result: result ?? null, notices }) + "\n");
