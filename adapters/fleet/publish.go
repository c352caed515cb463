package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/tree-ring/tree-ring/events"
)

// Source is one store's ledger as Publish sees it: its stored envelopes,
// exactly as in the ledger's events bucket. Nothing else (memory bodies,
// projections) is reachable through it.
type Source interface {
	// Head is the ledger's last position.
	Head() (uint64, error)
	// Read returns copies of the stored bytes of at most max events after
	// position after, in position order (positions after+1, after+2, ...).
	Read(ctx context.Context, after uint64, max int) ([][]byte, error)
	// Sign returns the signature of the event at position with hash by
	// the store's key in force there (fleetsign.Sign) and that public key
	// (fleetsign.EncodeKey): every message is signed, and the private keys
	// stay in the source. An error (no such key on this host) stops the
	// publish.
	Sign(position uint64, hash string) (signature, publicKey string, err error)
}

// PublishOptions configure Publish.
type PublishOptions struct {
	Stream   string // default DefaultStream
	StoreID  string
	Replicas int // replicas of the stream when Publish creates it
	// Timeout is how long Publish waits for the server without progress
	// (one batch acknowledged) before it gives up; a rerun resumes.
	Timeout time.Duration
	// Batch is the number of events per atomic batch (at most 1,000).
	Batch int
	Log   Log
}

// PublishResult says what Publish did.
type PublishResult struct {
	StoreID string `json:"store_id"`
	Subject string `json:"subject"`
	// Held is the position the stream held for the store before this run.
	Held uint64 `json:"held_before"`
	// Published is how many events this run added to the stream.
	Published uint64 `json:"published"`
	// Head is the ledger's last position, which the stream now holds.
	Head uint64 `json:"head"`
	// Retries counts batches sent again after a timeout, a reconnect or a
	// leader change.
	Retries int `json:"retries"`
}

// StreamMismatchError is a stream whose copy of the store disagrees with
// the ledger: altered in the stream, or the stream holds more than the
// ledger (another copy of this store published). Publishing stops.
type StreamMismatchError struct {
	StoreID  string
	Position uint64
	Reason   string
}

func (e *StreamMismatchError) Error() string {
	return fmt.Sprintf("store %s, position %d: %s", e.StoreID, e.Position, e.Reason)
}

// Publish sends every event of src that the stream does not hold yet, in
// order, to subject tree-ring.events.<store_id>: the stored bytes as the
// message body, Nats-Msg-Id = the event id, and the position and hash as
// headers. It keeps nothing on the host: before sending, it asks the stream
// for the last message of the subject, checks that it is byte for byte the
// ledger's event at that position, and continues after it.
//
// Events go in atomic batches whose first message expects the subject's
// last stream sequence, so the stream never holds a gap or a reordering:
// a batch lands whole after the previous one, or not at all (a timeout, a
// reconnect, a leader change, a second publisher of the same store). Then
// Publish asks again and resends from what the stream holds. The duplicate
// window (Nats-Msg-Id) is a second guard against resending.
func Publish(ctx context.Context, nc *nats.Conn, src Source, o PublishOptions) (PublishResult, error) {
	if o.Stream == "" {
		o.Stream = DefaultStream
	}
	if o.Batch <= 0 || o.Batch > maxBatch {
		o.Batch = maxBatch
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if !ValidStoreID(o.StoreID) {
		return PublishResult{}, fmt.Errorf("store id %q is not a store id", o.StoreID)
	}
	p := &publisher{src: src, nc: nc, o: o, subj: Subject(o.StoreID), first: true}
	p.res = PublishResult{StoreID: o.StoreID, Subject: p.subj}
	js, err := jetstream.New(nc)
	if err != nil {
		return p.res, err
	}
	p.js = js
	progress := time.Now()
	backoff := 50 * time.Millisecond
	for {
		sent := p.res.Published
		err := p.round(ctx)
		if p.res.Published > sent {
			progress, backoff = time.Now(), 50*time.Millisecond
		}
		var perm permanent
		var mm *StreamMismatchError
		var ce *StreamConfigError
		switch {
		case err == nil:
			return p.res, nil
		case errors.As(err, &perm):
			return p.res, perm.err
		case errors.As(err, &mm), errors.As(err, &ce), ctx.Err() != nil:
			return p.res, err
		case time.Since(progress) > o.Timeout:
			return p.res, gaveUp(p.subj, o.Timeout, p.known, p.res, err)
		}
		p.res.Retries++
		o.Log.debug("publish: asking again", "subject", p.subj, "after", backoff.String(), "error", err.Error())
		if err := pause(ctx, backoff); err != nil {
			return p.res, err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// publisher is one Publish call's state across its rounds.
type publisher struct {
	src  Source
	nc   *nats.Conn
	js   jetstream.JetStream
	st   jetstream.Stream
	o    PublishOptions
	subj string
	res  PublishResult
	// first: res.Held is not set yet; known: the stream has answered what
	// it holds at least once.
	first, known bool
}

// round asks the stream what it holds and sends the rest, batch after
// batch, until the stream holds the ledger's head or a request fails.
func (p *publisher) round(ctx context.Context) error {
	if p.st == nil {
		// One request's deadline, not the run's: a request lost in a
		// leader election is asked again.
		rctx, cancel := context.WithTimeout(ctx, requestTimeout(p.o.Timeout))
		defer cancel()
		s, err := ensureStream(rctx, p.js, p.o.Stream, p.o.Replicas, true)
		if err != nil {
			return err
		}
		p.st = s
	}
	held, seq, err := streamHead(ctx, p.st, p.subj, p.src, p.o)
	if err != nil {
		return err
	}
	p.known = true
	if p.first {
		p.res.Held, p.first = held, false
	}
	head, err := p.src.Head()
	if err != nil {
		return permanent{err}
	}
	p.res.Head = head
	p.o.Log.debug("publish: the stream's head", "subject", p.subj, "stream_holds", held, "stream_sequence", seq, "ledger_head", head)
	if held > head {
		return &StreamMismatchError{StoreID: p.o.StoreID, Position: held, Reason: fmt.Sprintf("the stream holds position %d, this ledger ends at %d (another copy of this store published)", held, head)}
	}
	for held < head {
		raws, err := p.src.Read(ctx, held, p.o.Batch)
		if err != nil {
			return permanent{err}
		}
		if len(raws) == 0 {
			return permanent{fmt.Errorf("ledger has no event after position %d, its head is %d", held, head)}
		}
		last := seq
		seq, err = sendBatch(ctx, p.nc, p.src, p.subj, raws, held, last, p.o)
		var api *jetstream.APIError
		if errors.As(err, &api) && api.ErrorCode == jetstream.ErrorCode(errCodeBatchDuplicate) {
			// Some of these events are in the stream after a message that
			// is not the last position (a copy or reordering published by
			// someone else): send them one by one, and the server says
			// which it holds.
			p.o.Log.debug("publish: the stream holds some of the batch; one message at a time", "subject", p.subj, "first", held+1, "last", held+uint64(len(raws)))
			seq, err = p.sendSingles(ctx, raws, held, last)
		}
		if err != nil {
			return err
		}
		p.o.Log.debug("publish: batch committed", "subject", p.subj, "first", held+1, "last", held+uint64(len(raws)), "stream_sequence", seq)
		held += uint64(len(raws))
		p.res.Published += uint64(len(raws))
	}
	return nil
}

// errCodeBatchDuplicate is the server's "atomic publish batch contains
// duplicate message id".
const errCodeBatchDuplicate = 10201

// sendSingles publishes raws (positions after+1...) one message at a
// time, each expecting the subject's last sequence. One the stream already
// holds (its Nats-Msg-Id is in the duplicate window) is acknowledged as a
// duplicate with its sequence: that message must be the ledger's bytes.
func (p *publisher) sendSingles(ctx context.Context, raws [][]byte, after, lastSeq uint64) (uint64, error) {
	for i, raw := range raws {
		pos := after + uint64(i) + 1
		m, err := message(p.src, p.subj, raw, pos)
		if err != nil {
			return 0, err
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout(p.o.Timeout))
		ack, err := p.js.PublishMsg(rctx, m, jetstream.WithExpectLastSequencePerSubject(lastSeq))
		if err == nil && ack.Duplicate {
			err = p.sameAt(rctx, ack.Sequence, raw, pos)
		}
		cancel()
		if err != nil {
			return 0, fmt.Errorf("publish position %d: %w", pos, err)
		}
		if !ack.Duplicate {
			lastSeq = ack.Sequence
		}
	}
	return lastSeq, nil
}

// sameAt checks that the stream's message at seq is raw, the ledger's
// event at pos.
func (p *publisher) sameAt(ctx context.Context, seq uint64, raw []byte, pos uint64) error {
	m, err := p.st.GetMsg(ctx, seq)
	if err != nil {
		return err
	}
	if !bytes.Equal(m.Data, raw) {
		return &StreamMismatchError{StoreID: p.o.StoreID, Position: pos, Reason: fmt.Sprintf("the stream holds another message with this event's id (sequence %d)", seq)}
	}
	return nil
}

// gaveUp is Publish's error after timeout without progress, saying what
// the stream held when it last answered.
func gaveUp(subj string, timeout time.Duration, known bool, res PublishResult, err error) error {
	if !known {
		return fmt.Errorf("publish %s: no answer from the stream for %s (a leader election that did not end, or no server; a rerun resumes where the stream is): %w", subj, timeout, err)
	}
	return fmt.Errorf("publish %s: no progress for %s (the stream held position %d when it last answered; a rerun resumes there): %w", subj, timeout, res.Held+res.Published, err)
}

// requestTimeout bounds one request: a fifth of the time allowed without
// progress (at least 2s), so a request lost in a server restart or a leader
// change is retried several times before Publish gives up.
func requestTimeout(noProgress time.Duration) time.Duration {
	return min(noProgress, max(noProgress/5, 2*time.Second))
}

// permanent marks an error that retrying cannot fix (the local ledger).
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }

// streamHead returns the last position the stream holds for the subject
// (0 for none) and that message's stream sequence, after checking that it
// is exactly the ledger's event at that position.
func streamHead(ctx context.Context, st jetstream.Stream, subj string, src Source, o PublishOptions) (uint64, uint64, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout(o.Timeout))
	defer cancel()
	m, err := st.GetLastMsgForSubject(rctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("ask the stream for the last event of %s: %w", subj, err)
	}
	pos, err := strconv.ParseUint(m.Header.Get(HeaderPosition), 10, 64)
	if err != nil || pos == 0 {
		return 0, 0, &StreamMismatchError{StoreID: o.StoreID, Reason: fmt.Sprintf("the stream's last message for the store (sequence %d) has no valid %s header", m.Sequence, HeaderPosition)}
	}
	raws, err := src.Read(ctx, pos-1, 1)
	if err != nil {
		return 0, 0, permanent{err}
	}
	if len(raws) == 1 && !bytes.Equal(raws[0], m.Data) {
		return 0, 0, &StreamMismatchError{StoreID: o.StoreID, Position: pos, Reason: "the stream's copy differs from this ledger's event (altered in the stream, or another store uses this id)"}
	}
	return pos, m.Sequence, nil
}

// message is the stored event raw at pos as its message: the bytes, the
// event id as Nats-Msg-Id, position, hash, key and signature headers.
func message(src Source, subj string, raw []byte, pos uint64) (*nats.Msg, error) {
	ref, err := events.DecodeStoredRef(raw)
	if err != nil {
		return nil, permanent{fmt.Errorf("position %d: %w", pos, err)}
	}
	if ref.Position != pos {
		return nil, permanent{fmt.Errorf("ledger position %d holds an envelope that says %d", pos, ref.Position)}
	}
	m := nats.NewMsg(subj)
	m.Data = raw
	m.Header.Set(jetstream.MsgIDHeader, ref.ID.String())
	m.Header.Set(HeaderPosition, strconv.FormatUint(pos, 10))
	m.Header.Set(HeaderHash, ref.Hash)
	sig, key, err := src.Sign(pos, ref.Hash)
	if err != nil {
		return nil, permanent{err}
	}
	m.Header.Set(HeaderKey, key)
	m.Header.Set(HeaderSignature, sig)
	return m, nil
}

// pubAck is the server's answer to a batch commit.
type pubAck struct {
	Stream   string              `json:"stream"`
	Sequence uint64              `json:"seq"`
	Batch    string              `json:"batch"`
	Count    int                 `json:"count"`
	Error    *jetstream.APIError `json:"error"`
}

// sendBatch publishes raws (positions after+1...) as one atomic batch whose
// first message expects lastSeq as the subject's last stream sequence, and
// returns the stream sequence of the batch's last message.
func sendBatch(ctx context.Context, nc *nats.Conn, src Source, subj string, raws [][]byte, after, lastSeq uint64, o PublishOptions) (uint64, error) {
	batchID := nuid.Next()
	for i, raw := range raws {
		pos := after + uint64(i) + 1
		m, err := message(src, subj, raw, pos)
		if err != nil {
			return 0, err
		}
		m.Header.Set("Nats-Batch-Id", batchID)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i == 0 {
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(lastSeq, 10))
		}
		if i < len(raws)-1 {
			if err := nc.PublishMsg(m); err != nil {
				return 0, fmt.Errorf("publish position %d: %w", pos, err)
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		rctx, cancel := context.WithTimeout(ctx, requestTimeout(o.Timeout))
		resp, err := nc.RequestMsgWithContext(rctx, m)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("commit batch ending at position %d: %w", pos, err)
		}
		var ack pubAck
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return 0, fmt.Errorf("commit batch ending at position %d: unreadable acknowledgement: %w", pos, err)
		}
		if ack.Error != nil {
			if ack.Error.ErrorCode == 10174 { // atomic publish disabled
				return 0, &StreamConfigError{Stream: o.Stream, Reason: ack.Error.Description}
			}
			return 0, fmt.Errorf("commit batch ending at position %d: %w", pos, ack.Error)
		}
		if ack.Count != len(raws) {
			return 0, fmt.Errorf("commit batch ending at position %d: the server stored %d of %d messages", pos, ack.Count, len(raws))
		}
		return ack.Sequence, nil
	}
	return lastSeq, nil
}

// WatchOptions configure Watch.
type WatchOptions struct {
	PublishOptions
	// Interval is how often the ledger's head is looked at between
	// publishes (default 1s).
	Interval time.Duration
	// OnPublish, when set, is told each publish that sent events, and
	// OnError each that failed and is tried again at the next change.
	OnPublish func(PublishResult)
	OnError   func(error)
}

// Watch publishes, then publishes again each time the ledger's head moves,
// until ctx is done (then it returns nil, having finished or abandoned
// the batch in flight: the stream holds whole batches only). A publish
// that fails for want of the server is tried again at the next look; a
// stream that differs from the ledger or cannot hold it ends the watch.
func Watch(ctx context.Context, nc *nats.Conn, src Source, o WatchOptions) error {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	published := uint64(0)
	retry := true
	for {
		head, err := src.Head()
		if err != nil {
			return err
		}
		if head != published || retry {
			res, err := Publish(ctx, nc, src, o.PublishOptions)
			var mm *StreamMismatchError
			var ce *StreamConfigError
			switch {
			case err == nil:
				if res.Published > 0 && o.OnPublish != nil {
					o.OnPublish(res) // also when ctx ended after the last batch landed
				}
			case ctx.Err() != nil:
				return nil
			case errors.As(err, &mm), errors.As(err, &ce):
				return err
			case o.OnError != nil:
				o.OnError(err)
			}
			retry, published = err != nil, res.Head
		}
		if pause(ctx, o.Interval) != nil {
			return nil
		}
	}
}
