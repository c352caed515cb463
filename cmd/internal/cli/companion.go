package cli

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Companion is a program of this module that carries some of tree-ring's
// commands, so that tree-ring does not link what only they need (the
// fleet's NATS client: docs/fleet.md, "Two programs"). tree-ring lists
// them and runs them by executing the program, git-style.
type Companion struct {
	Program  string // the executable's name, e.g. tree-ring-fleet
	Package  string // its import path, for go install
	Group    string // tree-ring's command group, e.g. fleet
	Commands []CompanionCommand
}

// CompanionCommand is one command a companion carries: tree-ring
// "Group Word" runs "Program Word". With Flag, tree-ring carries the
// command too and runs the companion only for a command line that gives
// --Flag (fleet status --nats: the stream's live heads).
type CompanionCommand struct {
	Word    string
	Summary string
	Flag    string
}

// Fleet is tree-ring-fleet: the fleet commands that need the network.
// fleet verify and fleet status read replicas only and stay in tree-ring;
// fleet status --nats also reads the stream, so it runs here.
var Fleet = Companion{
	Program: "tree-ring-fleet",
	Package: "github.com/tree-ring/tree-ring/cmd/tree-ring-fleet",
	Group:   "fleet",
	Commands: []CompanionCommand{
		{"publish", "publish this store's events the stream does not hold yet to NATS JetStream signed by its key (appends here only the key's record, once)", ""},
		{"collect", "write every store's events from NATS JetStream into its own replica ledger under --into", ""},
		{"status", "fleet status --from DIR with the stream's heads read live: per store the stream's head, the replica's, the lag and the last collect", "nats"},
	},
}

// CompanionMissingError is a companion command run where its program is
// neither beside tree-ring nor on PATH. Nothing was done.
type CompanionMissingError struct {
	Companion Companion
	Command   string // e.g. "fleet publish"
	Beside    string // the directory of the running tree-ring ("" when unknown)
	Version   string // the module version to install ("" for @latest)
}

func (e *CompanionMissingError) Error() string {
	v := e.Version
	if v == "" {
		v = "latest"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s needs the companion program %s, which is ", e.Command, e.Companion.Program)
	if e.Beside != "" {
		fmt.Fprintf(&b, "neither beside tree-ring in %s nor on PATH", e.Beside)
	} else {
		b.WriteString("not on PATH")
	}
	fmt.Fprintf(&b, "; nothing was done; install it with `go install %s@%s` (beside a go-installed tree-ring)", e.Companion.Package, v)
	if e.Beside != "" {
		fmt.Fprintf(&b, " or, in a checkout, build it beside this tree-ring: `go build -o %s ./cmd/%s`", filepath.Join(e.Beside, e.Companion.Program), e.Companion.Program)
	}
	b.WriteString(" (docs/fleet.md)")
	return b.String()
}

// Diagnostic is the code a failed run records (docs/runs.md).
func (e *CompanionMissingError) Diagnostic() string { return "companion_missing" }
