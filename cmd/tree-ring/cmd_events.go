package main

import (
	"bufio"
	"context"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/events"
)

type eventsOptions struct {
	Stream string
	Type   string
	After  uint64
}

func (o *eventsOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Stream, "stream", "", "only events of this stream")
	fs.StringVar(&o.Type, "type", "", "only events of this type")
	fs.Uint64Var(&o.After, "after", 0, "only events after this global position")
}

func init() {
	register("events", "", "print ledger envelopes as NDJSON in position order", runEvents)
}

// runEvents streams the stored bytes as they are: they are already the
// canonical one-line JSON of each envelope.
func runEvents(ctx context.Context, g *Globals, o *eventsOptions, args []string) error {
	if len(args) > 0 {
		return usagef("events takes no arguments (did you mean `events import FILE`?)")
	}
	if o.Type != "" {
		if _, ok := events.Lookup(o.Type); !ok {
			return usagef("--type %q is not an event type", o.Type)
		}
	}
	if o.Stream != "" {
		if err := events.ValidStream(o.Stream); err != nil {
			return usagef("--stream: %v", err)
		}
	}
	st, err := g.OpenStore(true)
	if err != nil {
		return err
	}
	defer st.Close()
	w := bufio.NewWriterSize(g.Stdout, 64<<10)
	write := func(raw []byte) error {
		if _, err := w.Write(raw); err != nil {
			return err
		}
		return w.WriteByte('\n')
	}
	if o.Stream != "" {
		err = st.ReadStream(ctx, o.Stream, 0, func(e *events.Envelope) error {
			if e.Position <= o.After || o.Type != "" && e.Type != o.Type {
				return nil
			}
			return write(e.Encode())
		})
	} else {
		err = st.ScanRaw(ctx, o.After, func(_ uint64, raw []byte) error {
			if o.Type != "" {
				if t, _ := events.PeekType(raw); t != o.Type {
					return nil
				}
			}
			return write(raw)
		})
	}
	if err != nil {
		return err
	}
	return w.Flush()
}
