package fleetstatus

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/cmd/internal/replica"
)

// Flags are the flags of `fleet status` that both programs take: tree-ring
// shows the replicas as the last collect left them, tree-ring-fleet adds
// the stream's heads read live.
type Flags struct {
	From   string
	At     string
	Expect string
	Stale  time.Duration
}

// AddFlags registers the flags on fs.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.From, "from", "", "directory of replicas written by fleet collect (required)")
	fs.StringVar(&f.At, "at", "", "the instant, RFC3339 (default now)")
	fs.StringVar(&f.Expect, "expect", "", "fleet file (STORE_ID PUBLIC_KEY LABEL per line): label the stores, show missing and unexpected ones")
	fs.DurationVar(&f.Stale, "stale", 0, "with --expect: a store whose last event is older than this before --at is stale")
}

// Options checks the flags (a usage error names the flag) and reads the
// fleet file: what Rows shows, at --at or else now.
func (f *Flags) Options(now time.Time, lockTimeout time.Duration) (Options, error) {
	if f.From == "" {
		return Options{}, cli.Usagef("--from DIR is required")
	}
	at := now.UTC()
	if f.At != "" {
		t, err := time.Parse(time.RFC3339Nano, f.At)
		if err != nil {
			return Options{}, cli.Usagef("--at %q: want an RFC3339 instant such as 2026-09-01T12:00:00Z", f.At)
		}
		at = t.UTC()
	}
	var exp map[string]fleetsign.Expected
	switch {
	case f.Expect != "":
		var err error
		if exp, err = replica.ReadExpect(f.Expect); err != nil {
			return Options{}, err
		}
	case f.Stale != 0:
		return Options{}, cli.Usagef("--stale needs --expect")
	}
	return Options{Dir: f.From, At: at, Expect: exp, Stale: f.Stale, LockTimeout: lockTimeout}, nil
}
