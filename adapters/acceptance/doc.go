// Package acceptance holds the acceptance suite: tests that build the
// tree-ring binary and drive it exactly as a harness or its separately
// published plugin does (argv, environment, working directory, stdin), then
// check what that client reads. Its one non-test type is Mock, a local model
// server for the real clients (Claude Code, Codex CLI, Pi, Gemini CLI,
// OpenCode), which the TREE_RING_ACCEPTANCE=1 tests run headless against
// (docs/acceptance.md);
// cmd fakeharness replays the installed hook command lines as the clients
// do.
package acceptance
