package fsm

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tree-ring/tree-ring/events"
	"github.com/tree-ring/tree-ring/events/strictjson"
)

// ReceiptTTL is how long a receipt proves a state: the protocol's 30-day
// retention cutoff, computed from recorded_at (a receipt has no expiry field).
const ReceiptTTL = 30 * 24 * time.Hour

// Fresh reports whether a receipt recorded at rec proves a state at instant
// at: not in the future, and newer than the 30-day cutoff (at exactly 30
// days it no longer proves).
func Fresh(rec, at time.Time) bool {
	return !rec.After(at) && rec.After(at.Add(-ReceiptTTL))
}

// Step is one line of a harness timeline: an event of its stream, or a
// derived step (an expiry), which is not an event in the ledger.
type Step struct {
	Position uint64 // global ledger position; 0 for a derived step
	Version  uint64 // stream version; 0 for a derived step
	At       time.Time
	Type     string // event type; "" for a derived step
	// Transition is the name the event records (TransitionOf), Expire for a
	// derived step, "" for an event that moves nothing (preflight.started,
	// receipt.recorded, receipt.pruned).
	Transition string
	From, To   State
	Derived    bool

	stream string // for decoding raw
	schema int
	raw    []byte // the payload, decoded again by Reason
	note   string // reason of a derived step
}

// Reason is a short, privacy-safe explanation: review reason code, receipt
// id, worker fingerprint (shortened), query class, result count, diagnostic
// code. Never memory text or prompts (payloads never hold them).
func (s *Step) Reason() string {
	if s.Derived {
		return s.note
	}
	// The payload was validated strictly before replay (see Replayer.Apply);
	// for display it is decoded at the current schema version, without the
	// Check of events.DecodePayload.
	e := events.Envelope{Stream: s.stream, Type: s.Type, SchemaVersion: s.schema, Payload: s.raw}
	spec, ok := events.Lookup(s.Type)
	if !ok {
		return ""
	}
	raw, err := events.CurrentPayload(&e)
	if err != nil {
		return "payload does not decode: " + clean(err.Error())
	}
	p := spec.NewPayload()
	if err := strictjson.Unmarshal(raw, p); err != nil {
		return "payload does not decode: " + clean(err.Error())
	}
	return reason(p)
}

// Proof is what replay keeps of a receipt (events/receipt owns the
// receipt itself): the proof a preflight of this store left, from
// preflight.succeeded (to active or active-isolated) or a successful
// receipt.recorded. Both events of one preflight carry the same receipt
// id; the first one seen counts. receipt.adopted and harness.proof_revoked
// void every proof before them.
type Proof struct {
	ID       string
	Worker   string // worker_key_fingerprint
	At       time.Time
	State    State
	Position uint64
	dead     bool // pruned
}

// ExpiresAt is the first instant at which the proof no longer holds.
func (r Proof) ExpiresAt() time.Time { return r.At.Add(ReceiptTTL) }

// History is the replay of one harness stream up to an instant.
type History struct {
	Harness string
	Steps   []Step
	// State is the state at the instant: the last recorded `to`, then the
	// derived expiry if no receipt is fresh at the instant.
	State State
	// Recorded is the last recorded `to` (Initial when none).
	Recorded State
	// Events counts the stream's events replayed; Later counts those recorded
	// after the instant, which are not replayed (the history at an instant is
	// the longest prefix of the stream recorded at or before it).
	Events, Later int

	cur         State
	lastVersion uint64
	stopped     bool
	clock       time.Time // latest recorded_at replayed
	rs          []Proof   // live receipts since the harness last entered a proven state, oldest first
	rbase       int       // absolute index of rs[0]
	ridx        map[string]int
	newestAt    time.Time
	void        string // why the proofs were voided, when no moving event did it
}

// NotProofHere is the reason of the lapse receipt.adopted and
// harness.proof_revoked derive: what status says too.
const NotProofHere = "receipts from another store or machine are not proof; open a new session"

// Workers returns, per worker, its newest unpruned receipt since the harness
// last entered a proven state, sorted by worker fingerprint. A receipt is
// Fresh relative to the instant of the replay.
func (h *History) Workers() []Proof {
	by := map[string]Proof{}
	for _, r := range h.rs {
		if r.dead {
			continue
		}
		if old, ok := by[r.Worker]; !ok || !r.At.Before(old.At) {
			by[r.Worker] = r
		}
	}
	out := make([]Proof, 0, len(by))
	for _, r := range by {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Worker < out[j].Worker })
	return out
}

// NotProofHere reports whether the harness waits for proof because the
// receipts its stream holds were another writer's (receipt.adopted) or
// brought by an import (harness.proof_revoked), and none was recorded
// here since.
func (h *History) NotProofHere() bool {
	return h.void != "" && h.State == ConfiguredAwaitingProof
}

// ReplayErrorKind classifies a replay failure.
type ReplayErrorKind string

// Replay failure kinds.
const (
	// FromMismatch: the recorded `from` is not the state the history reached.
	FromMismatch ReplayErrorKind = "from-mismatch"
	// OutOfOrder: positions not increasing, or a stream version missing or
	// repeated (the history would have to be guessed).
	OutOfOrder ReplayErrorKind = "out-of-order"
	// BadEvent: the event itself is malformed (payload, state names, harness).
	BadEvent ReplayErrorKind = "bad-event"
)

// ReplayError names the exact event at which replay stopped. Replay never
// invents a state past it.
type ReplayError struct {
	Kind     ReplayErrorKind
	Harness  string // "" for an event outside the harness streams
	Position uint64
	Version  uint64
	Type     string
	Detail   string
}

func (e *ReplayError) Error() string {
	who := ""
	if e.Harness != "" {
		who = fmt.Sprintf(", harness %s version %d", e.Harness, e.Version)
	}
	return fmt.Sprintf("replay: position %d (%s%s): %s: %s; refusing to invent a state", e.Position, e.Type, who, e.Kind, e.Detail)
}

// Replayer folds envelopes, in ledger position order, into per-harness
// histories at one instant. Events of other streams are skipped (after the
// position-order check). A Replayer is not safe for concurrent use; it is
// used once: Apply every event, then Finish.
type Replayer struct {
	at       time.Time
	hs       map[string]*History
	lastPos  uint64
	finished bool
}

// NewReplayer returns a Replayer deriving expiry at instant at.
func NewReplayer(at time.Time) *Replayer {
	return &Replayer{at: at.UTC(), hs: map[string]*History{}}
}

// Apply folds one envelope. It checks, in order: positions strictly
// increase; a harness stream starts at version 1 and has no gap; the payload
// decodes and names the stream's harness; the recorded states are states;
// and the recorded `from` is the state the history reached at the event's
// recorded_at (or, if a receipt expired just before, the recorded state the
// writer may have seen without the clock). Then it applies the recorded `to`
// — never re-deciding against today's table. The first violation is a
// *ReplayError naming the position.
func (r *Replayer) Apply(e *events.Envelope) error {
	if r.finished {
		return fmt.Errorf("replay: Apply after Finish")
	}
	fail := func(kind ReplayErrorKind, harness, format string, a ...any) error {
		return &ReplayError{Kind: kind, Harness: harness, Position: e.Position, Version: e.Version, Type: e.Type, Detail: fmt.Sprintf(format, a...)}
	}
	if e.Position <= r.lastPos {
		return fail(OutOfOrder, "", "follows position %d", r.lastPos)
	}
	r.lastPos = e.Position
	id, ok := strings.CutPrefix(e.Stream, events.HarnessPrefix)
	if !ok {
		return nil
	}
	h := r.hs[id]
	if h == nil {
		h = &History{Harness: id, cur: Initial, Recorded: Initial, ridx: map[string]int{}}
		r.hs[id] = h
	}
	switch {
	case h.stopped:
		// The prefix ended: the rest is after the instant.
		h.Later++
		return nil
	case e.Version != h.lastVersion+1 && h.lastVersion == 0:
		return fail(OutOfOrder, id, "the stream starts at version %d: the events before it are missing", e.Version)
	case e.Version != h.lastVersion+1:
		return fail(OutOfOrder, id, "version %d follows version %d", e.Version, h.lastVersion)
	}
	h.lastVersion = e.Version
	if e.RecordedAt.After(r.at) {
		h.stopped = true
		h.Later++
		return nil
	}
	c, err := payloadCore(e)
	if err != nil {
		return fail(BadEvent, id, "%v", err)
	}
	if c.harness != id {
		return fail(BadEvent, id, "payload names harness %q on stream %s", c.harness, e.Stream)
	}
	at := e.RecordedAt
	// Check times never go back: a writer clock that stepped backwards must
	// not make an earlier receipt look "in the future".
	if at.After(h.clock) {
		h.clock = at
	}
	h.check(h.clock)
	// The payload is kept (copied: a ledger scan reuses its buffers) and
	// decoded again only if a reason is asked for.
	st := Step{Position: e.Position, Version: e.Version, At: at, Type: e.Type, From: h.cur, To: h.cur,
		stream: e.Stream, schema: e.SchemaVersion, raw: append([]byte(nil), e.Payload...)}
	if name, moves := transitionName(e.Type, State(c.to)); moves {
		from, to := State(c.from), State(c.to)
		if !Valid(from) {
			return fail(BadEvent, id, "recorded from %q is not a state", c.from)
		}
		if !Valid(to) {
			return fail(BadEvent, id, "recorded to %q is not a state", c.to)
		}
		if from != h.cur && from != h.Recorded {
			return fail(FromMismatch, id, "recorded from %s, but the state there is %s", from, h.cur)
		}
		st.Transition = name
		st.From, st.To = from, to
		h.cur, h.Recorded = to, to
		if !Proven(to) {
			// Leaving the proven states (drift, deactivation, a failure...)
			// invalidates every earlier receipt.
			h.clearReceipts()
		}
	}
	h.Steps = append(h.Steps, st)
	h.Events++
	switch e.Type {
	case events.TypePreflightSucceeded:
		if Proven(st.To) {
			h.addReceipt(Proof{ID: c.receipt, Worker: c.worker, At: at, State: st.To, Position: e.Position})
		}
	case events.TypeReceiptRecorded:
		if s := State(c.state); c.status == "success" && Proven(s) {
			h.addReceipt(Proof{ID: c.receipt, Worker: c.worker, At: at, State: s, Position: e.Position})
		}
	case events.TypeReceiptAdopted, events.TypeProofRevoked:
		// Neither an adopted receipt (another writer's file) nor one an
		// import brought is proof made here: replay keeps the recorded
		// transition and derives the lapse (docs/adoption.md).
		h.clearReceipts()
		h.void = NotProofHere
		h.check(h.clock)
	case events.TypeReceiptForeign:
		// A receipt file found at adoption: data, never proof.
		if len(h.rs) == 0 {
			h.void = NotProofHere
		}
	case events.TypeReceiptPruned:
		if i, ok := h.ridx[c.receipt]; ok {
			h.rs[i-h.rbase].dead = true
		}
		h.check(h.clock)
	}
	return nil
}

// Finish derives expiry at the instant and returns the histories sorted by
// harness id. The Replayer is done afterwards.
func (r *Replayer) Finish() []*History {
	r.finished = true
	out := make([]*History, 0, len(r.hs))
	for _, h := range r.hs {
		h.check(r.at)
		h.State = h.cur
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Harness < out[j].Harness })
	return out
}

// check derives expiry at instant t: a proven state with no fresh unpruned
// receipt becomes configured-awaiting-proof, as a derived step dated when
// the proof lapsed (the newest receipt's 30th day, or the last step if a
// prune removed the proof), never later than t.
func (h *History) check(t time.Time) {
	if !Proven(h.cur) {
		return
	}
	r, ok := h.newestLive(t)
	if ok && Fresh(r.At, t) {
		return
	}
	when := t
	note := "no receipt proves this state"
	if h.void != "" {
		note = h.void
	}
	if ok {
		when = r.ExpiresAt()
		note = fmt.Sprintf("receipt %s of %s is 30 days old", clean(r.ID), r.At.UTC().Format(time.RFC3339))
	}
	if n := len(h.Steps); n > 0 && when.Before(h.Steps[n-1].At) {
		when = h.Steps[n-1].At
	}
	if when.After(t) {
		when = t
	}
	h.Steps = append(h.Steps, Step{At: when, Transition: Expire, From: h.cur, To: ConfiguredAwaitingProof, Derived: true, note: note})
	h.cur = ConfiguredAwaitingProof
}

// newestLive is the newest unpruned receipt recorded at or before t.
func (h *History) newestLive(t time.Time) (Proof, bool) {
	var best Proof
	found := false
	for i := len(h.rs) - 1; i >= 0; i-- {
		r := h.rs[i]
		if r.dead || r.At.After(t) {
			continue
		}
		if !found || r.At.After(best.At) {
			best, found = r, true
		}
		if !r.At.Before(h.newestAt) {
			break // nothing older can be newer
		}
	}
	return best, found
}

func (h *History) addReceipt(r Proof) {
	if r.ID == "" {
		return
	}
	h.void = ""
	if _, dup := h.ridx[r.ID]; dup {
		return
	}
	if r.At.After(h.newestAt) {
		h.newestAt = r.At
	}
	// Receipts older than the newest by the TTL can never prove again.
	k := 0
	for k < len(h.rs) && h.rs[k].At.Before(h.newestAt.Add(-ReceiptTTL)) {
		delete(h.ridx, h.rs[k].ID)
		k++
	}
	if k > 0 {
		h.rs = h.rs[k:]
		h.rbase += k
	}
	h.ridx[r.ID] = h.rbase + len(h.rs)
	h.rs = append(h.rs, r)
}

func (h *History) clearReceipts() {
	if len(h.rs) == 0 && h.rbase == 0 {
		return
	}
	h.rs = nil
	h.rbase = 0
	clear(h.ridx)
	h.newestAt = time.Time{}
}

// Replay folds envs (in ledger position order) at instant at.
func Replay(envs []events.Envelope, at time.Time) ([]*History, error) {
	r := NewReplayer(at)
	for i := range envs {
		if err := r.Apply(&envs[i]); err != nil {
			return nil, err
		}
	}
	return r.Finish(), nil
}

// StateAt is the state of one harness at instant at, from the events of its
// stream (other streams are ignored). Writers use it as the current state
// before Decide, so a receipt's expiry is taken into account.
func StateAt(envs []events.Envelope, harness string, at time.Time) (State, error) {
	hs, err := Replay(envs, at)
	if err != nil {
		return "", err
	}
	for _, h := range hs {
		if h.Harness == harness {
			return h.State, nil
		}
	}
	return Initial, nil
}
