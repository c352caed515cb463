package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
	"github.com/tree-ring/tree-ring/cmd/tree-ring/internal/runrec"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

// IO is where a command reads and writes (cli.IO); tests substitute
// buffers.
type IO = cli.IO

// Globals is what every command runs with, in its parts: the global
// flags, the IO, the clock and ids, the logger, and the seams tests set.
type Globals struct {
	cli.Flags
	// lockTimeoutSet is true when --lock-timeout was given, so that a
	// command with its own default (lockWaiter) never overrides the user.
	lockTimeoutSet bool

	IO
	Clock
	Log zerolog.Logger

	seams Seams

	rec *runrec.Recorder // this invocation's run recorder, made on first use
	// discovered is the project root found from a subdirectory when
	// neither --root nor --source-root was given ("" otherwise).
	discovered string
	// createsStore is true for the commands that may create a project's
	// ledger (storeCreators).
	createsStore bool
}

// Clock is the injected clock and id sources, which tests fix.
type Clock struct {
	Now   func() time.Time
	NewID func() ulid.ULID
	// Entropy is the random source of receipt ids (crypto/rand when nil).
	Entropy io.Reader
	// PID is the pid run records carry (os.Getpid when nil).
	PID func() int
	// Nonce salts each memory body (memory.NewWrite; 16 bytes of
	// crypto/rand in hex when nil).
	Nonce func() string
}

// nonce is the memory body nonce source.
func (c Clock) nonce() func() string {
	if c.Nonce != nil {
		return c.Nonce
	}
	return randomNonce
}

// Seams are the points where tests reach into an invocation; all nil in
// production, except Interrupts (main).
type Seams struct {
	// OnCommit is called after every durable ledger commit of the
	// invocation (bolt.Options.OnCommit).
	OnCommit func()
	// Companion runs a companion program's commands in this process
	// instead of executing the program (runCompanion).
	Companion companionFunc
	// CommitFault fails a preflight's transaction after its output was
	// written, where a failing bbolt commit fails it.
	CommitFault func() error
	// OpenProjectRoot pins the project directory of an integrations
	// command (adapters.OpenProjectRoot when nil): tests inject
	// durability failures.
	OpenProjectRoot func(dir string) (*adapters.ProjectRoot, error)
	// Interrupts derives the context that SIGINT and SIGTERM cancel, and
	// its stop. run installs it once the words name a command that is not
	// instant, so --version, help and usage errors never set up signal
	// handling; nil (tests): ctx as given.
	Interrupts func(context.Context) (context.Context, context.CancelFunc)
	// RunningBuild is the bytes init installs as the project's program
	// (the running executable's when nil): in-process tests stand a small
	// script in for the test binary.
	RunningBuild func() ([]byte, error)
}

// Run and RunSpec are the run recorder's (docs/runs.md).
type (
	Run     = runrec.Run
	RunSpec = runrec.Spec
)

// recorder is the invocation's run recorder on the injected clock, ids and
// pid, with the error table's diagnostic codes.
func (g *Globals) recorder() *runrec.Recorder {
	if g.rec == nil {
		g.rec = &runrec.Recorder{Now: g.Now, NewID: g.NewID, PID: g.PID, Log: g.Log, Diagnose: diagnostic}
	}
	return g.rec
}

// StartRun records run.started in its own commit (runrec.Recorder.Start).
func (g *Globals) StartRun(ctx context.Context, st *bolt.Store, spec RunSpec) (*Run, error) {
	return g.recorder().Start(ctx, st, spec)
}

// BeginRun mints a run that StartIn records with the command's own work
// (runrec.Recorder.Begin).
func (g *Globals) BeginRun(st *bolt.Store, spec RunSpec) (*Run, error) {
	return g.recorder().Begin(st, spec)
}

// StartRunIn records run.started in tx (runrec.Recorder.StartIn).
func (g *Globals) StartRunIn(tx *bolt.Tx, st *bolt.Store, spec RunSpec) (*Run, error) {
	return g.recorder().StartIn(tx, st, spec)
}

// CLIScope is the run scope of a CLI invocation: derived from the canonical
// (absolute, symlink-free) --source-root. The path itself is never stored.
func (g *Globals) CLIScope() (string, error) { return runrec.CLIScope(g.SourceRoot) }

// NewReceiptID mints a receipt id from the injected entropy.
func (g *Globals) NewReceiptID() (string, error) { return preflight.NewReceiptID(g.Entropy) }

// Factory mints envelopes with the globals' clock and id source.
func (g *Globals) Factory(actor string) *events.Factory {
	return &events.Factory{Now: g.Now, NewID: g.NewID, Actor: actor}
}

// OpenStore opens the ledger under --root with every projection registered.
// readOnly never creates anything and fails with *bolt.NotFoundError when
// there is no ledger.
//
// A write open never creates the ledger of a root whose activation.json
// names a store (the ledger was deleted, or another writer, the Rust Tree
// Ring, initialized the project): a new one would carry another store id
// than every bridge; that is *LedgerMissingError with the repair, init's
// adoption.
func (g *Globals) OpenStore(readOnly bool) (*bolt.Store, error) {
	opts := g.storeOptions()
	opts.ReadOnly = readOnly
	return g.openStore(opts)
}

// sliceBudget is how long a long command holds the ledger lock at a time
// before it commits and lets a waiting hook or `runs` in (docs/ledger.md).
const sliceBudget = 30 * time.Millisecond

// OpenLongStore opens the store for writing by a long command (imports, a
// rebuild): it releases the lock between batches (bolt.Store.Yield).
func (g *Globals) OpenLongStore() (*bolt.Store, error) {
	opts := g.storeOptions()
	opts.SliceBudget = sliceBudget
	return g.openStore(opts)
}

// OpenRebuildingStore is OpenLongStore for `projections rebuild`, which
// refolds every projection itself: a projection at another layout is left
// to the rebuild instead of refused (bolt.Options.Rebuilding).
func (g *Globals) OpenRebuildingStore() (*bolt.Store, error) {
	opts := g.storeOptions()
	opts.SliceBudget, opts.Rebuilding = sliceBudget, true
	return g.openStore(opts)
}

// OpenLongReader opens the store read-only for a command whose reads can
// be long (status and certify replay each harness stream): its long reads
// (bolt.Store.ReadStreamSliced) release the lock between slices.
func (g *Globals) OpenLongReader() (*bolt.Store, error) {
	opts := g.storeOptions()
	opts.ReadOnly, opts.SliceBudget = true, sliceBudget
	return g.openStore(opts)
}

func (g *Globals) storeOptions() bolt.Options {
	return bolt.Options{
		LockTimeout: g.LockTimeout,
		Projections: projections.All(),
		OnCommit:    g.seams.OnCommit,
	}
}

// openAdoptingStore opens the store for writing and may create the ledger
// under an activation.json: only init's adoption of that manifest does
// (its store id is kept: adopt.go).
func (g *Globals) openAdoptingStore() (*bolt.Store, error) {
	if err := replica.RefuseWrite(g.Root); err != nil {
		return nil, err
	}
	return bolt.OpenRoot(g.Root, g.storeOptions())
}

// openStore opens with opts, refusing to create the ledger of a root whose
// activation.json names a store (see OpenStore), and, for every command
// but the storeCreators, the ledger of a project's own store: inside a
// project only init creates the store (*cli.NoStoreError).
func (g *Globals) openStore(opts bolt.Options) (*bolt.Store, error) {
	if !opts.ReadOnly {
		if err := replica.RefuseWrite(g.Root); err != nil {
			return nil, err
		}
	}
	if !opts.ReadOnly && !g.createsStore && !cli.ManifestNamesStore(g.Root) {
		if _, ok := g.projectStore(); ok {
			opts.MustExist = true
			st, err := cli.OpenStore(g.Root, opts)
			var nf *bolt.NotFoundError
			if errors.As(err, &nf) {
				return nil, &cli.NoStoreError{}
			}
			return st, err
		}
	}
	st, err := cli.OpenStore(g.Root, opts)
	return st, replica.Named(g.Root, err)
}

// storeCreators are the commands that may create the ledger of a project's
// own store: init, and events import, which restores an export into a
// fresh checkout (docs/ledger.md).
var storeCreators = map[string]bool{"init": true, "events import": true}

// projectStore is the canonical project root when --root is the project's
// own store (the .tree-ring directly under --source-root, as the hooks
// and init use it); ok is false for a store elsewhere.
func (g *Globals) projectStore() (canonical string, ok bool) {
	canonical, err := adapters.CanonicalProjectRoot(g.SourceRoot)
	if err != nil {
		return "", false
	}
	abs, err := filepath.Abs(g.Root)
	if err != nil || filepath.Base(abs) != adapters.StoreDir {
		return "", false
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	return canonical, err == nil && parent == canonical
}

// options is implemented by every command's options struct.
type options interface{ AddFlags(fs *pflag.FlagSet) }

// lockWaiter is an options struct whose command waits for the ledger lock
// longer than the global default: its lockTimeout is --lock-timeout's
// default for that command (and what --help shows).
type lockWaiter interface{ lockTimeout() time.Duration }

// command is one entry of the command table. Each command lives in its own
// file and registers itself from init, so adding one touches one file.
type command struct {
	name    string // words, e.g. "audit verify"
	args    string // positional synopsis, e.g. "FILE|-"
	summary string
	newOpts func() options
	run     func(ctx context.Context, g *Globals, o options, args []string) error
	// companion, when set, is the program of this module that carries
	// the command (cmd_fleet_companion.go); run is then nil, unless
	// companionFlag names the flag that alone sends a command line there
	// (fleet status --nats).
	companion     *cli.Companion
	companionFlag string
	// instant commands only print what the binary holds (version): they
	// run without the interrupt handler, whose set-up (two goroutines and
	// a thread) is a tenth of a short command's start-up, and without
	// project root discovery (g.Root and g.SourceRoot are as typed).
	instant bool
}

// commands is the command table, filled by the commands' init functions;
// sized for them so that filling it never rehashes.
var commands = make(map[string]*command, 40)

// register adds a command and returns its entry. O is the options struct;
// run receives it typed.
func register[O any, P interface {
	*O
	options
}](name, args, summary string, run func(ctx context.Context, g *Globals, o P, args []string) error) *command {
	if _, dup := commands[name]; dup {
		panic("duplicate command " + name)
	}
	c := &command{
		name: name, args: args, summary: summary,
		newOpts: func() options { return P(new(O)) },
		run: func(ctx context.Context, g *Globals, o options, a []string) error {
			return run(ctx, g, o.(P), a)
		},
	}
	commands[name] = c
	return c
}

// noOptions is the options struct of commands without flags of their own.
type noOptions struct{}

func (*noOptions) AddFlags(*pflag.FlagSet) {}

// The shared command-line core (cmd/internal/cli) under this package's
// names: the usage error, the exit codes and the one error table, which
// tree-ring-fleet shares (docs/exit-codes.md).

func usagef(format string, a ...any) error { return cli.Usagef(format, a...) }

// Exit codes; docs/exit-codes.md explains each.
const (
	exitError         = cli.ExitError
	exitVerify        = cli.ExitVerify
	exitIndeterminate = cli.ExitIndeterminate
	exitReview        = cli.ExitReview
	exitCanceled      = cli.ExitCanceled
)

func exitCode(err error) int       { return cli.ExitCode(err) }
func diagnostic(err error) string  { return cli.Diagnostic(err) }
func pathless(err error) error     { return cli.Pathless(err) }
func unwrapPath(err error) error   { return cli.UnwrapPath(err) }
func indeterminate(err error) bool { return cli.Indeterminate(err) }

// hookFailure is the failure of a lifecycle hook for a harness whose hook
// fails with exit (its adapter's HookFailureExit).
type hookFailure struct {
	exit int
	err  error
}

func (e *hookFailure) Error() string { return e.err.Error() }
func (e *hookFailure) Unwrap() error { return e.err }

// Diagnostic is its cause's.
func (e *hookFailure) Diagnostic() string { return diagnostic(e.err) }

// ExitCode is the adapter's failure exit where its cause would exit 2
// (the error table's cli.ExitChooser row).
func (e *hookFailure) ExitCode(wrapped int) int {
	if wrapped != exitError {
		return wrapped
	}
	return e.exit
}

// Main runs one invocation and returns its exit code. Handled errors print
// one line on stderr and nothing on stdout.
func Main(ctx context.Context, argv []string, stdio IO) int {
	return mainWith(ctx, argv, stdio, deps{Clock: Clock{Now: time.Now, NewID: newID}})
}

// deps are what an invocation is given besides its arguments and IO.
type deps struct {
	Clock
	Seams
}

func mainWith(ctx context.Context, argv []string, stdio IO, d deps) int {
	out := &cli.OutputWriter{W: stdio.Stdout}
	stdio.Stdout = out
	g := &Globals{IO: stdio, Clock: d.Clock, seams: d.Seams}
	err := run(ctx, g, argv)
	var ran *companionRan
	if errors.As(err, &ran) {
		return ran.code
	}
	if err == nil && out.Err != nil {
		// The work is done but its report was cut short.
		err = &OutputError{Err: out.Err}
	}
	if err != nil && !errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(g.Stderr, cli.ErrorLine("tree-ring", err, g.Root))
	}
	return exitCode(err)
}

func run(ctx context.Context, g *Globals, argv []string) error {
	lead, err := parseLeading(g, argv)
	if err != nil {
		return err
	}
	rest := lead.Args()
	if lead.version {
		if len(rest) > 0 {
			return usagef("--version takes no command")
		}
		return printVersion(g)
	}
	cmd, words := lookup(rest)
	if cmd == nil {
		return noCommand(g, rest, lead.help)
	}
	if g.seams.Interrupts != nil && !cmd.instant {
		var stop context.CancelFunc
		ctx, stop = g.seams.Interrupts(ctx)
		defer stop()
	}
	if cmd.companion != nil && (cmd.run == nil || routedByFlag(rest[words:], cmd.companionFlag)) {
		return g.runCompanion(ctx, cmd, argv[:len(argv)-len(rest)], rest[words:])
	}
	g.lockTimeoutSet = lead.Changed("lock-timeout")
	if lead.help {
		return printCommandHelp(g, cmd)
	}
	return runCommand(ctx, g, cmd, lead, rest[words:])
}

// leading is the parse of the global flags before the command words.
type leading struct {
	*pflag.FlagSet
	help, version bool
}

// parseLeading parses the leading global flags into g, up to the command
// words.
func parseLeading(g *Globals, argv []string) (leading, error) {
	pre := pflag.NewFlagSet("tree-ring", pflag.ContinueOnError)
	pre.SetOutput(io.Discard)
	pre.SetInterspersed(false)
	pre.SortFlags = false // never printed: VisitAll need not sort
	g.AddFlags(pre)
	lead := leading{FlagSet: pre}
	help := pre.BoolP("help", "h", false, "show help")
	version := pre.Bool("version", false, "print the version")
	if err := pre.Parse(argv); err != nil {
		return lead, cli.FlagError("", err)
	}
	lead.help, lead.version = *help, *version
	return lead, nil
}

// runCommand parses cmd's flags (args follow its words), resolves the
// project roots unless cmd is instant, sets up the log and runs cmd.
func runCommand(ctx context.Context, g *Globals, cmd *command, lead leading, args []string) error {
	o := cmd.newOpts()
	fs := newFlagSet(cmd, g, o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return printCommandHelp(g, cmd)
		}
		return cli.FlagError(cmd.name, err)
	}
	if cmd.args == "" && fs.NArg() > 0 && isGroup(cmd.name) {
		return unknownSubcommand(cmd, fs.Arg(0))
	}
	if err := refusePlatform(cmd.name); err != nil {
		return err
	}
	// An instant command reads no project: the working directory is not
	// looked up (which copies the environment, about 0.05 M instructions
	// with the walk up to the root) and need not exist.
	if !cmd.instant {
		changed := func(name string) bool { return lead.Changed(name) || fs.Changed(name) }
		discovered, err := g.ResolveRoots(g.Getwd, changed("root"), changed("source-root"))
		if err != nil {
			return err
		}
		g.discovered = discovered
	}
	if err := g.setupLog(); err != nil {
		return err
	}
	g.createsStore = storeCreators[cmd.name]
	return cmd.run(ctx, g, o, fs.Args())
}

// noCommand answers words that name no command: help (general, of a
// command, of a group), a group's subcommands on bare use or --help, or
// the usage error that suggests the nearest command.
// Help of words that name nothing is the usage error, exit 2.
func noCommand(g *Globals, rest []string, help bool) error {
	switch {
	case len(rest) == 0 || rest[0] == "help" && len(rest) == 1:
		printHelp(g.Stdout)
		return nil
	case rest[0] == "help":
		if c, _ := lookup(rest[1:]); c != nil {
			return printCommandHelp(g, c)
		}
		if isGroup(rest[1]) && (len(rest) == 2 || isGroupHelp(rest[2])) {
			printGroupHelp(g.Stdout, rest[1])
			return nil
		}
		return unknownCommand(rest[1:])
	case isGroup(rest[0]) && (len(rest) == 1 || help || isGroupHelp(rest[1])):
		printGroupHelp(g.Stdout, rest[0])
		return nil
	}
	return unknownCommand(rest)
}

func isGroupHelp(word string) bool { return word == "--help" || word == "-h" }

// newFlagSet is the flag set of command c: o's flags, then the global
// flags it does not define itself, which may also follow the command. The
// global flags are bound to g with g's current values as their defaults:
// what the leading pass parsed stands unless repeated after the command,
// and --help shows it.
func newFlagSet(c *command, g *Globals, o options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("tree-ring "+c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	o.AddFlags(fs)
	if w, ok := o.(lockWaiter); ok && !g.lockTimeoutSet {
		// The command's own default is the flag's default, so that
		// --help shows the wait the command really uses.
		g.LockTimeout = w.lockTimeout()
	}
	gl := pflag.NewFlagSet("globals", pflag.ContinueOnError)
	saved := *g
	g.AddFlags(gl) // sets g's fields to the flags' defaults
	*g = saved
	gl.VisitAll(func(f *pflag.Flag) {
		f.DefValue = f.Value.String()
		if fs.Lookup(f.Name) == nil {
			fs.AddFlag(f)
		}
	})
	return fs
}

// lookup finds the longest registered command name at the start of words.
func lookup(words []string) (*command, int) {
	for n := min(len(words), 3); n > 0; n-- {
		if c, ok := commands[strings.Join(words[:n], " ")]; ok {
			return c, n
		}
	}
	return nil, 0
}

func (g *Globals) setupLog() error {
	l, err := g.Logger(g.LogWriter())
	g.Log = l
	return err
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "tree-ring: provable project memory for AI coding-agent harnesses")
	fmt.Fprintln(w, "\nUsage: tree-ring [--root DIR] [--json] [--log-level L] COMMAND [flags] [args]")
	fmt.Fprintln(w, "       tree-ring [--json] --version")
	fmt.Fprintln(w, "\nCommands:")
	all := make([]*command, 0, len(commands))
	for _, c := range commands {
		all = append(all, c)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	printCommandList(w, all)
	fmt.Fprintln(w, "\nRun `tree-ring COMMAND --help` for a command's flags, `tree-ring GROUP` for a group's commands.")
	fmt.Fprintln(w, "From a subdirectory, the project root is the git checkout's top level, as for the hooks.")
	fmt.Fprintln(w, "Exit codes: docs/exit-codes.md.")
}

func printCommandHelp(g *Globals, c *command) error {
	if c.companion != nil && c.run == nil {
		fmt.Fprintf(g.Stdout, "Usage: tree-ring %s [flags]\n\n%s\n\nRun by the companion program %s (docs/fleet.md); `tree-ring %s --help` shows its flags.\n",
			c.name, c.summary, c.companion.Program, c.name)
		return nil
	}
	fs := newFlagSet(c, g, c.newOpts())
	fmt.Fprintf(g.Stdout, "Usage: tree-ring %s [flags] %s\n\n%s\n\nFlags:\n%s", c.name, c.args, c.summary, fs.FlagUsages())
	if subs := subcommands(c.name); len(subs) > 0 {
		fmt.Fprintln(g.Stdout, "\nSubcommands:")
		printCommandList(g.Stdout, subs)
	}
	return nil
}
