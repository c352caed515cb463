package main

// The hook command lines the protocol fixes are POSIX sh that exec
// .tree-ring/bin/tree-ring, which Windows has no execute bit for and its
// harnesses do not run through sh: publishing them would leave hooks that
// never fire. Everything else runs (docs/platforms.md).
const noHooks = "the hook command lines are POSIX shell lines that exec .tree-ring/bin/tree-ring, which Windows harnesses cannot run"

var unsupported = map[string]string{
	"init":                  noHooks,
	"integrations activate": noHooks,
	"integrations link":     noHooks,
	"demo":                  noHooks,
}
