package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
)

func init() {
	register("version", "", "print the version", runVersion)
}

func runVersion(_ context.Context, g *Globals, _ *noOptions, args []string) error {
	if len(args) > 0 {
		return usagef("version takes no arguments")
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(map[string]string{"version": Version, "go": runtime.Version()})
	}
	fmt.Fprintf(g.Stdout, "tree-ring %s (%s)\n", Version, runtime.Version())
	return nil
}
