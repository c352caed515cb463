// Command tree-ring-fleet carries the fleet commands of tree-ring that
// need the network, publish and collect, so that tree-ring itself never
// links the NATS client (docs/fleet.md, "Two programs"). tree-ring runs
// it for `tree-ring fleet publish|collect`, found beside tree-ring or on
// PATH; it also runs on its own: tree-ring-fleet publish|collect [flags].
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/fleetcli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := fleetcli.Main(ctx, os.Args[1:], cli.DefaultIO(), fleetcli.Deps{})
	stop()
	os.Exit(code)
}
