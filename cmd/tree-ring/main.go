// Command tree-ring makes AI coding-agent harnesses provably start every
// session with the project's durable memory. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], defaultIO())
	stop()
	os.Exit(code)
}
