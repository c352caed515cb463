package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/fsm"
)

type auditReplayOptions struct {
	Harness  string
	At       string
	FromFile string
}

func (o *auditReplayOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Harness, "harness", "", "only this harness (one of: "+strings.Join(adapters.IDs(), ", ")+")")
	fs.StringVar(&o.At, "at", "", "the instant to replay at, RFC3339 (default now)")
	fs.StringVar(&o.FromFile, "from-file", "", "replay this NDJSON event file (- for stdin) instead of the ledger; no ledger is opened")
}

func init() {
	register("audit replay", "", "replay how each harness reached its state, at an instant", runAuditReplay)
}

// maxReplayFileBytes bounds a --from-file input.
const maxReplayFileBytes = 1 << 30

func runAuditReplay(ctx context.Context, g *Globals, o *auditReplayOptions, args []string) error {
	if len(args) > 0 {
		return usagef("audit replay takes no arguments")
	}
	at, err := replayInstant(g, o.At)
	if err != nil {
		return err
	}
	if err := checkHarnessFlag(o.Harness); err != nil {
		return err
	}
	hs, err := replayHistories(ctx, g, o.Harness, o.FromFile, at)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeReplayJSON(g.Stdout, at, o.FromFile != "", hs)
	}
	return writeReplayText(g.Stdout, at, hs)
}

// replayInstant parses --at (RFC3339, any offset, shown in UTC) or takes now.
func replayInstant(g *Globals, s string) (time.Time, error) {
	if s == "" {
		return g.Now().UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usagef("--at %q: want an RFC3339 instant such as 2026-09-01T12:00:00Z", s)
	}
	return t.UTC(), nil
}

func checkHarnessFlag(h string) error {
	if h == "" {
		return nil
	}
	if strings.Contains(h, "/") || events.ValidStream(events.HarnessStream(h)) != nil {
		return usagef("--harness %q is not a harness id", h)
	}
	return nil
}

// replayHistories replays the ledger (read-only) or an event file at the
// instant. With a harness, only its stream is replayed, and its absence is
// an error.
func replayHistories(ctx context.Context, g *Globals, harness, file string, at time.Time) ([]*fsm.History, error) {
	r := fsm.NewReplayer(at)
	stream := ""
	if harness != "" {
		stream = events.HarnessStream(harness)
	}
	var err error
	if file != "" {
		err = replayFile(g, file, func(e *events.Envelope) error {
			if stream != "" && e.Stream != stream {
				return nil
			}
			return r.Apply(e)
		})
	} else {
		err = replayLedger(ctx, g, stream, r.Apply)
	}
	if err != nil {
		return nil, err
	}
	hs := r.Finish()
	if harness != "" && len(hs) == 0 {
		return nil, fmt.Errorf("no events for harness %q", harness)
	}
	return hs, nil
}

func replayLedger(ctx context.Context, g *Globals, stream string, apply func(*events.Envelope) error) error {
	st, err := g.OpenStore(true)
	if err != nil {
		return err
	}
	defer st.Close()
	if stream != "" {
		err = st.ReadStream(ctx, stream, 0, apply)
	} else {
		err = st.ReadAll(ctx, 0, apply)
	}
	if err != nil {
		return fmt.Errorf("replay %s: %w", st.Path(), err)
	}
	return nil
}

// replayFile strictly decodes an NDJSON event file (at most
// maxReplayFileBytes, each line at most events.MaxEnvelopeBytes, every
// envelope's hash checked, consecutive positions chained) and hands each
// envelope to fn. Errors name the file line; replay errors also name the
// ledger position.
func replayFile(g *Globals, name string, fn func(e *events.Envelope) error) error {
	var r io.Reader = g.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("open event file: %w", err)
		}
		defer f.Close()
		r = f
	}
	return readEventFile(r, name, fn)
}

// errFileTooLarge is returned once more than maxReplayFileBytes were read.
var errFileTooLarge = fmt.Errorf("event file is larger than %d bytes", maxReplayFileBytes)

// boundedReader reads at most left bytes of r and fails with tooLarge
// (errFileTooLarge when nil) when r holds more.
type boundedReader struct {
	r        io.Reader
	left     int64
	tooLarge error
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more than allowed tells a full file from a large one.
		var one [1]byte
		if n, _ := b.r.Read(one[:]); n > 0 {
			if b.tooLarge != nil {
				return 0, b.tooLarge
			}
			return 0, errFileTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func readEventFile(r io.Reader, name string, fn func(e *events.Envelope) error) error {
	sc := bufio.NewScanner(&boundedReader{r: r, left: maxReplayFileBytes})
	sc.Buffer(make([]byte, 0, 64<<10), events.MaxEnvelopeBytes+1)
	var prev events.Envelope
	have := false
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		e, err := events.DecodeEnvelope(b)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		switch {
		case e.Position == 1 && e.PrevHash != events.GenesisHash:
			return fmt.Errorf("%s:%d: position 1 does not start the chain (prev_hash is not the genesis hash)", name, line)
		case have && prev.Position+1 == e.Position && prev.Hash != e.PrevHash:
			return fmt.Errorf("%s:%d: position %d: prev_hash does not link to position %d", name, line, e.Position, prev.Position)
		}
		if err := fn(&e); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		prev, have = e, true
	}
	if err := sc.Err(); err != nil {
		switch {
		case errors.Is(err, bufio.ErrTooLong):
			return fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, events.MaxEnvelopeBytes)
		case errors.Is(err, errFileTooLarge):
			return fmt.Errorf("%s: %w", name, err)
		}
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}

// The --json shape; docs/fsm.md documents it. Field names are stable.
type replayJSON struct {
	OK        bool          `json:"ok"`
	At        time.Time     `json:"at"`
	Source    string        `json:"source"`
	Harnesses []harnessJSON `json:"harnesses"`
}

type harnessJSON struct {
	HarnessID     string       `json:"harness_id"`
	State         fsm.State    `json:"state"`
	RecordedState fsm.State    `json:"recorded_state"`
	Events        int          `json:"events"`
	LaterEvents   int          `json:"later_events"`
	Steps         []stepJSON   `json:"steps"`
	Workers       []workerJSON `json:"workers"`
}

type stepJSON struct {
	Position   uint64    `json:"position"`
	Version    uint64    `json:"version"`
	RecordedAt time.Time `json:"recorded_at"`
	Type       string    `json:"type"`
	Transition string    `json:"transition"`
	From       fsm.State `json:"from"`
	To         fsm.State `json:"to"`
	Derived    bool      `json:"derived"`
	Reason     string    `json:"reason"`
}

type workerJSON struct {
	WorkerKeyFingerprint string    `json:"worker_key_fingerprint"`
	ReceiptID            string    `json:"receipt_id"`
	State                fsm.State `json:"state"`
	Position             uint64    `json:"position"`
	RecordedAt           time.Time `json:"recorded_at"`
	ExpiresAt            time.Time `json:"expires_at"`
	Fresh                bool      `json:"fresh"`
}

func toReplayJSON(at time.Time, fromFile bool, hs []*fsm.History) replayJSON {
	out := replayJSON{OK: true, At: at, Source: "ledger", Harnesses: make([]harnessJSON, 0, len(hs))}
	if fromFile {
		out.Source = "file"
	}
	for _, h := range hs {
		hj := harnessJSON{HarnessID: h.Harness, State: h.State, RecordedState: h.Recorded, Events: h.Events, LaterEvents: h.Later,
			Steps: make([]stepJSON, 0, len(h.Steps)), Workers: []workerJSON{}}
		for i := range h.Steps {
			s := &h.Steps[i]
			hj.Steps = append(hj.Steps, stepJSON{Position: s.Position, Version: s.Version, RecordedAt: s.At, Type: s.Type,
				Transition: s.Transition, From: s.From, To: s.To, Derived: s.Derived, Reason: s.Reason()})
		}
		for _, w := range h.Workers() {
			hj.Workers = append(hj.Workers, workerJSON{WorkerKeyFingerprint: w.Worker, ReceiptID: w.ID, State: w.State, Position: w.Position,
				RecordedAt: w.At, ExpiresAt: w.ExpiresAt(), Fresh: fsm.Fresh(w.At, at)})
		}
		out.Harnesses = append(out.Harnesses, hj)
	}
	return out
}

func writeReplayJSON(w io.Writer, at time.Time, fromFile bool, hs []*fsm.History) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(toReplayJSON(at, fromFile, hs))
}

const humanTime = time.RFC3339

func writeReplayText(out io.Writer, at time.Time, hs []*fsm.History) error {
	bw := bufio.NewWriter(out)
	if len(hs) == 0 {
		fmt.Fprintf(bw, "no harness events at or before %s\n", at.Format(humanTime))
		return bw.Flush()
	}
	for i, h := range hs {
		if i > 0 {
			bw.WriteByte('\n')
		}
		fmt.Fprintf(bw, "%s: %s at %s (%d events replayed", h.Harness, h.State, at.Format(humanTime), h.Events)
		if h.Later > 0 {
			fmt.Fprintf(bw, ", %d recorded later not replayed", h.Later)
		}
		bw.WriteString(")\n")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  POS\tTIME\tEVENT\tTRANSITION\tFROM -> TO\tREASON")
		for j := range h.Steps {
			s := &h.Steps[j]
			pos, typ, tr, move := "-", "(derived)", s.Transition, string(s.From)
			if !s.Derived {
				pos, typ = fmt.Sprint(s.Position), s.Type
			}
			if tr == "" {
				tr = "-"
			} else {
				move += " -> " + string(s.To)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", pos, s.At.Format(humanTime), typ, tr, move, s.Reason())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, w := range h.Workers() {
			fresh := "expired"
			if fsm.Fresh(w.At, at) {
				fresh = "fresh"
			}
			fmt.Fprintf(bw, "  worker %.12s: %s receipt %s recorded %s, proves until %s (%s)\n",
				fsm.Printable(w.Worker), w.State, fsm.Printable(w.ID), w.At.Format(humanTime), w.ExpiresAt().Format(humanTime), fresh)
		}
	}
	return bw.Flush()
}
