// Command recallbench ranks the benchmark's queries with tree-ring's recall
// (bench.py drives it): it folds the memories into an in-memory recall
// index, as the ledger's projection does, and prints for each query a JSON
// array of the top memory ids. It is its own module: nothing of it is in
// the tree-ring binary.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/eventstest"
	"github.com/tree-ring/tree-ring/events/memory"
	"github.com/tree-ring/tree-ring/projections/recall"
)

// now is the benchmark's clock: memories are created age_minutes before it.
var now = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

type mem struct {
	ID, Summary, Details, Ref string
	Tags                      []string
	AgeMinutes                int `json:"age_minutes"`
}

type query struct {
	Keywords string
}

// memKV is a sorted in-memory key/value space (recall.KV).
type memKV struct {
	m    map[string][]byte
	keys []string // sorted; nil when stale
}

func (k *memKV) Get(key []byte) []byte { return k.m[string(key)] }
func (k *memKV) Put(key, v []byte) error {
	if _, ok := k.m[string(key)]; !ok {
		k.keys = nil
	}
	k.m[string(key)] = bytes.Clone(v)
	return nil
}
func (k *memKV) Delete(key []byte) error { delete(k.m, string(key)); k.keys = nil; return nil }
func (k *memKV) ForEach(prefix []byte, fn func(k, v []byte) error) error {
	if k.keys == nil {
		for key := range k.m {
			k.keys = append(k.keys, key)
		}
		sort.Strings(k.keys)
	}
	for i := sort.SearchStrings(k.keys, string(prefix)); i < len(k.keys) && bytes.HasPrefix([]byte(k.keys[i]), prefix); i++ {
		if err := fn([]byte(k.keys[i]), k.m[k.keys[i]]); err != nil {
			return err
		}
	}
	return nil
}

type bodies map[string][]byte

func (b bodies) Body(d string) []byte { return b[d] }

func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

func run() error {
	memPath := flag.String("memories", "", "memories, JSON lines")
	qPath := flag.String("queries", "", "queries, JSON lines")
	limit := flag.Int("limit", 10, "results per query")
	flag.Parse()
	mems, err := readLines[mem](*memPath)
	if err != nil {
		return err
	}
	qs, err := readLines[query](*qPath)
	if err != nil {
		return err
	}
	kv, bs := &memKV{m: map[string][]byte{}}, bodies{}
	f := &events.Factory{Now: func() time.Time { return now }, NewID: eventstest.IDs(0), Actor: "recallbench"}
	for _, m := range mems {
		r := memory.NewRecord(m.ID, m.Summary, "lesson", now.Add(-time.Duration(m.AgeMinutes)*time.Minute))
		r.Details, r.Tags, r.Source.Ref, r.Project = m.Details, m.Tags, m.Ref, memory.Str("bench")
		if err := r.Validate(); err != nil {
			return fmt.Errorf("%s: %w", m.ID, err)
		}
		p, body := r.Split(events.OriginImport, m.ID)
		bs[p.BodySHA256] = body
		e, err := f.New(events.MemoryStream(r.ID), events.TypeMemoryCaptured, &p)
		if err != nil {
			return err
		}
		if err := recall.Apply(kv, bs, &e); err != nil {
			return err
		}
	}
	w := bufio.NewWriter(os.Stdout)
	for _, q := range qs {
		res, err := recall.Recall(context.Background(), kv, bs, q.Keywords, recall.Filter{Project: "bench", Limit: *limit}, now)
		if err != nil {
			return err
		}
		ids := make([]string, len(res))
		for i := range res {
			ids[i] = res[i].Memory.ID
		}
		line, _ := json.Marshal(ids)
		fmt.Fprintf(w, "%s\n", line)
	}
	return w.Flush()
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "recallbench:", err)
		os.Exit(1)
	}
}
