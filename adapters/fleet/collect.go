package fleet

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tree-ring/tree-ring/adapters/fleet/fleetsign"
	"github.com/tree-ring/tree-ring/events"
)

// Sink holds the replicas, one per store. cmd implements it with one bolt
// ledger per store under the collector's directory.
type Sink interface {
	// Stopped reports whether the store's replica was stopped by an earlier
	// run (a broken chain); its events are then not applied.
	Stopped(store string) (bool, error)
	// Replicate appends raws, in the order given, to the store's replica in
	// one commit, stopping at the first envelope it refuses.
	Replicate(ctx context.Context, store string, raws [][]byte) (Applied, error)
	// Stop records, durably, that the store's replica stops before position
	// and why; later runs see it through Stopped and `fleet verify` fails.
	Stop(store string, position uint64, reason string) error
	// Keys is what the store's replica records of its keys and its head
	// (zero before the replica exists).
	Keys(store string) (ReplicaKeys, error)
	// Signed records, after a commit and before its acknowledgements, the
	// signature of the replica's head event, so `fleet verify` can check
	// that everything the replica holds was signed by the store's key.
	Signed(store string, head SignedHead) error
	// Collected records, when a run has nothing left to deliver, what the
	// stream held for the store (its last message's position) at that
	// instant, so `fleet status` shows the lag and when it last knew; a
	// store without a replica is skipped.
	Collected(store string, streamHead uint64) error
}

// ReplicaKeys is a replica's record of its store's keys: the chain
// (store.key_recorded and each store.key_rotated, checked), the position
// of store.key_recorded, and the replica's head.
type ReplicaKeys struct {
	Chain    fleetsign.Chain
	Recorded uint64
	Head     uint64
}

// SignedHead is a replica's last event with the signature it arrived with.
type SignedHead struct {
	Position  uint64
	Hash      string
	Signature string
}

// Applied is what a Sink did with a batch. The error of Replicate is for
// the sink itself (a disk), which stops the collector.
type Applied struct {
	Appended, Duplicates int
	// Refused is set for the first envelope not applied (index
	// Appended+Duplicates); Gap tells that it lies past the replica's head
	// + 1 and may still be preceded by an event to come.
	Refused  error
	Gap      bool
	Head     uint64 // the replica's last position after the batch
	Position uint64 // of the refused envelope, 0 when unknown
}

// CollectOptions configure Collect.
type CollectOptions struct {
	Stream   string // default DefaultStream
	Durable  string // default DefaultDurable
	Replicas int    // of the stream, when Collect creates it
	// AckWait is how long the server waits for an acknowledgement before
	// redelivering (a collector that died between commit and ack).
	AckWait time.Duration
	// Follow keeps collecting until ctx is done; otherwise Collect returns
	// once the consumer has nothing pending.
	Follow bool
	// Timeout bounds a wait for the server without progress.
	Timeout time.Duration
	// Batch is how many messages one fetch (and one replica commit per
	// store) takes; default 5,000 (a commit costs two fsyncs).
	Batch int
	// OnStop, when set, is told at once when a store's replica stops.
	OnStop func(store string, position uint64, reason string)
	// Expected, when not nil, are the only stores collected and the keys
	// their events must be signed with (a fleet file, --expect); other
	// stores' messages are terminated and reported as unexpected. Without
	// it, a store without a replica trusts the key its first message
	// carries (pinned on first sight), which its replica's own
	// store.key_recorded must then confirm.
	Expected map[string]ed25519.PublicKey
	// OnPin, when set, is told when a store's key is pinned on first
	// sight (no Expected, no replica yet).
	OnPin func(store, key string)
	Log   Log
}

// StoreCount is what Collect did for one store.
type StoreCount struct {
	StoreID    string `json:"store_id"`
	Appended   int    `json:"appended"`
	Duplicates int    `json:"duplicates"`
	Head       uint64 `json:"head"`
	// StoppedAt is the position the replica stopped before, with Reason;
	// 0 while it is whole.
	StoppedAt uint64 `json:"stopped_at,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// CollectResult lists, in store id order, every store Collect saw.
type CollectResult struct {
	Stores []StoreCount `json:"stores"`
	// Ignored counts messages on the stream that are not a store's events
	// (another subject shape); they are terminated, never applied.
	Ignored int `json:"ignored"`
	// Unexpected are the stores whose messages were terminated without a
	// replica: not in Expected, or (without Expected) a store with no
	// replica yet whose first message is not signed.
	Unexpected []string `json:"unexpected"`
}

// heldMsg is a delivered, unacknowledged message of one store.
type heldMsg struct {
	pos uint64
	seq uint64 // stream sequence: a redelivery replaces the held delivery
	msg jetstream.Msg
}

type storeState struct {
	count   StoreCount
	held    []heldMsg // past a gap, waiting for the events before them
	stopped bool
	// chain holds the keys this store's messages must be signed with
	// (the key in force at the replica's head is its Current); pinned
	// tells its first key came from the first message and the replica
	// does not record it yet.
	chain  fleetsign.Chain
	pinned bool
}

// Collect is a durable pull consumer over every store's subject. Each
// fetched batch is split by store and handed to the sink in position order
// (together with messages held back earlier); a message is acknowledged
// only after the sink committed it (appended, or already there). A message
// past a gap is held, unacknowledged, until the events before it arrive
// (redelivered to this collector after AckWait when an earlier collector
// died holding them). A gap that nothing pending can fill, and any other
// refusal (an altered or reordered event), stops that store: the sink
// records it, its remaining messages are terminated, and other stores go on.
func Collect(ctx context.Context, nc *nats.Conn, sink Sink, o CollectOptions) (CollectResult, error) {
	if o.Stream == "" {
		o.Stream = DefaultStream
	}
	if o.Durable == "" {
		o.Durable = DefaultDurable
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Batch <= 0 {
		o.Batch = 5000
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return CollectResult{}, err
	}
	c := &collector{sink: sink, o: o, js: js, stores: map[string]*storeState{}, unexpected: map[string]bool{}}
	if err := c.consumer(ctx); err != nil {
		return CollectResult{}, err
	}
	err = c.run(ctx, nc)
	return c.result(), err
}

// consumer finds the stream and creates or binds the durable consumer,
// asking again through a leader election (each request has its own
// deadline) until Timeout passes without an answer.
func (c *collector) consumer(ctx context.Context) error {
	start, backoff := time.Now(), 50*time.Millisecond
	for {
		err := func() error {
			rctx, cancel := context.WithTimeout(ctx, requestTimeout(c.o.Timeout))
			defer cancel()
			st, err := ensureStream(rctx, c.js, c.o.Stream, c.o.Replicas, false)
			if err != nil {
				return err
			}
			c.st = st
			c.cons, err = st.CreateOrUpdateConsumer(rctx, jetstream.ConsumerConfig{
				Durable:       c.o.Durable,
				Description:   "tree-ring fleet collect (docs/fleet.md)",
				FilterSubject: SubjectWildcard,
				AckPolicy:     jetstream.AckExplicitPolicy,
				AckWait:       c.o.AckWait,
				DeliverPolicy: jetstream.DeliverAllPolicy,
				MaxAckPending: 20 * c.o.Batch,
			})
			return err
		}()
		var ce *StreamConfigError
		switch {
		case err == nil:
			c.o.Log.debug("collect: consumer bound", "stream", c.o.Stream, "durable", c.o.Durable)
			return nil
		case errors.As(err, &ce), ctx.Err() != nil, time.Since(start) > c.o.Timeout:
			return fmt.Errorf("consumer %s on %s (no answer for %s): %w", c.o.Durable, c.o.Stream, time.Since(start).Round(time.Second), err)
		}
		c.o.Log.debug("collect: binding the consumer again", "after", backoff.String(), "error", err.Error())
		if err := pause(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// pause waits d or until ctx is done: the backoff between two attempts.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type collector struct {
	sink       Sink
	o          CollectOptions
	js         jetstream.JetStream
	cons       jetstream.Consumer
	it         jetstream.MessagesContext
	renewed    time.Time // when it was last replaced
	st         jetstream.Stream
	recorded   time.Time // when the stream's heads were last recorded
	stores     map[string]*storeState
	ignored    int
	unexpected map[string]bool
}

// run consumes until done. progress is when a replica last moved; alive
// when the server last answered (a message, the consumer's info): only
// Timeout without an answer ends a run, so a leader election, or a quiet
// --follow, is waited out.
func (c *collector) run(ctx context.Context, nc *nats.Conn) error {
	var err error
	if c.it, err = c.messages(); err != nil {
		return err
	}
	defer func() { c.it.Stop() }()
	progress, alive := time.Now(), time.Now()
	c.renewed = progress
	wait := min(time.Second, c.o.Timeout)
	for {
		if err := ctx.Err(); err != nil {
			return c.ended(err)
		}
		msgs, err := c.next(c.it, wait)
		if len(msgs) > 0 {
			alive = time.Now()
			moved, err := c.apply(ctx, msgs)
			if err != nil {
				return err
			}
			if moved {
				progress = time.Now()
				continue
			}
			// Only redeliveries of messages held behind a gap: see
			// whether anything can still fill it.
		}
		if len(msgs) == 0 && err != nil && !errors.Is(err, nats.ErrTimeout) {
			if errors.Is(err, nats.ErrConnectionClosed) || time.Since(alive) > c.o.Timeout {
				return fmt.Errorf("consume %s (no answer for %s): %w", c.o.Durable, time.Since(alive).Round(time.Second), err)
			}
			if c.it, err = c.resume(ctx, c.it, err); err != nil {
				return err
			}
			continue
		}
		if finished, err := c.quiet(ctx, nc, progress, &alive); finished || err != nil {
			return err
		}
	}
}

// ended is run's answer to ctx ending: a --follow stops cleanly when
// cancelled.
func (c *collector) ended(err error) error {
	if c.o.Follow && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// quiet is run's step when no message moved a replica: it asks the
// consumer whether anything is left and reports whether the run is
// finished (nothing left, no --follow).
func (c *collector) quiet(ctx context.Context, nc *nats.Conn, progress time.Time, alive *time.Time) (bool, error) {
	done, err := c.drained(ctx, nc)
	if err != nil {
		if time.Since(*alive) > c.o.Timeout {
			return true, fmt.Errorf("%w (no answer for %s)", err, time.Since(*alive).Round(time.Second))
		}
		return false, nil
	}
	*alive = time.Now()
	if !done && time.Since(progress) > requestTimeout(c.o.Timeout) && time.Since(c.renewed) > requestTimeout(c.o.Timeout) {
		// Pending, yet nothing arrives: the pull requests were lost
		// (with a consumer leader); a new iterator makes new ones.
		if err := c.renew(); err != nil {
			return true, err
		}
	}
	if done && progress.After(c.recorded) {
		if err := c.recordHeads(ctx); err != nil {
			return true, err
		}
	}
	switch {
	case c.o.Follow:
		return false, nil
	case done:
		return true, nil
	case time.Since(progress) > max(c.o.Timeout, 2*c.o.AckWait):
		return true, fmt.Errorf("consumer %s: messages are still pending after %s without progress (delivered to another collector?); a rerun goes on", c.o.Durable, time.Since(progress).Round(time.Second))
	}
	return false, nil
}

// recordHeads gives the sink, for every store's subject in the stream,
// the position of its last message, once the consumer has delivered
// everything (so the replica's head is as far as the stream lets it go).
// A --follow records again only after a replica moved.
func (c *collector) recordHeads(ctx context.Context) error {
	c.recorded = time.Now()
	heads, err := subjectHeads(ctx, c.st, c.o.Timeout)
	if err != nil {
		// The lag of the stores not read stays as last known; the
		// replicas are fine.
		c.o.Log.debug("collect: the stream's heads", "error", err.Error())
	}
	for id, pos := range heads {
		if err := c.sink.Collected(id, pos); err != nil {
			return fmt.Errorf("store %s: %w", id, err)
		}
	}
	return nil
}

// renew replaces the iterator; messages it had buffered are redelivered
// after AckWait.
func (c *collector) renew() error {
	c.o.Log.debug("collect: messages pending but none arriving; new pull requests", "durable", c.o.Durable)
	c.it.Stop()
	c.renewed = time.Now()
	it, err := c.messages()
	if err != nil {
		return err
	}
	c.it = it
	return nil
}

// messages starts the iterator. It keeps pull requests outstanding, so
// the next messages arrive while the sink commits the current batch; each
// expires within a quarter of Timeout, so a request lost with a consumer
// leader is made again well before Timeout (the client's default, 30 s,
// outlived the default --timeout).
func (c *collector) messages() (jetstream.MessagesContext, error) {
	expiry := max(time.Second, min(c.o.Timeout/4, 30*time.Second))
	it, err := c.cons.Messages(jetstream.PullMaxMessages(2*c.o.Batch), jetstream.PullExpiry(expiry))
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", c.o.Durable, err)
	}
	return it, nil
}

// resume follows an iterator error: a closed iterator (the consumer was
// lost with its leader) is replaced, after binding the consumer again; on
// other errors (a reconnect) it waits a moment and goes on with it.
func (c *collector) resume(ctx context.Context, it jetstream.MessagesContext, cause error) (jetstream.MessagesContext, error) {
	c.o.Log.debug("collect: consume", "durable", c.o.Durable, "error", cause.Error())
	if !errors.Is(cause, jetstream.ErrMsgIteratorClosed) && !errors.Is(cause, jetstream.ErrConsumerDeleted) {
		return it, pause(ctx, 100*time.Millisecond)
	}
	it.Stop()
	if err := c.consumer(ctx); err != nil {
		return it, err
	}
	next, err := c.messages()
	if err != nil {
		return it, err
	}
	return next, nil
}

// next waits up to wait for a message, then takes what else has arrived,
// up to a batch.
func (c *collector) next(it jetstream.MessagesContext, wait time.Duration) ([]jetstream.Msg, error) {
	m, err := it.Next(jetstream.NextMaxWait(wait))
	if err != nil {
		return nil, err
	}
	msgs := []jetstream.Msg{m}
	for len(msgs) < c.o.Batch {
		m, err := it.Next(jetstream.NextMaxWait(20 * time.Millisecond))
		if err != nil {
			break
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// drained reports whether nothing is left to deliver: no message pending
// and every unacknowledged one held here. Held messages then sit behind a
// gap nothing can fill, and their stores stop.
func (c *collector) drained(ctx context.Context, nc *nats.Conn) (bool, error) {
	if err := nc.FlushTimeout(requestTimeout(c.o.Timeout)); err != nil {
		return false, fmt.Errorf("flush acknowledgements: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout(c.o.Timeout))
	defer cancel()
	info, err := c.cons.Info(rctx)
	if err != nil {
		return false, fmt.Errorf("consumer %s: %w", c.o.Durable, err)
	}
	held := 0
	for _, s := range c.stores {
		held += len(s.held)
	}
	if info.NumPending != 0 || info.NumAckPending > held {
		return false, nil
	}
	for _, id := range c.storeIDs() {
		s := c.stores[id]
		if len(s.held) == 0 {
			continue
		}
		missing := s.count.Head + 1
		reason := fmt.Sprintf("gap: position %d is not in the stream (the next it holds is %d)", missing, s.held[0].pos)
		if err := c.stop(id, s, missing, reason); err != nil {
			return false, err
		}
	}
	return true, nil
}

// apply splits msgs by store, in order of first appearance, and reports
// whether any replica moved (an event applied, a duplicate acknowledged, a
// store stopped).
func (c *collector) apply(ctx context.Context, msgs []jetstream.Msg) (bool, error) {
	var order []string
	moved := false
	byStore := map[string][]heldMsg{}
	for _, m := range msgs {
		id, ok := StoreOfSubject(m.Subject())
		if !ok {
			c.ignored++
			moved = true
			_ = m.Term()
			continue
		}
		if c.unexpected[id] {
			moved = true
			_ = m.Term()
			continue
		}
		if _, seen := byStore[id]; !seen {
			order = append(order, id)
		}
		pos, _ := strconv.ParseUint(m.Headers().Get(HeaderPosition), 10, 64)
		var seq uint64
		if md, err := m.Metadata(); err == nil {
			seq = md.Sequence.Stream
		}
		byStore[id] = append(byStore[id], heldMsg{pos: pos, seq: seq, msg: m})
	}
	for _, id := range order {
		m, err := c.applyStore(ctx, id, byStore[id])
		if err != nil {
			return false, err
		}
		moved = moved || m
	}
	return moved, nil
}

// applyStore hands one store's messages, with those held for it, to the
// sink in position order, acknowledges what the sink committed and holds or
// terminates the rest. Only messages signed by the store's key reach the
// sink; the first that is not stops the store at its position. It reports
// whether the replica moved.
func (c *collector) applyStore(ctx context.Context, id string, in []heldMsg) (bool, error) {
	s, err := c.open(id, in)
	if s == nil {
		return true, err
	}
	cand, fresh := mergeHeld(s.held, in)
	s.held = nil
	// Position order; a message without a valid position header sorts
	// first and is refused by the sink as what its body is.
	slices.SortStableFunc(cand, func(a, b heldMsg) int { return cmp.Compare(a.pos, b.pos) })
	good, rot, badPos, badWhy := c.signedPrefix(id, s.chain, s.count.Head, cand)
	a, err := c.replicate(ctx, id, s, cand[:good])
	if err != nil {
		return false, err
	}
	k := a.Appended + a.Duplicates
	for _, r := range rot {
		if r.index < k {
			s.chain.Keys, s.chain.Rotations = append(s.chain.Keys, r.key), append(s.chain.Rotations, r.pos)
		}
	}
	rest := cand[k:]
	switch {
	case a.Refused == nil && k < len(cand):
		// Everything before it applied: the unsigned or wrongly signed
		// message is next.
		s.held = rest
		return true, c.stop(id, s, badPos, badWhy)
	case a.Refused == nil:
	case a.Gap:
		s.held = rest
		return k > 0 || fresh, nil
	default:
		pos := a.Position
		if pos == 0 && len(rest) > 0 {
			pos = rest[0].pos
		}
		s.held = rest
		return true, c.stop(id, s, pos, a.Refused.Error())
	}
	if s.pinned && a.Appended > 0 {
		return true, c.confirmPinned(id, s)
	}
	return true, nil
}

// replicate hands signed messages to the sink, counts what it did,
// records the signature of the new head and acknowledges what the sink
// committed, in that order (an acknowledged event is always signed in its
// replica).
func (c *collector) replicate(ctx context.Context, id string, s *storeState, signed []heldMsg) (Applied, error) {
	a := Applied{Head: s.count.Head}
	if len(signed) > 0 {
		raws := make([][]byte, len(signed))
		for i, h := range signed {
			raws[i] = h.msg.Data()
		}
		var err error
		if a, err = c.sink.Replicate(ctx, id, raws); err != nil {
			return a, fmt.Errorf("store %s: %w", id, err)
		}
	}
	s.count.Appended += a.Appended
	s.count.Duplicates += a.Duplicates
	s.count.Head = a.Head
	if len(signed) > 0 {
		c.o.Log.debug("collect: replica commit", "store", id, "appended", a.Appended, "duplicates", a.Duplicates, "head", a.Head)
	}
	committed := signed[:a.Appended+a.Duplicates]
	if err := c.recordSigned(id, committed, a.Head); err != nil {
		return a, err
	}
	for _, h := range committed {
		if err := h.msg.Ack(); err != nil {
			return a, fmt.Errorf("store %s: acknowledge position %d: %w", id, h.pos, err)
		}
	}
	return a, nil
}

// open returns the store's state, nil when in was dealt with here (the
// store is stopped or unexpected: its messages are terminated).
func (c *collector) open(id string, in []heldMsg) (*storeState, error) {
	s := c.stores[id]
	if s == nil {
		var err error
		if s, err = c.firstSight(id, in); err != nil || s == nil {
			return nil, err
		}
	}
	if s.stopped {
		for _, h := range in {
			_ = h.msg.Term()
		}
		return nil, nil
	}
	return s, nil
}

// firstSight sets up a store seen for the first time in this run and
// decides the key it must be signed with. It returns nil (the messages
// terminated, the store reported unexpected) for a store outside
// Expected, or without Expected for a store with no replica whose first
// message carries no usable key.
func (c *collector) firstSight(id string, in []heldMsg) (*storeState, error) {
	stopped, err := c.sink.Stopped(id)
	if err != nil {
		return nil, err
	}
	s := &storeState{count: StoreCount{StoreID: id}, stopped: stopped}
	rk, err := c.sink.Keys(id)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", id, err)
	}
	s.count.Head = rk.Head
	recorded := rk.Chain.Known()
	switch want, listed := c.o.Expected[id]; {
	case c.o.Expected != nil && !listed:
	case c.o.Expected != nil:
		s.chain = rk.Chain
		if !recorded {
			s.chain = fleetsign.Chain{Keys: []ed25519.PublicKey{want}}
		}
		c.stores[id] = s
		if recorded && !rk.Chain.First().Equal(want) && !s.stopped {
			return s, c.stop(id, s, rk.Recorded, "the replica records another store key than the fleet file (--expect)")
		}
		return s, nil
	case recorded:
		s.chain = rk.Chain
		c.stores[id] = s
		return s, nil
	case stopped:
		c.stores[id] = s
		return s, nil
	default:
		first := slices.MinFunc(in, func(a, b heldMsg) int { return cmp.Compare(a.pos, b.pos) })
		if k, err := fleetsign.DecodeKey(first.msg.Headers().Get(HeaderKey)); err == nil {
			s.chain, s.pinned = fleetsign.Chain{Keys: []ed25519.PublicKey{k}}, true
			c.stores[id] = s
			if c.o.OnPin != nil {
				c.o.OnPin(id, fleetsign.EncodeKey(k))
			}
			return s, nil
		}
	}
	c.unexpected[id] = true
	for _, h := range in {
		_ = h.msg.Term()
	}
	return nil, nil
}

// signedPrefix returns how many of cand, from the first, the store's keys
// vouch for, the key rotations among them (applied to the store's chain
// once the sink committed them), and for the first message they do not
// vouch for, its position and why. Every message carries its event's
// signature, but one verification stands for a run: where the stated
// links hold (each prev_hash is the hash stated before it), a valid
// signature of the run's last event vouches for every stated hash before
// it, and the sink checks that each body hashes to its stated hash.
// Validity is monotone along such a run (an event that is not the host's
// changes every hash after it, none of which the host signed), so a
// failed run is searched for its first bad event in log n verifications.
// A key rotation ends its run: it is signed by the key in force, checked
// against it (fleetsign.Chain.Rotate), and the runs after it are checked
// against its new key. Messages at or below head are redeliveries the
// sink compares byte for byte with what the replica holds, so they need
// no key. An envelope that does not decode ends the runs; the sink
// refuses it as what it is.
func (c *collector) signedPrefix(id string, chain fleetsign.Chain, head uint64, cand []heldMsg) (int, []rotation, uint64, string) {
	refs := make([]events.Envelope, 0, len(cand))
	for _, h := range cand {
		ref, err := events.DecodeStoredRef(h.msg.Data())
		if err != nil {
			break
		}
		refs = append(refs, ref)
	}
	chain.Keys = slices.Clip(chain.Keys)
	chain.Rotations = slices.Clip(chain.Rotations)
	var rots []rotation
	i := 0
	for i < len(refs) && refs[i].Position <= head {
		i++
	}
	for i < len(refs) {
		key := chain.Current()
		verify := func(i int) error {
			return fleetsign.Verify(key, id, refs[i].Position, refs[i].Hash, cand[i].msg.Headers().Get(HeaderSignature))
		}
		j := i + 1
		for j < len(refs) && refs[j].PrevHash == refs[j-1].Hash && refs[j-1].Type != events.TypeStoreKeyRotated {
			j++
		}
		if verify(j-1) != nil {
			lo, hi := i, j-1 // hi does not verify; find the first that does not
			for lo < hi {
				if mid := (lo + hi) / 2; verify(mid) == nil {
					lo = mid + 1
				} else {
					hi = mid
				}
			}
			return lo, rots, refs[lo].Position, "refused: " + verify(lo).Error()
		}
		if last := j - 1; refs[last].Type == events.TypeStoreKeyRotated {
			if err := rotate(&chain, id, cand[last].msg.Data()); err != nil {
				return last, rots, refs[last].Position, "refused: " + err.Error()
			}
			rots = append(rots, rotation{index: last, pos: refs[last].Position, key: chain.Current()})
		}
		i = j
	}
	return len(cand), rots, 0, ""
}

// rotation is a key rotation signedPrefix accepted at cand[index].
type rotation struct {
	index int
	pos   uint64
	key   ed25519.PublicKey
}

// rotate checks the store.key_rotated raw against the chain and moves it
// to the new key.
func rotate(chain *fleetsign.Chain, id string, raw []byte) error {
	e, err := events.DecodeStored(raw)
	if err != nil {
		return err
	}
	p, err := events.Payload[events.StoreKeyRotated](&e)
	if err != nil {
		return err
	}
	return chain.Rotate(id, e.Position, p)
}

// recordSigned gives the sink the signature of the replica's head event
// when this batch committed it.
func (c *collector) recordSigned(id string, committed []heldMsg, head uint64) error {
	for i := len(committed) - 1; i >= 0; i-- {
		h := committed[i]
		ref, err := events.DecodeStoredRef(h.msg.Data())
		if err != nil || ref.Position != head {
			continue
		}
		if err := c.sink.Signed(id, SignedHead{Position: head, Hash: ref.Hash, Signature: h.msg.Headers().Get(HeaderSignature)}); err != nil {
			return fmt.Errorf("store %s: %w", id, err)
		}
		return nil
	}
	return nil
}

// confirmPinned checks a key pinned on first sight against the first key
// the replica now records: a first message that carried another key than
// the store's own history stops the store.
func (c *collector) confirmPinned(id string, s *storeState) error {
	rk, err := c.sink.Keys(id)
	switch {
	case err != nil:
		return fmt.Errorf("store %s: %w", id, err)
	case !rk.Chain.Known():
		return nil
	case !rk.Chain.First().Equal(s.chain.First()):
		return c.stop(id, s, rk.Recorded, "the store key recorded here is not the key its messages were signed with")
	}
	s.pinned = false
	return nil
}

// mergeHeld adds newly delivered messages to the held ones; a redelivery
// of a held message replaces it (one entry per stream sequence). fresh
// tells whether any message was new.
func mergeHeld(held, in []heldMsg) ([]heldMsg, bool) {
	if len(held) == 0 {
		return in, len(in) > 0
	}
	idx := make(map[uint64]int, len(held))
	for i, h := range held {
		idx[h.seq] = i
	}
	fresh := false
	for _, h := range in {
		if i, ok := idx[h.seq]; ok && h.seq != 0 {
			held[i] = h
			continue
		}
		fresh = true
		held = append(held, h)
	}
	return held, fresh
}

// stop records that a store's replica stops at position and terminates
// the messages held for it.
func (c *collector) stop(id string, s *storeState, pos uint64, reason string) error {
	if err := c.sink.Stop(id, pos, reason); err != nil {
		return fmt.Errorf("store %s: %w", id, err)
	}
	s.stopped = true
	s.count.StoppedAt, s.count.Reason = pos, reason
	for _, h := range s.held {
		_ = h.msg.Term()
	}
	s.held = nil
	if c.o.OnStop != nil {
		c.o.OnStop(id, pos, reason)
	}
	return nil
}

func (c *collector) storeIDs() []string {
	ids := make([]string, 0, len(c.stores))
	for id := range c.stores {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (c *collector) result() CollectResult {
	res := CollectResult{Stores: []StoreCount{}, Ignored: c.ignored, Unexpected: []string{}}
	for id := range c.unexpected {
		res.Unexpected = append(res.Unexpected, id)
	}
	slices.Sort(res.Unexpected)
	for _, id := range c.storeIDs() {
		res.Stores = append(res.Stores, c.stores[id].count)
	}
	return res
}
