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
	"runtime"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/internal/cli"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/memory"
)

type importOptions struct {
	DryRun      bool
	SkipRefused bool
}

func (o *importOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.DryRun, "dry-run", false, "validate and count; write nothing")
	fs.BoolVar(&o.SkipRefused, "skip-refused", false, "import the lines that pass and list the refused ones (line and reason); without it a refused line imports nothing")
}

func init() {
	register("import", "FILE|-", "import memories from a published JSONL export (or raw memory lines); existing ids are skipped", runImport)
}

// maxMemoryImportBytes bounds an import file.
const maxMemoryImportBytes = 2 << 30

// errImportTooLarge refuses an import file beyond maxMemoryImportBytes.
var errImportTooLarge = fmt.Errorf("import file is larger than %d bytes", int64(maxMemoryImportBytes))

// importChunk is how many memories one write transaction imports: each
// chunk is atomic, and a retry after an interruption skips what landed.
const importChunk = 5000

// firstImportChunk is the size of the first chunk; each next one doubles
// up to importChunk.
const firstImportChunk = 500

// importSliceBudget is the memory import's slice budget (bolt.Options):
// what a hook that asks for the lock mid-slice waits for beyond a
// commit's floor, the index writes and commit of the work done so far.
// A memory's index keys land at random places, so each commit rewrites a
// page per key however few memories it holds: at the long commands' 30 ms
// an import committed every few hundred memories; 100 ms, within the
// hooks' 250 ms lock-wait target, measured 22–26 % less CPU and 30 % fewer
// bytes written per memory at 100k (docs/benchmarks.md).
const importSliceBudget = 100 * time.Millisecond

// importResult holds the published summary fields, the lines
// --skip-refused skipped (numbers and reason kinds only) and the ledger's
// size.
type importResult struct {
	Valid             int                  `json:"valid"`
	Inserted          int                  `json:"inserted"`
	Replaced          int                  `json:"replaced"`
	SkippedDuplicates int                  `json:"skipped_duplicates"`
	DryRun            bool                 `json:"dry_run"`
	SkippedRefused    []memory.RefusedLine `json:"skipped_refused,omitempty"`
	// The ledger's size, after an import that wrote (nil: no field).
	*ledgerSpace
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
	// opened: a bad line or a secret-like value anywhere imports nothing
	// (unless --skip-refused; the refusal is a recorded failed run), and
	// every refused line is named.
	// Bounded, and a larger file is refused (never silently truncated).
	recs, refusedLines, err := readMemories(ctx, &boundedReader{r: r, left: maxMemoryImportBytes, tooLarge: errImportTooLarge}, name, events.FormatMemoryTime(g.Now()))
	if err != nil {
		return refusedImport(ctx, g, o, err)
	}
	if len(refusedLines) > 0 && !o.SkipRefused {
		for _, l := range refusedLines {
			fmt.Fprint(g.Stderr, cli.ErrorLine("tree-ring", fmt.Errorf("%s:%d: %w", name, l.Line, l.Err), g.Root))
		}
		return refusedImport(ctx, g, o, fmt.Errorf("import %s: %d line(s) refused (listed above), nothing imported; fix them, or rerun with --skip-refused to import the other %d", name, len(refusedLines), len(recs)))
	}
	res := importResult{Valid: len(recs), DryRun: o.DryRun, SkippedRefused: refusedLines}
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
	for _, l := range res.SkippedRefused {
		fmt.Fprintf(g.Stdout, "skipped refused line %d: %s\n", l.Line, l.Kind)
	}
	_, err = fmt.Fprintf(g.Stdout, "Tree Ring Memory import complete: valid=%d inserted=%d replaced=%d skipped_duplicates=%d dry_run=%t\n",
		res.Valid, res.Inserted, res.Replaced, res.SkippedDuplicates, res.DryRun)
	if err == nil {
		printCompactHint(g, res.ledgerSpace)
	}
	return err
}

// readMemories reads an export (or raw memory lines) line by line through
// memory.ImportFile, which normalizes, validates and guards every record
// and records every refused line. Errors name the line, never a value; a
// read error, an oversized file or ctx's end stops the read.
//
// Parsing a line (strict decoding, validation, the sensitivity check) is
// most of the read: it runs on parseWorkers goroutines over batches of
// lines while this one reads, and the batches are taken in file order, so
// the records and refused lines are those of a one-line-at-a-time read. At
// most parseAhead batches are in flight.
func readMemories(ctx context.Context, r io.Reader, name, now string) ([]memory.Record, []memory.RefusedLine, error) {
	var file memory.ImportFile
	work := make(chan *lineBatch, parseAhead)
	order := make(chan *lineBatch, parseAhead)
	var wg sync.WaitGroup
	for range parseWorkers() {
		wg.Go(func() {
			for b := range work {
				b.parse(now)
			}
		})
	}
	wg.Go(func() {
		for b := range order {
			<-b.done
			b.take(&file)
		}
	})
	err := readLines(ctx, r, name, func(b *lineBatch) {
		work <- b
		order <- b
	})
	close(work)
	close(order)
	wg.Wait()
	if err != nil {
		return nil, nil, err
	}
	recs, err := file.Records()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return recs, file.Refused(), nil
}

// parseBatch is how many lines a parse worker takes at a time, and
// parseAhead how many batches may wait to be parsed or taken (what the
// read holds beyond the records).
const (
	parseBatch = 256
	parseAhead = 8
)

// parseWorkers is one parse worker per usable core: the reader and the
// in-order taker are light.
func parseWorkers() int { return runtime.GOMAXPROCS(0) }

// lineBatch is a run of non-empty lines, parsed by a worker (done is
// closed then) and taken in file order.
type lineBatch struct {
	n      []int    // line numbers
	raw    [][]byte // nil for a line over memory.MaxLineBytes
	parsed []memory.ParsedLine
	done   chan struct{}
}

func (b *lineBatch) parse(now string) {
	b.parsed = make([]memory.ParsedLine, len(b.raw))
	for i, raw := range b.raw {
		if raw != nil {
			b.parsed[i] = memory.ParseImportLine(raw, now)
		}
	}
	close(b.done)
}

func (b *lineBatch) take(file *memory.ImportFile) {
	for i, raw := range b.raw {
		if raw == nil {
			file.Refuse(b.n[i], "line_too_long", errLineTooLong)
			continue
		}
		_ = file.Take(b.n[i], &b.parsed[i]) // recorded in file.Refused
	}
}

// readLines reads r's lines into batches and hands each to send, in
// order; blank lines are skipped (still counted). It checks ctx between
// batches.
func readLines(ctx context.Context, r io.Reader, name string, send func(*lineBatch)) error {
	br := bufio.NewReaderSize(r, 256<<10)
	line := 0
	b := &lineBatch{done: make(chan struct{})}
	flush := func() error {
		if len(b.raw) > 0 {
			send(b)
			b = &lineBatch{done: make(chan struct{})}
		}
		return ctx.Err()
	}
	for {
		raw, err := readLine(br)
		if err == io.EOF {
			return flush()
		}
		line++
		tooLong := errors.Is(err, errLineTooLong)
		if err != nil && !tooLong {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if raw = bytes.TrimSpace(raw); len(raw) == 0 && !tooLong {
			continue
		}
		b.n, b.raw = append(b.n, line), append(b.raw, raw) // a non-empty TrimSpace is never nil
		if len(b.raw) == parseBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// errLineTooLong is an import line over memory.MaxLineBytes; the rest of
// it is read and dropped, so the next line is read whole.
var errLineTooLong = fmt.Errorf("line longer than %d bytes", memory.MaxLineBytes)

// readLine returns the next line without its newline, bounded: a longer
// line is consumed to its end and refused (errLineTooLong).
func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			out = append(out, chunk...)
			if len(out) > memory.MaxLineBytes+1 {
				tooLong, out = true, nil
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case tooLong && (err == nil || err == io.EOF):
			return nil, errLineTooLong
		case err == nil:
			return out[:len(out)-1], nil
		case err == io.EOF && len(out) > 0:
			return out, nil
		default:
			return nil, err
		}
	}
}

func dryRunImport(g *Globals, recs []memory.Record, res *importResult) error {
	p := memory.NewImportPlanner()
	plan := func(idx memory.Index) error {
		for i := range recs {
			ok, err := p.Decide(idx, &recs[i])
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
		// A dry run never creates a store.
		return plan(memIndex{kv: emptyKV{}, dups: emptyKV{}, bodies: emptyKV{}, version: func(string) uint64 { return 0 }})
	}
	if err != nil {
		return err
	}
	defer st.Close()
	return st.View(func(r *bolt.Reader) error {
		return plan(txIndex(r))
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
	opts := g.storeOptions()
	opts.SliceBudget = importSliceBudget
	st, err := g.openStore(opts)
	if err != nil {
		return err
	}
	defer st.Close()
	im := &importer{g: g, st: st, scope: scope, plan: memory.NewImportPlanner()}
	// A recorded run (docs/runs.md), started inside the first transaction
	// that inserts a memory: an import of duplicates only changes nothing,
	// not even a run record; one refused before it inserted (an operation
	// id bound to another write) is a failed run of its own commit.
	defer func() {
		if im.run == nil && err != nil {
			im.run, _ = g.StartRun(ctx, st, RunSpec{Command: events.RunCmdImport, Scope: scope, Stage: "plan"})
		}
		if im.run != nil {
			im.run.End(ctx, &err)
		}
	}()
	shown := g.newProgressOf("imported", "memories")
	defer shown.end()
	var inserted []*memory.Record
	// The first chunks are small and grow: the first commit into an empty
	// recall index is one bbolt leaf until it splits (docs/benchmarks.md).
	size := firstImportChunk
	for start := 0; start < len(recs); size = min(2*size, importChunk) {
		ins, done, skipped, err := im.chunk(ctx, recs[start:min(start+size, len(recs))])
		if err != nil {
			return err
		}
		inserted = append(inserted, ins...)
		res.Inserted += len(ins)
		res.SkippedDuplicates += skipped
		start += done
		shown.update(uint64(start), uint64(len(recs)))
		// Let a waiting hook in between slices (a long import).
		if err := st.Yield(); err != nil {
			return err
		}
	}
	if len(inserted) == 0 {
		return nil
	}
	im.run.SetItems(int64(res.Inserted))
	if err := im.supersede(ctx, inserted); err != nil {
		return err
	}
	res.ledgerSpace = spaceAfterImport(st)
	return nil
}

// importer is one import's store, planner and run record.
type importer struct {
	g     *Globals
	st    *bolt.Store
	scope string
	plan  *memory.ImportPlanner
	run   *Run // started with the first inserted memory
}

// chunk imports recs in one write transaction, starting the run record
// with the first memory it inserts. It stops early, after done records,
// when the transaction has held the lock past its slice budget.
func (im *importer) chunk(ctx context.Context, recs []memory.Record) (ins []*memory.Record, done, skipped int, err error) {
	var started *Run
	err = im.st.Update(ctx, func(tx *bolt.Tx) error {
		ins, done, skipped, started = ins[:0], 0, 0, nil
		idx := txIndex(tx)
		for i := range recs {
			if i%16 == 15 && tx.Overdue() {
				break
			}
			done = i + 1
			rec := &recs[i]
			ok, err := im.plan.Decide(idx, rec)
			if err != nil {
				return fmt.Errorf("memory %s: %w", rec.ID, err)
			}
			if !ok {
				skipped++
				continue
			}
			if im.run == nil && started == nil {
				if started, err = im.g.StartRunIn(tx, im.st, RunSpec{Command: events.RunCmdImport, Scope: im.scope, Stage: "append"}); err != nil {
					return err
				}
			}
			w := memory.NewWrite(rec, events.OriginImport, im.g.nonce())
			if err := appendWrite(im.g, tx, rec.ID, &w); err != nil {
				return err
			}
			ins = append(ins, rec)
		}
		return nil
	})
	if err == nil && started != nil {
		im.run = started
	}
	return ins, done, skipped, err
}

// supersede applies the supersedes lists after all rows, as published
// (memory.ImportSupersessions), and finishes the run record in the same
// transaction.
func (im *importer) supersede(ctx context.Context, inserted []*memory.Record) error {
	return im.st.Update(ctx, func(tx *bolt.Tx) error {
		sup, err := memory.ImportSupersessions(txIndex(tx), inserted)
		if err != nil {
			return err
		}
		for i := range sup {
			if err := appendSuperseded(im.g, tx, &sup[i]); err != nil {
				return err
			}
		}
		return im.run.FinishIn(tx, nil)
	})
}
