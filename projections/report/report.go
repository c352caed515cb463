// Package report renders the auditor's picture of a store, or of a fleet
// of replicas, as one self-contained HTML page: inline CSS and SVG, no
// script, no external URL, no web font (docs/report.md). It is pure: the
// command gathers plain values (replayed timelines, receipts, runs, the
// verification) and passes the instants; Store and Fleet return bytes.
//
// What reaches the page is what the values hold: ids, fingerprints, state
// names, event types, codes and counts. The values hold no path, memory
// text, prompt or secret, because the ledger's payloads hold none (the
// step reasons are fsm's privacy-safe ones).
package report

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Store is one store's report.
type Store struct {
	ID string // store id (a UUID)
	// Label is the store's fleet label (its store.labeled, or a fleet
	// file's), shown beside its id; "" when it has none.
	Label           string
	RootFingerprint string // project_root_fingerprint, never the path
	// At is the instant of the replay; Since, when not zero, the start of
	// the window the timelines, receipts and runs are drawn over (default:
	// the first event).
	At, Since    time.Time
	LastEventAt  time.Time // the newest event at or before At; zero when none
	Verification Verification
	Harnesses    []Harness
	Receipts     []Receipt
	Runs         []Run
	// Replica is a fleet replica's collector condition ("ok", or why the
	// collector stopped it); "" for a project's own store.
	Replica string
}

// Verification is the result of verifying the store (audit verify).
type Verification struct {
	OK          bool
	Failure     string // what failed, when not OK
	ChainHead   string
	Events      uint64
	Streams     int
	Projections []string // the projections that match a re-fold
	// ReceiptFiles is where the receipt index and the files disagree; ""
	// when they agree or were not checked (a replica has no files).
	ReceiptFiles string
}

// Harness is one harness's replayed timeline.
type Harness struct {
	ID, Name string
	State    string // at At
	Next     string // the next step for State
	// Events counts the stream's events replayed, Later those recorded
	// after At.
	Events, Later int
	Steps         []Step
}

// Step is one event (or derived expiry) of a harness timeline.
type Step struct {
	Position   uint64 // 0 for a derived step
	At         time.Time
	Type       string // "" for a derived step
	Transition string // "" when the event moves nothing
	From, To   string
	Derived    bool
	Reason     string // fsm's privacy-safe reason
}

// Receipt is one recorded receipt.
type Receipt struct {
	Harness, Worker string // worker: the worker key fingerprint
	At              time.Time
	QueryClass      string
	Results         int
	Status          string
}

// Run is one run record.
type Run struct {
	Command, Harness, Status, Stage, Diagnostic string
	Started                                     time.Time
}

// Fleet is the report across a collector's replicas.
type Fleet struct {
	At     time.Time
	Stores []Store
}

// StorePage renders one store's report, generated at instant generated.
func StorePage(s Store, generated time.Time) ([]byte, error) {
	v := pageView{Title: "tree-ring audit report", Generated: stamp(generated), At: stamp(s.At),
		Stores: []storeView{viewStore(s, "")}}
	return render(v)
}

// FleetPage renders the report across replicas, generated at instant
// generated: the matrix of stores × harnesses at f.At, then each store's
// section.
func FleetPage(f Fleet, generated time.Time) ([]byte, error) {
	v := pageView{Title: "tree-ring fleet report", Generated: stamp(generated), At: stamp(f.At), Fleet: true}
	// Sections follow the matrix: store id order.
	f.Stores = slices.Clone(f.Stores)
	slices.SortStableFunc(f.Stores, func(a, b Store) int { return strings.Compare(a.ID, b.ID) })
	for _, s := range f.Stores {
		v.Stores = append(v.Stores, viewStore(s, "store-"+s.ID+"-"))
	}
	v.Matrix = matrixOf(f)
	return render(v)
}

func render(v pageView) ([]byte, error) {
	v.Legend = states()
	escapeAll(reflect.ValueOf(&v).Elem())
	var b bytes.Buffer
	if err := page().Execute(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
