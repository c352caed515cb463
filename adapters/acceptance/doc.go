// Package acceptance holds the acceptance suite: tests that build the
// tree-ring binary and drive it exactly as a harness or its separately
// published plugin does (argv, environment, working directory, stdin), then
// check what that client reads. It has no non-test code.
package acceptance
