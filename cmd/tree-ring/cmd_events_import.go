package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
)

func init() {
	register("events import", "FILE|-", "merge envelopes exported from another ledger (idempotent by id)", runEventsImport)
}

// maxImportBytes bounds an import file.
const maxImportBytes = 4 << 30

func runEventsImport(ctx context.Context, g *Globals, _ *noOptions, args []string) (err error) {
	if len(args) != 1 {
		return usagef("events import needs exactly one FILE (or - for stdin)")
	}
	name := args[0]
	scope, err := g.CLIScope()
	if err != nil {
		return err
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := g.StartRun(ctx, st, RunSpec{Command: events.RunCmdEventsImport, Scope: scope, Stage: "read"})
	if err != nil {
		return err
	}
	defer run.End(ctx, &err)
	var r io.Reader = g.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("open import file: %w", err)
		}
		defer f.Close()
		r = f
	}
	meter := newInputMeter()
	envs, err := readEnvelopes(io.TeeReader(io.LimitReader(r, maxImportBytes), meter), name)
	if err != nil {
		return err
	}
	run.SetInput(meter.Digest())
	run.SetStage("append")
	res, err := st.Import(ctx, envs)
	if err != nil {
		return fmt.Errorf("import %s: %w", name, err)
	}
	run.SetItems(int64(res.Imported))
	if err := run.Finish(ctx, nil); err != nil {
		return err
	}
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK bool `json:"ok"`
			bolt.ImportResult
		}{true, res})
	}
	fmt.Fprintf(g.Stdout, "imported %d, skipped %d duplicates\n", res.Imported, res.Skipped)
	return nil
}

// readEnvelopes strictly decodes NDJSON envelopes; blank lines are allowed.
// The first bad line aborts with its line number, before anything is written.
// Consecutive positions of the source ledger must chain (prev_hash).
func readEnvelopes(r io.Reader, name string) ([]events.Envelope, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), events.MaxEnvelopeBytes+1)
	var out []events.Envelope
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		e, err := events.DecodeEnvelope(b)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if n := len(out); n > 0 && out[n-1].Position+1 == e.Position && out[n-1].Hash != e.PrevHash {
			return nil, fmt.Errorf("%s:%d: prev_hash does not link to the line before (position %d)", name, line, e.Position)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return nil, fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, events.MaxEnvelopeBytes)
		}
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return out, nil
}
