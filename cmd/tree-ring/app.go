package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/rs/zerolog"
	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters/preflight"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/tree-ring/internal/runrec"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/strictjson"
	"github.com/tree-ring/tree-ring/projections"
)

// IO is where a command reads and writes; tests substitute buffers.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Getwd is the working directory project-root discovery starts from
	// (os.Getwd when nil).
	Getwd func() (string, error)
	// StdoutTerminal enables progress output for long work.
	StdoutTerminal bool
}

func defaultIO() IO {
	term := false
	if fi, err := os.Stdout.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		term = true
	}
	return IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, StdoutTerminal: term}
}

// Globals are the flags every command accepts, plus injected dependencies
// (clock, id source) that tests fix.
type Globals struct {
	Root        string
	SourceRoot  string
	JSON        bool
	LogLevel    string
	LockTimeout time.Duration
	// lockTimeoutSet is true when --lock-timeout was given, so that a
	// command with its own default (the hook) never overrides the user.
	lockTimeoutSet bool

	IO
	Now   func() time.Time
	NewID func() ulid.ULID
	// Entropy is the random source of receipt ids (crypto/rand when nil).
	Entropy io.Reader
	// PID is the pid run records carry (os.Getpid when nil).
	PID func() int
	Log zerolog.Logger

	rec *runrec.Recorder // this invocation's run recorder, made on first use
	// onCommit, when set (tests), is called after every durable ledger
	// commit of this invocation (bolt.Options.OnCommit).
	onCommit func()
	// discovered is the project root found from a subdirectory when
	// neither --root nor --source-root was given ("" otherwise).
	discovered string
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

// AddFlags registers the global flags.
func (g *Globals) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&g.Root, "root", ".tree-ring", "memory store root (a directory named .tree-ring)")
	fs.StringVar(&g.SourceRoot, "source-root", ".", "project root")
	fs.BoolVar(&g.JSON, "json", false, "machine-readable JSON output")
	fs.StringVar(&g.LogLevel, "log-level", "disabled", "log level on stderr: debug, info, warn, error, disabled")
	fs.DurationVar(&g.LockTimeout, "lock-timeout", 3*time.Second, "how long to wait for another process's ledger lock")
}

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

func (g *Globals) storeOptions() bolt.Options {
	return bolt.Options{
		LockTimeout: g.LockTimeout,
		Projections: projections.All(),
		OnCommit:    g.onCommit,
	}
}

// openAdoptingStore opens the store for writing and may create the ledger
// under an activation.json: only init's adoption of that manifest does
// (its store id is kept: adopt.go).
func (g *Globals) openAdoptingStore() (*bolt.Store, error) {
	return bolt.OpenRoot(g.Root, g.storeOptions())
}

// openStore opens with opts, refusing to create the ledger of a root whose
// activation.json names a store (see OpenStore).
func (g *Globals) openStore(opts bolt.Options) (*bolt.Store, error) {
	named := g.manifestNamesStore()
	opts.MustExist = named
	st, err := bolt.OpenRoot(g.Root, opts)
	var nf *bolt.NotFoundError
	if named && errors.As(err, &nf) {
		return nil, g.noLedger(err)
	}
	return st, err
}

// options is implemented by every command's options struct.
type options interface{ AddFlags(fs *pflag.FlagSet) }

// command is one entry of the command table. Each command lives in its own
// file and registers itself from init, so adding one touches one file.
type command struct {
	name    string // words, e.g. "audit verify"
	args    string // positional synopsis, e.g. "FILE|-"
	summary string
	newOpts func() options
	run     func(ctx context.Context, g *Globals, o options, args []string) error
}

var commands = map[string]*command{}

// register adds a command. O is the options struct; run receives it typed.
func register[O any, P interface {
	*O
	options
}](name, args, summary string, run func(ctx context.Context, g *Globals, o P, args []string) error) {
	if _, dup := commands[name]; dup {
		panic("duplicate command " + name)
	}
	commands[name] = &command{
		name: name, args: args, summary: summary,
		newOpts: func() options { return P(new(O)) },
		run: func(ctx context.Context, g *Globals, o options, a []string) error {
			return run(ctx, g, o.(P), a)
		},
	}
}

// noOptions is the options struct of commands without flags of their own.
type noOptions struct{}

func (*noOptions) AddFlags(*pflag.FlagSet) {}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Diagnostic is the run diagnostic of a usage error after the run started.
func (e *usageError) Diagnostic() string { return "usage" }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// Exit codes; docs/exit-codes.md explains each.
const (
	exitOK     = 0
	exitError  = 2
	exitVerify = 3
	// exitIndeterminate: the outcome is unknown, the command may have
	// taken effect.
	exitIndeterminate = 4
	exitCanceled      = 130
)

// errorRow is one row of the error table: the errors it matches, the exit
// code they end a command with (exit, or exitOf for an error that carries
// its own, given the table's mapping of the error it wraps), the
// diagnostic code a run records for them (docs/runs.md), and, for
// the ledger's errors that name an absolute path, the path-free message a
// hook or preflight prints instead (public).
type errorRow struct {
	match  func(error) bool
	exit   int
	exitOf func(err error, exitCode func(error) int) int
	code   string
	public func(error) string
}

// errorTable is the one place errors become exit codes, diagnostic codes
// and public messages: the first matching row wins; an error no row
// matches exits 2 with diagnostic "error". Typed errors that carry their
// own code (a Diagnostic() string method: usage errors, *events.ScopeError)
// match the Diagnostic row; the rows after it name the typed errors of
// packages that do not know about runs.
var errorTable = []errorRow{
	{match: is(pflag.ErrHelp), exit: exitOK, code: "usage"},
	// A lifecycle hook's handled error exits with its adapter's failure
	// exit (adapters.StdinContract.FailureExit) instead of 2, which Claude
	// Code, Codex and Gemini CLI read from a stop hook as "continue with
	// stderr as the reason"; 4 (indeterminate) and 130 stay, being
	// non-blocking for every host. Its diagnostic and message are its
	// cause's.
	{match: as[*hookFailure], exitOf: func(err error, exitCode func(error) int) int {
		hf := target[*hookFailure](err)
		if code := exitCode(hf.err); code != exitError {
			return code
		}
		return hf.exit
	}},
	{match: as[*bolt.VerifyError], exit: exitVerify, code: "verify_failed"},
	// A cancelled run is recorded aborted, without a diagnostic.
	{match: is(context.Canceled), exit: exitCanceled, code: "error"},
	// An unknown outcome (the work may have taken effect) before any
	// other row: a retry is safe, "nothing changed" would be false.
	{match: indeterminate, exit: exitIndeterminate, code: "indeterminate"},
	{match: as[diagnoser], exit: exitError},
	{match: as[*bolt.LockedError], exit: exitError, code: "ledger_locked", public: func(err error) string {
		return fmt.Sprintf("the ledger is locked by another process (waited %s)", target[*bolt.LockedError](err).Timeout)
	}},
	{match: as[*bolt.CorruptError], exit: exitError, code: "ledger_corrupt", public: func(err error) string {
		return fmt.Sprintf("the ledger is corrupt (run `tree-ring audit verify`): %v", unwrapPath(target[*bolt.CorruptError](err).Err))
	}},
	{match: as[*bolt.WrongExpectedVersionError], exit: exitError, code: "concurrent_write"},
	{match: as[*bolt.IDConflictError], exit: exitError, code: "id_conflict"},
	{match: as[*bolt.NotFoundError], exit: exitError, code: "no_ledger", public: func(error) string {
		return "no Tree Ring ledger under --root; run `tree-ring init` first"
	}},
	{match: as[*bolt.InvalidRootError], exit: exitError, code: "invalid_root", public: func(err error) string {
		return "the ledger: " + target[*bolt.InvalidRootError](err).Reason
	}},
	{match: as[*strictjson.UnknownKeyError], exit: exitError, code: "input_unknown_key"},
	{match: as[*strictjson.DuplicateKeyError], exit: exitError, code: "input_duplicate_key"},
	{match: as[*events.UnknownTypeError], exit: exitError, code: "input_unknown_event_type"},
	{match: as[*events.HashMismatchError], exit: exitError, code: "input_hash_mismatch"},
	{match: is(context.DeadlineExceeded), exit: exitError, code: "timeout"},
	{match: is(fs.ErrNotExist), exit: exitError, code: "not_found"},
	{match: is(fs.ErrPermission), exit: exitError, code: "permission_denied"},
	{match: as[*bolt.CommitError], exit: exitError, code: "commit_failed"},
	{match: is(syscall.ENOSPC), exit: exitError, code: "disk_full"},
}

// diagnoser is a typed error that carries its own diagnostic code.
type diagnoser interface {
	error
	Diagnostic() string
}

func is(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }

func as[T error](err error) bool {
	var t T
	return errors.As(err, &t)
}

// target is the error of type T in err's chain (the row matched it).
func target[T error](err error) T {
	var t T
	errors.As(err, &t)
	return t
}

// rowOf is err's row of the error table (nil: none).
func rowOf(err error) *errorRow {
	for i := range errorTable {
		if errorTable[i].match(err) {
			return &errorTable[i]
		}
	}
	return nil
}

// exitCode is the exit code of a command's error.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if r := rowOf(err); r != nil {
		if r.exitOf != nil {
			return r.exitOf(err, exitCode)
		}
		return r.exit
	}
	return exitError
}

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

// diagnostic is the bounded code a failed run records: never the error's
// text, which may carry input.
func diagnostic(err error) string {
	r := rowOf(err)
	switch {
	case r == nil:
		return "error"
	case r.code == "":
		return target[diagnoser](err).Diagnostic()
	}
	return r.code
}

// pathless replaces the ledger's errors, which name absolute paths, by
// their public message, for a hook (whose stderr the host may log). The
// result still wraps err, so its exit and diagnostic codes are err's.
func pathless(err error) error {
	for _, r := range errorTable {
		if r.public != nil && r.match(err) {
			return &publicError{msg: r.public(err), err: err}
		}
	}
	return err
}

// publicError is an error shown by its path-free message.
type publicError struct {
	msg string
	err error
}

func (e *publicError) Error() string { return e.msg }
func (e *publicError) Unwrap() error { return e.err }

// unwrapPath drops the path of an *fs.PathError, keeping its cause, for
// messages that must not name an absolute path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Main runs one invocation and returns its exit code. Handled errors print
// one line on stderr and nothing on stdout.
func Main(ctx context.Context, argv []string, stdio IO) int {
	return mainWith(ctx, argv, stdio, deps{Now: time.Now, NewID: ulid.Make})
}

// deps are the injected clock, id and entropy sources and pid.
type deps struct {
	Now     func() time.Time
	NewID   func() ulid.ULID
	Entropy io.Reader  // nil: crypto/rand
	PID     func() int // nil: os.Getpid
	// OnCommit counts durable ledger commits (tests; nil in production).
	OnCommit func()
}

func mainWith(ctx context.Context, argv []string, stdio IO, d deps) int {
	out := &outputWriter{w: stdio.Stdout}
	stdio.Stdout = out
	g := &Globals{IO: stdio, Now: d.Now, NewID: d.NewID, Entropy: d.Entropy, PID: d.PID, onCommit: d.OnCommit}
	err := run(ctx, g, argv)
	if err == nil && out.err != nil {
		// The work is done but its report was cut short.
		err = &OutputError{Err: out.err}
	}
	if err != nil && !errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintf(g.Stderr, "tree-ring: %s\n", oneLine(projectRelative(err.Error(), g.Root)))
	}
	return exitCode(err)
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

func run(ctx context.Context, g *Globals, argv []string) error {
	// Leading global flags, up to the command words.
	pre := pflag.NewFlagSet("tree-ring", pflag.ContinueOnError)
	pre.SetOutput(io.Discard)
	pre.SetInterspersed(false)
	pre.ParseErrorsAllowlist.UnknownFlags = true
	g.AddFlags(pre)
	help := pre.BoolP("help", "h", false, "show help")
	version := pre.Bool("version", false, "print the version")
	if err := pre.Parse(argv); err != nil {
		return flagError("", err)
	}
	rest := pre.Args()
	if *version {
		if len(rest) > 0 {
			return usagef("--version takes no command")
		}
		return printVersion(g)
	}
	cmd, words := lookup(rest)
	if cmd == nil {
		return noCommand(g, rest, *help)
	}
	o := cmd.newOpts()
	fs := newFlagSet(cmd, g, o)
	if *help {
		return printCommandHelp(g, cmd)
	}
	if err := fs.Parse(rest[words:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return printCommandHelp(g, cmd)
		}
		return flagError(cmd.name, err)
	}
	if cmd.args == "" && fs.NArg() > 0 && isGroup(cmd.name) {
		return unknownSubcommand(cmd, fs.Arg(0))
	}
	g.lockTimeoutSet = pre.Changed("lock-timeout") || fs.Changed("lock-timeout")
	discovered, err := g.resolveRoots(pre.Changed("root") || fs.Changed("root"), pre.Changed("source-root") || fs.Changed("source-root"))
	if err != nil {
		return err
	}
	g.discovered = discovered
	if err := g.setupLog(); err != nil {
		return err
	}
	return cmd.run(ctx, g, o, fs.Args())
}

// noCommand answers words that name no command: help (general, of a
// command, of a group), a group's subcommands on bare use or --help, or
// the usage error that suggests the nearest command.
func noCommand(g *Globals, rest []string, help bool) error {
	switch {
	case len(rest) == 0 || rest[0] == "help":
		if len(rest) > 1 {
			if c, _ := lookup(rest[1:]); c != nil {
				return printCommandHelp(g, c)
			}
			if isGroup(rest[1]) {
				printGroupHelp(g.Stdout, rest[1])
				return nil
			}
		}
		printHelp(g.Stdout)
		return nil
	case isGroup(rest[0]) && (len(rest) == 1 || help || rest[1] == "--help" || rest[1] == "-h"):
		printGroupHelp(g.Stdout, rest[0])
		return nil
	case help:
		printHelp(g.Stdout)
		return nil
	}
	return unknownCommand(rest)
}

func newFlagSet(c *command, g *Globals, o options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("tree-ring "+c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	o.AddFlags(fs)
	// Globals may also follow the command; their values from the leading
	// pass are the defaults here.
	gl := pflag.NewFlagSet("globals", pflag.ContinueOnError)
	saved := *g
	g.AddFlags(gl)
	*g = saved
	gl.VisitAll(func(f *pflag.Flag) {
		if fs.Lookup(f.Name) == nil {
			f.DefValue = f.Value.String()
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
	lvl := zerolog.Disabled
	if g.LogLevel != "disabled" && g.LogLevel != "" {
		l, err := zerolog.ParseLevel(g.LogLevel)
		if err != nil || l == zerolog.NoLevel {
			return usagef("--log-level %q: want debug, info, warn, error or disabled", g.LogLevel)
		}
		lvl = l
	}
	g.Log = zerolog.New(g.Stderr).Level(lvl).With().Timestamp().Logger()
	return nil
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
	fs := newFlagSet(c, g, c.newOpts())
	fmt.Fprintf(g.Stdout, "Usage: tree-ring %s [flags] %s\n\n%s\n\nFlags:\n%s", c.name, c.args, c.summary, fs.FlagUsages())
	if subs := subcommands(c.name); len(subs) > 0 {
		fmt.Fprintln(g.Stdout, "\nSubcommands:")
		printCommandList(g.Stdout, subs)
	}
	return nil
}
