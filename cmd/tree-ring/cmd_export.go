package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	"github.com/tree-ring/tree-ring/bolt"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/projections/recall"
)

type exportOptions struct {
	Output                              string
	IncludeSensitive, IncludeSuperseded bool
}

func (o *exportOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Output, "output", "", "write to this new file (0600, never overwritten) instead of stdout")
	fs.BoolVar(&o.IncludeSensitive, "include-sensitive", false, "also export memories that are not of normal sensitivity (and redaction tombstones)")
	fs.BoolVar(&o.IncludeSuperseded, "include-superseded", false, "also export superseded memories")
}

func init() {
	register("export", "", "write memories as the published JSONL export (header line, then one memory_event per line)", runExport)
}

func runExport(ctx context.Context, g *Globals, o *exportOptions, args []string) error {
	if len(args) > 0 {
		return usagef("export takes no arguments (use --output FILE)")
	}
	st, err := g.OpenStore(true)
	if err != nil {
		return err
	}
	defer st.Close()
	var recs []memory.Record
	err = st.View(func(r *bolt.Reader) error {
		return recall.Each(r.Projection(recall.Name), r, func(rec memory.Record, s recall.State) error {
			if memory.Exported(&rec, s.Superseded, o.IncludeSensitive, o.IncludeSuperseded) {
				recs = append(recs, rec)
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	memory.SortForExport(recs)
	var out io.Writer = g.Stdout
	var file *os.File
	if o.Output != "" {
		// Create-only and private: an export may hold sensitive memories.
		file, err = os.OpenFile(o.Output, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // O_EXCL never follows a symlink
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer file.Close()
		out = file
	}
	w := bufio.NewWriterSize(out, 256<<10)
	header := memory.NewExportHeader(Version(), g.Now(), len(recs), o.IncludeSensitive)
	if err := writeLine(w, &header); err != nil {
		return err
	}
	for i := range recs {
		if err := writeLine(w, &memory.ExportLine{Type: memory.ExportMemoryType, Memory: &recs[i]}); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if file == nil {
		return nil
	}
	if err := file.Sync(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if g.JSON {
		return writeLine(g.Stdout, struct {
			OK                bool `json:"ok"`
			MemoryCount       int  `json:"memory_count"`
			SensitiveIncluded bool `json:"sensitive_included"`
		}{true, len(recs), o.IncludeSensitive})
	}
	_, err = fmt.Fprintf(g.Stdout, "Tree Ring Memory export complete: %d memories\n", len(recs))
	return err
}

func writeLine(w io.Writer, v any) error {
	line, err := memory.MarshalJSONLine(v)
	if err != nil {
		return err
	}
	_, err = w.Write(line)
	return err
}
