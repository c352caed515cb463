package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/projections/recall"
)

type importOptions struct {
	DryRun bool
}

func (o *importOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.DryRun, "dry-run", false, "validate and count; write nothing")
}

func init() {
	register("import", "FILE|-", "import memories from a published JSONL export (or raw memory lines); existing ids are skipped", runImport)
}

// maxMemoryImportBytes bounds an import file.
const maxMemoryImportBytes = 2 << 30

// importChunk is how many memories one write transaction imports: each
// chunk is atomic, and a retry after an interruption skips what landed.
const importChunk = 5000

// importResult holds the published summary fields.
type importResult struct {
	Valid             int  `json:"valid"`
	Inserted          int  `json:"inserted"`
	Replaced          int  `json:"replaced"`
	SkippedDuplicates int  `json:"skipped_duplicates"`
	DryRun            bool `json:"dry_run"`
}

func runImport(ctx context.Context, g *Globals, o *importOptions, args []string) error {
	if len(args) != 1 {
		return usagef("import needs exactly one FILE (or - for stdin)")
	}
	name := args[0]
	var r io.Reader = g.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("open import file: %w", err)
		}
		defer f.Close()
		r = f
	}
	// Every line is decoded, validated and inspected before the store is
	// opened: a bad line or a secret-like value anywhere writes nothing.
	recs, err := readMemories(io.LimitReader(r, maxMemoryImportBytes), name, events.FormatMemoryTime(g.Now()))
	if err != nil {
		return err
	}
	res := importResult{Valid: len(recs), DryRun: o.DryRun}
	if o.DryRun {
		err = dryRunImport(g, recs, &res)
	} else {
		err = applyImport(ctx, g, recs, &res)
	}
	if err != nil {
		return fmt.Errorf("import %s: %w", name, err)
	}
	if g.JSON {
		return writeLine(g.Stdout, struct {
			OK bool `json:"ok"`
			importResult
		}{true, res})
	}
	_, err = fmt.Fprintf(g.Stdout, "Tree Ring Memory import complete: valid=%d inserted=%d replaced=%d skipped_duplicates=%d dry_run=%t\n",
		res.Valid, res.Inserted, res.Replaced, res.SkippedDuplicates, res.DryRun)
	return err
}

// readMemories decodes an export (or raw memory lines), normalizes legacy
// rows, validates every record and applies the sensitivity guard. Errors
// name the line, never a value.
func readMemories(r io.Reader, name, now string) ([]memory.Record, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var recs []memory.Record
	var header *memory.ExportHeader
	line := 0
	for {
		raw, err := readLine(br)
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		l, err := memory.DecodeImportLine(raw, now)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if l.Header != nil {
			if header != nil || len(recs) > 0 {
				return nil, fmt.Errorf("%s:%d: the export header must be the first line", name, line)
			}
			header = l.Header
			continue
		}
		rec := *l.Memory
		rec.NormalizeLegacy()
		if err := prepareRecord(&rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		recs = append(recs, rec)
	}
	if header != nil && header.MemoryCount != len(recs) {
		return nil, fmt.Errorf("%s: the header says %d memories, the file has %d", name, header.MemoryCount, len(recs))
	}
	return recs, nil
}

// readLine returns the next line without its newline, bounded.
func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > memory.MaxLineBytes+1 {
			return nil, fmt.Errorf("line longer than %d bytes", memory.MaxLineBytes)
		}
		switch {
		case err == nil:
			return out[:len(out)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(out) > 0:
			return out, nil
		default:
			return nil, err
		}
	}
}

// planner decides, record by record, what an import does; it is shared by
// the dry run (on a read snapshot) and the real import (inside each write
// transaction), so both count the same.
type planner struct {
	ids    map[string]bool // ids inserted by this import
	claims map[[32]byte]*memory.Record
}

func newPlanner() *planner {
	return &planner{ids: map[string]bool{}, claims: map[[32]byte]*memory.Record{}}
}

// decide returns true to insert rec, false to skip it as a duplicate, or
// the published conflict error.
func (p *planner) decide(kv recall.KV, bodies recall.Bodies, exists func(id string) bool, rec *memory.Record) (bool, error) {
	if p.ids[rec.ID] || exists(rec.ID) {
		return false, nil // also a forgotten id: an import never resurrects one
	}
	if rec.OperationID != nil {
		claim := memory.OperationClaim(memory.Deref(rec.Project), memory.Deref(rec.WorkflowID), memory.Deref(rec.AgentProfile), *rec.OperationID)
		if prev, ok := p.claims[claim]; ok {
			if memory.SameWriteIntent(prev, rec) {
				return false, nil
			}
			return false, &operationConflictError{OperationID: *rec.OperationID}
		}
		if _, ok, err := claimedBy(kv, bodies, rec); err != nil || ok {
			return false, err
		}
		p.claims[claim] = rec
	}
	p.ids[rec.ID] = true
	return true, nil
}

func dryRunImport(g *Globals, recs []memory.Record, res *importResult) error {
	p := newPlanner()
	plan := func(kv recall.KV, bodies recall.Bodies, exists func(string) bool) error {
		for i := range recs {
			ok, err := p.decide(kv, bodies, exists, &recs[i])
			if err != nil {
				return fmt.Errorf("memory %s: %w", recs[i].ID, err)
			}
			if ok {
				res.Inserted++
			} else {
				res.SkippedDuplicates++
			}
		}
		return nil
	}
	st, err := g.OpenStore(true)
	var nf *bolt.NotFoundError
	if errors.As(err, &nf) || errors.Is(err, fs.ErrNotExist) {
		return plan(emptyKV{}, emptyKV{}, func(string) bool { return false }) // a dry run never creates a store
	}
	if err != nil {
		return err
	}
	defer st.Close()
	return st.View(func(r *bolt.Reader) error {
		return plan(r.Projection(recall.Name), r, func(id string) bool { return r.StreamVersion(events.MemoryStream(id)) != 0 })
	})
}

// emptyKV is the index of a store that does not exist yet.
type emptyKV struct{}

func (emptyKV) Get([]byte) []byte                                 { return nil }
func (emptyKV) Put(_, _ []byte) error                             { return errors.New("read-only") }
func (emptyKV) Delete([]byte) error                               { return errors.New("read-only") }
func (emptyKV) ForEach(_ []byte, _ func(k, v []byte) error) error { return nil }
func (emptyKV) Body(string) []byte                                { return nil }

func applyImport(ctx context.Context, g *Globals, recs []memory.Record, res *importResult) (err error) {
	scope, err := g.CLIScope()
	if err != nil {
		return err
	}
	st, err := g.OpenStore(false)
	if err != nil {
		return err
	}
	defer st.Close()
	// A recorded run (docs/runs.md), started inside the first transaction
	// that inserts a memory: refused input or an import of duplicates only
	// changes nothing, not even a run record.
	var run *Run
	defer func() {
		if run != nil {
			run.End(ctx, &err)
		}
	}()
	p := newPlanner()
	var progress func(int)
	if g.StdoutTerminal && !g.JSON {
		progress = func(n int) { fmt.Fprintf(g.Stdout, "\rimported %d/%d memories", n, len(recs)) }
		defer fmt.Fprintln(g.Stdout)
	}
	var inserted []*memory.Record
	for start := 0; start < len(recs); start += importChunk {
		end := min(start+importChunk, len(recs))
		var ins []*memory.Record
		var skipped int
		var started *Run
		err := st.Update(ctx, func(tx *bolt.Tx) error {
			ins, skipped, started = ins[:0], 0, nil
			kv := tx.Projection(recall.Name)
			exists := func(id string) bool { return tx.StreamVersion(events.MemoryStream(id)) != 0 }
			for i := start; i < end; i++ {
				rec := &recs[i]
				ok, err := p.decide(kv, tx, exists, rec)
				if err != nil {
					return fmt.Errorf("memory %s: %w", rec.ID, err)
				}
				if !ok {
					skipped++
					continue
				}
				if run == nil && started == nil {
					if started, err = g.StartRunIn(tx, st, RunSpec{Command: events.RunCmdImport, Scope: scope, Stage: "append"}); err != nil {
						return err
					}
				}
				evs, err := captureEvents(g, tx, rec, events.OriginImport)
				if err != nil {
					return err
				}
				if _, err := tx.Append(events.MemoryStream(rec.ID), 0, evs...); err != nil {
					return err
				}
				ins = append(ins, rec)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if started != nil {
			run = started
		}
		inserted = append(inserted, ins...)
		res.Inserted += len(ins)
		res.SkippedDuplicates += skipped
		if progress != nil {
			progress(end)
		}
	}
	// Supersession after all rows, as published: a row's supersedes list
	// marks each target that exists (in the store or in this import) and
	// is not already marked by this row.
	if len(inserted) == 0 {
		return nil
	}
	run.SetItems(int64(res.Inserted))
	return st.Update(ctx, func(tx *bolt.Tx) error {
		kv := tx.Projection(recall.Name)
		for _, rec := range inserted {
			for _, target := range rec.Supersedes {
				cur, state, ok, err := recall.Lookup(kv, tx, target)
				if err != nil {
					return err
				}
				if !ok || state.Redacted || memory.Deref(cur.SupersededBy) == rec.ID {
					continue
				}
				if err := appendSuperseded(g, tx, target, rec.ID); err != nil {
					return err
				}
			}
		}
		return run.FinishIn(tx, nil)
	})
}
