package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tree-ring/tree-ring/cmd/internal/cli"
)

// fleet publish, fleet collect and fleet status --nats are
// tree-ring-fleet's (cli.Fleet): they need the NATS client, which
// tree-ring does not link, so every hook starts without it (docs/fleet.md,
// "Two programs"). tree-ring lists them and runs them git-style by
// executing the companion program.
func init() {
	for _, c := range cli.Fleet.Commands {
		if c.Flag != "" {
			continue // tree-ring's own command, routed by its flag (fleet status)
		}
		name := cli.Fleet.Group + " " + c.Word
		commands[name] = &command{name: name, summary: c.Summary, companion: &cli.Fleet,
			newOpts: func() options { return new(noOptions) }}
	}
}

// companionFunc runs a companion's command line in this process and
// returns its exit code (tests: deps.Companion).
type companionFunc func(ctx context.Context, argv []string, stdio IO) int

// companionRan is the exit code of a companion run in this process: the
// companion has reported, so mainWith prints nothing more.
type companionRan struct{ code int }

func (e *companionRan) Error() string { return fmt.Sprintf("the companion exited %d", e.code) }

// runCompanion executes c's program in place of this process with the
// command word, then the global flags given before the command words
// (lead), then the rest of the command line as typed: tree-ring --json
// fleet publish --nats U runs tree-ring-fleet publish --json --nats U. The
// companion's stdio, environment and exit code are this process's. It
// returns only on failure: the program is missing (*cli.CompanionMissingError)
// or could not be executed.
func (g *Globals) runCompanion(ctx context.Context, c *command, lead, rest []string) error {
	word := c.name[strings.LastIndexByte(c.name, ' ')+1:]
	argv := slices.Concat([]string{word}, lead, rest)
	if g.seams.Companion != nil {
		return &companionRan{code: g.seams.Companion(ctx, argv, g.IO)}
	}
	path, err := findCompanion(c.companion, c.name)
	if err != nil {
		return err
	}
	return execCompanion(ctx, path, argv, g.IO)
}

// findCompanion is the companion's executable: beside the running
// tree-ring (a go install puts both in one directory), else on PATH.
func findCompanion(c *cli.Companion, command string) (string, error) {
	missing := &cli.CompanionMissingError{Companion: *c, Command: command, Version: installVersion()}
	if exe, err := os.Executable(); err == nil {
		missing.Beside = filepath.Dir(exe)
		p := filepath.Join(missing.Beside, c.Program)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(c.Program); err == nil {
		return p, nil
	}
	return "", missing
}

// installVersion is what `go install ...@V` should name for a companion
// of this build: the module version of a go-installed tree-ring, else the
// VCS revision a checkout build carries, else "" (latest).
func installVersion() string {
	bi := buildInfo()
	if bi == nil {
		return ""
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, _ := vcsStamp(bi)
	return rev
}

// routedByFlag reports whether args (a command's, after its words) give
// the flag --name, alone or as --name=V: the command line then runs in
// the companion.
func routedByFlag(args []string, name string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return a == "--"+name || strings.HasPrefix(a, "--"+name+"=")
	})
}
