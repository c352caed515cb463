// Package fleetcli is the tree-ring-fleet program: the fleet commands
// that need the network, publish, collect and status --nats (docs/fleet.md). It is the
// only command package that links the NATS client (through
// adapters/fleet), so tree-ring itself starts without it; tree-ring lists
// `fleet publish` and `fleet collect` and executes tree-ring-fleet for
// them (cli.Fleet). The global flags, the error table and the store
// helpers are cmd/internal/cli's, shared with tree-ring.
//
// Syntax: tree-ring-fleet COMMAND [flags], where the flags include
// tree-ring's global flags (tree-ring moves the global flags given before
// `fleet` after the command word).
package fleetcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
)

// Globals are the global flags and the injected clock and streams of one
// invocation.
type Globals struct {
	cli.Flags
	cli.IO
	Now   func() time.Time
	NewID func() ulid.ULID
	Log   zerolog.Logger
}

// Deps are the injected dependencies (tests fix the clock and ids).
type Deps struct {
	Now   func() time.Time
	NewID func() ulid.ULID
}

type options interface{ AddFlags(fs *pflag.FlagSet) }

type command struct {
	cli.CompanionCommand
	// ledger: the command reads this project's ledger (--root,
	// --source-root). Otherwise they are accepted, since tree-ring moves
	// the global flags after the command word, but not listed in its help.
	ledger  bool
	newOpts func() options
	run     func(ctx context.Context, g *Globals, o options, args []string) error
}

// commands are cli.Fleet's, in its order, with their options and runs.
func commands() []command {
	runs := map[string]command{
		"publish": {ledger: true, newOpts: func() options { return new(publishOptions) }, run: func(ctx context.Context, g *Globals, o options, a []string) error {
			return runPublish(ctx, g, o.(*publishOptions), a)
		}},
		"collect": {newOpts: func() options { return new(collectOptions) }, run: func(ctx context.Context, g *Globals, o options, a []string) error {
			return runCollect(ctx, g, o.(*collectOptions), a)
		}},
		"status": {newOpts: func() options { return new(statusOptions) }, run: func(ctx context.Context, g *Globals, o options, a []string) error {
			return runStatus(ctx, g, o.(*statusOptions), a)
		}},
	}
	out := make([]command, 0, len(cli.Fleet.Commands))
	for _, c := range cli.Fleet.Commands {
		r := runs[c.Word]
		r.CompanionCommand = c
		out = append(out, r)
	}
	return out
}

// Main runs one invocation of tree-ring-fleet and returns its exit code.
// Handled errors print one line on stderr and nothing on stdout, as
// tree-ring's do.
func Main(ctx context.Context, argv []string, stdio cli.IO, d Deps) int {
	out := &cli.OutputWriter{W: stdio.Stdout}
	stdio.Stdout = out
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.NewID == nil {
		// One event at most per run (store.key_recorded): ulid's own
		// monotonic source is enough.
		d.NewID = ulid.Make
	}
	g := &Globals{IO: stdio, Now: d.Now, NewID: d.NewID}
	err := run(ctx, g, argv)
	if err == nil && out.Err != nil {
		err = &cli.OutputError{Err: out.Err}
	}
	if err != nil && !errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(g.Stderr, cli.ErrorLine(cli.Fleet.Program, err, g.Root))
	}
	return cli.ExitCode(err)
}

func run(ctx context.Context, g *Globals, argv []string) error {
	if len(argv) == 0 || argv[0] == "help" || argv[0] == "-h" || argv[0] == "--help" {
		printHelp(g.Stdout)
		return nil
	}
	var c *command
	for _, k := range commands() {
		if k.Word == argv[0] {
			c = &k
		}
	}
	if c == nil {
		// The word is not echoed: it may be anything the user typed.
		return cli.Usagef("unknown command: want publish, collect or status (see `%s --help`)", cli.Fleet.Program)
	}
	o := c.newOpts()
	fs := pflag.NewFlagSet(cli.Fleet.Program+" "+c.Word, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	o.AddFlags(fs)
	g.Flags.AddFlags(fs)
	if !c.ledger {
		_ = fs.MarkHidden("root")
		_ = fs.MarkHidden("source-root")
	}
	if err := fs.Parse(argv[1:]); errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintf(g.Stdout, "Usage: tree-ring %s %s [flags]\n       %s %s [flags]\n\n%s\n\nFlags:\n%s",
			cli.Fleet.Group, c.Word, cli.Fleet.Program, c.Word, c.Summary, fs.FlagUsages())
		return nil
	} else if err != nil {
		return cli.FlagError(cli.Fleet.Group+" "+c.Word, err)
	}
	if c.ledger {
		if _, err := g.ResolveRoots(g.Getwd, fs.Changed("root"), fs.Changed("source-root")); err != nil {
			return err
		}
	}
	log, err := g.Logger(g.Stderr)
	if err != nil {
		return err
	}
	g.Log = log
	return c.run(ctx, g, o, fs.Args())
}

// debugLog is fleet's Log on the --log-level logger.
func (g *Globals) debugLog() fleet.Log {
	return func(msg string, kv ...any) { g.Log.Debug().Fields(kv).Msg(msg) }
}

func printHelp(w io.Writer) {
	fmt.Fprintf(w, "%s: the fleet commands of tree-ring that need the network (docs/fleet.md)\n", cli.Fleet.Program)
	fmt.Fprintf(w, "\nUsage: %s COMMAND [flags]   (also run as `tree-ring %s COMMAND [flags]`)\n\nCommands:\n", cli.Fleet.Program, cli.Fleet.Group)
	for _, c := range cli.Fleet.Commands {
		fmt.Fprintf(w, "  %-8s  %s\n", c.Word, c.Summary)
	}
	fmt.Fprintf(w, "\nRun `%s COMMAND --help` for a command's flags. Exit codes: docs/exit-codes.md.\n", cli.Fleet.Program)
}
