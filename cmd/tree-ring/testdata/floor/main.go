// Command floor is the hook benchmark's floor program (docs/benchmarks.md):
// the least any implementation of the Harness Activation Protocol with a
// durable ledger and a durable receipt file must do for one SessionStart.
// It reads the stdin JSON, opens a bbolt file read-write (flock), reads
// about ten keys, makes one durable Update putting three small values,
// creates a 0600 file O_EXCL, writes 600 bytes, fsyncs it and its
// directory, and prints 1 KB of JSON. It is installed as
// .tree-ring/bin/tree-ring of a benchmark project and started by the very
// command line the hook uses; it ignores every argument but --root.
//
// It lives under testdata so that `go build ./...` and `go vet ./...` skip
// it; the benchmark builds it with `go build ./cmd/tree-ring/testdata/floor`.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(2)
	}
}

func run() error {
	root := ".tree-ring"
	for i, a := range os.Args {
		if a == "--root" && i+1 < len(os.Args) {
			root = os.Args[i+1]
		}
	}
	data, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	if err != nil {
		return err
	}
	var in struct {
		SessionID string `json:"session_id"`
		Cwd       string `json:"cwd"`
		Event     string `json:"hook_event_name"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	db, err := bbolt.Open(filepath.Join(root, "floor.db"), 0o600, &bbolt.Options{Timeout: 8 * time.Second, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return err
	}
	defer db.Close()
	var seq uint64
	err = db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("floor"))
		if err != nil {
			return err
		}
		for i := range 10 {
			_ = b.Get([]byte("key-" + strconv.Itoa(i)))
		}
		if seq, err = b.NextSequence(); err != nil {
			return err
		}
		for i := range 3 {
			if err := b.Put([]byte(fmt.Sprintf("put-%d-%d", seq, i)), []byte(strings.Repeat("v", 64))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "floor-receipts")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("receipt-%d-%d.json", os.Getpid(), seq)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(strings.Repeat("r", 600))); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	d.Close()
	out, _ := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName": "SessionStart", "additionalContext": strings.Repeat("c", 960),
	}})
	_, err = os.Stdout.Write(append(out, '\n'))
	return err
}
