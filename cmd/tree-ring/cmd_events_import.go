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
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tree-ring/tree-ring/adapters"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/cmd/tree-ring/internal/runrec"
	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/projections"
)

func init() {
	register("events import", "FILE|-", "import envelopes exported from this store (idempotent by id; a project store refuses another store's events)", runEventsImport)
}

// maxImportBytes bounds an import file: every envelope is decoded and held
// in memory before the first write, so that a bad line changes nothing.
const maxImportBytes = 2 << 30

// runEventsImport decodes the whole input first (any bad line aborts with
// its line number, before the ledger is opened, so a bad file changes
// nothing — not even a run record), then appends it in chunks as one
// recorded run.
func runEventsImport(ctx context.Context, g *Globals, _ *noOptions, args []string) (err error) {
	if len(args) != 1 {
		return usagef("events import needs exactly one FILE (or - for stdin)")
	}
	name := args[0]
	scope, err := g.CLIScope()
	if err != nil {
		return err
	}
	r, closeInput, err := openImport(g, name)
	if err != nil {
		return err
	}
	defer closeInput()
	meter := runrec.NewMeter()
	envs, lines, err := readEnvelopes(io.TeeReader(r, meter), name, maxImportBytes)
	if err != nil {
		return err
	}
	st, err := g.OpenLongStore()
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CheckImport(envs, ownEvents(envs, freshRootFP(g))); err != nil {
		return importError(name, lines, err)
	}
	run, err := g.StartRun(ctx, st, RunSpec{Command: events.RunCmdEventsImport, Scope: scope, Stage: "append"})
	if err != nil {
		return err
	}
	defer run.End(ctx, &err)
	run.SetInput(meter.Digest())
	shown := g.newProgress("imported")
	res, err := st.ImportProgress(ctx, envs, shown.update)
	shown.end()
	if err != nil {
		err = importError(name, lines, err)
		if res.Imported > 0 {
			// Earlier chunks are committed: not "nothing changed".
			return &PartialError{Err: err, Done: fmt.Sprintf("%d events were imported before the failure (outcome indeterminate); the same command again imports the rest (idempotent by id)", res.Imported)}
		}
		return err
	}
	run.SetItems(int64(res.Imported))
	if err := run.Finish(ctx, nil); err != nil {
		return &PartialError{Err: err, Done: fmt.Sprintf("the import itself is committed (%d imported, %d skipped as duplicates); only its run record is unfinished (outcome indeterminate)", res.Imported, res.Skipped)}
	}
	return finishImport(ctx, g, st, envs, res)
}

// finishImport revokes the proofs the imported events brought
// (revokeRestored), puts back the receipt files they name (a restore) and
// prints the result.
func finishImport(ctx context.Context, g *Globals, st *bolt.Store, envs []events.Envelope, res bolt.ImportResult) error {
	if err := revokeRestored(ctx, g, st, envs, res); err != nil {
		return err
	}
	restored, err := restoreReceiptFiles(g, st)
	if err != nil {
		return &PartialError{Err: err, Done: fmt.Sprintf("the import is committed (%d imported, %d skipped as duplicates); `tree-ring projections rebuild` restores the receipt files", res.Imported, res.Skipped)}
	}
	var sp *ledgerSpace
	if res.Imported > 0 {
		sp = spaceAfterImport(st)
	}
	return printImport(g, res, restored, sp)
}

// ownEvents admits an import into a project store (a ledger with
// store.initialized) only of that store's own events
// (events.CheckOwnImport); a ledger that is no project's store yet (a
// restore into an empty root) takes the events of one store (oneStore),
// and, when the root is a project's .tree-ring (projectFP is its
// project's fingerprint), only of a store of that project root
// (events.CheckFreshRoot). Its refusal is an *bolt.ImportError, so that
// the message names the line.
func ownEvents(envs []events.Envelope, projectFP string) func(r *bolt.Reader, present []bool) error {
	return func(r *bolt.Reader, present []bool) error {
		m, project, err := projections.ManifestOf(r.Projection(projections.ManifestName))
		if err != nil {
			return err
		}
		if !project {
			if err := oneStore(envs); err != nil || projectFP == "" {
				return err
			}
			err := events.CheckFreshRoot(projectFP, envs)
			var fe *events.ForeignRootError
			if errors.As(err, &fe) {
				return &bolt.ImportError{Index: fe.Index, Err: err}
			}
			return err
		}
		head, hash := r.Head()
		err = events.CheckOwnImport(m.StoreID, head, hash, envs, present)
		var fe *events.ForeignStoreError
		if errors.As(err, &fe) {
			return &bolt.ImportError{Index: fe.Index, Err: err}
		}
		return err
	}
}

// freshRootFP is the project root fingerprint of --root when it is a
// project's store directory (named .tree-ring), "" for a scratch root.
func freshRootFP(g *Globals) string {
	abs, err := filepath.Abs(g.Root)
	if err != nil || filepath.Base(abs) != adapters.StoreDir {
		return ""
	}
	canonical, err := adapters.CanonicalProjectRoot(filepath.Dir(abs))
	if err != nil {
		return ""
	}
	return adapters.ProjectRootFingerprint(canonical)
}

// oneStore refuses an export that initializes more than one store (two
// projects' exports concatenated), which would leave a ledger with two
// store.initialized that no command can use.
func oneStore(envs []events.Envelope) error {
	first := ""
	for i := range envs {
		if envs[i].Type != events.TypeStoreInitialized {
			continue
		}
		id, err := initializedID(&envs[i])
		switch {
		case err != nil:
			return &bolt.ImportError{Index: i, Err: err}
		case first == "":
			first = id
		case id != first:
			return &bolt.ImportError{Index: i, Err: fmt.Errorf("the export initializes two stores (%s, then %s); a ledger holds one store's events", first, id)}
		}
	}
	return nil
}

// initializedID is the store id of a store.initialized envelope.
func initializedID(e *events.Envelope) (string, error) {
	v, err := events.DecodePayload(e)
	if err != nil {
		return "", err
	}
	return v.(*events.StoreInitialized).StoreID, nil
}

// openImport opens the import FILE (stdin for "-"); close releases it.
func openImport(g *Globals, name string) (r io.Reader, close func(), err error) {
	if name == "-" {
		return g.Stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("import: %w", err)
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, nil, fmt.Errorf("import %s: is a directory", name)
	}
	return f, func() { f.Close() }, nil
}

// printImport prints the result; sp is the ledger's size after an import
// that wrote (nil: none, or it could not be read).
func printImport(g *Globals, res bolt.ImportResult, restored int, sp *ledgerSpace) error {
	if g.JSON {
		return json.NewEncoder(g.Stdout).Encode(struct {
			OK bool `json:"ok"`
			bolt.ImportResult
			ReceiptFilesRestored int `json:"receipt_files_restored,omitempty"`
			*ledgerSpace
		}{true, res, restored, sp})
	}
	fmt.Fprintf(g.Stdout, "imported %d, skipped %d duplicates\n", res.Imported, res.Skipped)
	if restored > 0 {
		fmt.Fprintf(g.Stdout, "restored %d receipt file(s) from their events\n", restored)
	}
	printCompactHint(g, sp)
	return nil
}

// importError names the input line of an envelope the store refused.
func importError(name string, lines []int, err error) error {
	var ie *bolt.ImportError
	if !errors.As(err, &ie) || ie.Index < 0 || ie.Index >= len(lines) {
		return fmt.Errorf("import %s: %w", name, err)
	}
	var in *bolt.InputConflictError
	if errors.As(err, &in) && in.First >= 0 && in.First < len(lines) {
		return fmt.Errorf("%s:%d: event id %s appears on line %d with different content: %w", name, lines[ie.Index], in.ID, lines[in.First], err)
	}
	return fmt.Errorf("%s:%d: %w", name, lines[ie.Index], ie.Err)
}

// decodeChunkBytes is how many bytes of lines one decoding job holds. Its
// buffer is allocated once at that size (grown line by line, the copies of
// a 1 MiB chunk cost five times its size) and stays, since the envelopes
// alias it; a line is at most MaxEnvelopeBytes, so one always fits.
const decodeChunkBytes = 1 << 20

func newLineChunk() *lineChunk {
	return &lineChunk{buf: make([]byte, 0, decodeChunkBytes), ends: make([]int, 0, 1024), nums: make([]int, 0, 1024)}
}

// lineChunk is a run of input lines decoded by one worker.
type lineChunk struct {
	buf   []byte // the lines, back to back; the decoded envelopes alias it
	ends  []int  // end offset of each line in buf
	nums  []int  // 1-based line numbers
	out   []events.Envelope
	err   error // first error in the chunk, with its line
	errAt int
}

func (c *lineChunk) decode(failed *atomic.Bool) {
	c.out = make([]events.Envelope, len(c.ends))
	start := 0
	for i, end := range c.ends {
		e, err := events.DecodeEnvelopeOwned(c.buf[start:end])
		if err != nil {
			c.err, c.errAt = err, c.nums[i]
			failed.Store(true)
			return
		}
		c.out[i] = e
		start = end
	}
}

// readEnvelopes strictly decodes NDJSON envelopes (blank lines allowed) of
// at most limit bytes, on every core, and returns them in input order with
// their line numbers. The first bad line (lowest line number) aborts with
// "NAME:LINE: cause". Consecutive positions of one source ledger must chain
// (prev_hash).
func readEnvelopes(r io.Reader, name string, limit int64) ([]events.Envelope, []int, error) {
	sc := bufio.NewScanner(&limitReader{r: r, left: limit})
	sc.Buffer(make([]byte, 0, 64<<10), events.MaxEnvelopeBytes+1)
	chunks, line := decodeChunks(sc)
	n := 0
	for _, c := range chunks {
		if c.err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", name, c.errAt, c.err)
		}
		n += len(c.out)
	}
	if err := sc.Err(); err != nil {
		switch {
		case errors.Is(err, bufio.ErrTooLong):
			return nil, nil, fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, events.MaxEnvelopeBytes)
		case errors.Is(err, errTooLarge):
			return nil, nil, fmt.Errorf("%s: input larger than %d bytes", name, limit)
		default:
			return nil, nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
	return joinChunks(chunks, name, n)
}

// decodeChunks scans the input's non-blank lines into chunks decoded by
// one worker per core, stopping at the first failed chunk; it returns the
// chunks in input order and the number of lines scanned.
func decodeChunks(sc *bufio.Scanner) ([]*lineChunk, int) {
	workers := runtime.GOMAXPROCS(0)
	jobs := make(chan *lineChunk, workers)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				c.decode(&failed)
			}
		}()
	}
	var chunks []*lineChunk
	var cur *lineChunk // made at its first line: the last send needs no next
	send := func() {
		chunks = append(chunks, cur)
		jobs <- cur
		cur = nil
	}
	line := 0
	for !failed.Load() && sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if cur != nil && len(cur.buf)+len(b) > cap(cur.buf) {
			send()
		}
		if cur == nil {
			cur = newLineChunk()
		}
		cur.buf = append(cur.buf, b...)
		cur.ends = append(cur.ends, len(cur.buf))
		cur.nums = append(cur.nums, line)
	}
	if cur != nil {
		send()
	}
	close(jobs)
	wg.Wait()
	return chunks, line
}

// joinChunks concatenates the decoded chunks (n envelopes) with their line
// numbers, requiring consecutive positions of one source ledger to chain.
func joinChunks(chunks []*lineChunk, name string, n int) ([]events.Envelope, []int, error) {
	out := make([]events.Envelope, 0, n)
	lines := make([]int, 0, n)
	for _, c := range chunks {
		for i := range c.out {
			if k := len(out); k > 0 && out[k-1].Position+1 == c.out[i].Position && out[k-1].Hash != c.out[i].PrevHash {
				return nil, nil, fmt.Errorf("%s:%d: prev_hash does not link to the line before (position %d)", name, c.nums[i], c.out[i].Position)
			}
			out = append(out, c.out[i])
			lines = append(lines, c.nums[i])
		}
	}
	return out, lines, nil
}

var errTooLarge = errors.New("input too large")

// limitReader fails (rather than stopping quietly, as io.LimitReader does)
// when the input is longer than allowed, so a cut-off file is never taken
// for a whole one.
type limitReader struct {
	r    io.Reader
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, errTooLarge
	}
	return n, err
}
