// Command tree-ring makes AI coding-agent harnesses provably start every
// session with the project's durable memory. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tree-ring/tree-ring/cmd/internal/cli"
)

func main() {
	os.Exit(mainWith(context.Background(), os.Args[1:], cli.DefaultIO(), deps{Clock: Clock{Now: time.Now, NewID: newID}, Seams: Seams{Interrupts: interrupts}}))
}

// interrupts is ctx canceled by SIGINT or SIGTERM (deps.Interrupts).
func interrupts(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
