// Package fleet is the fan-in of many hosts' ledgers through NATS JetStream
// (docs/fleet.md): Publish sends one store's stored envelopes, verbatim, to
// the subject tree-ring.events.<store_id> of a stream; Collect is a durable
// consumer that hands each store's envelopes, in position order, to a
// replica sink. It is the only package that imports nats.go; it knows the
// ledger only through the small Source and Sink interfaces that cmd
// satisfies with package bolt.
//
// Lifetime and concurrency: Publish and Collect use the *nats.Conn they are
// given for the duration of the call and never close it; neither is safe to
// run twice at once on the same Source or Sink.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tree-ring/tree-ring/events"
)

const (
	// DefaultStream is the JetStream stream publish and collect use unless
	// told otherwise.
	DefaultStream = "TREE_RING"
	// SubjectPrefix starts every store's subject.
	SubjectPrefix = "tree-ring.events."
	// SubjectWildcard is the stream's subject filter.
	SubjectWildcard = SubjectPrefix + ">"
	// DefaultDurable is the collector's durable consumer name.
	DefaultDurable = "tree-ring-collector"

	// HeaderPosition and HeaderHash carry the envelope's position and hash,
	// so a consumer orders and checks without decoding the body.
	HeaderPosition = "Tree-Ring-Position"
	HeaderHash     = "Tree-Ring-Hash"
	// HeaderSignature is the store key's signature of the event
	// (fleetsign.Statement: store, position, hash); HeaderKey the public
	// key it was made with, which a collector compares with the key it
	// trusts and pins on first sight only without --expect.
	HeaderSignature = "Tree-Ring-Signature"
	HeaderKey       = "Tree-Ring-Key"

	// maxBatch is JetStream's limit on an atomic batch (1,000 messages).
	maxBatch = 1000
)

// Subject is the subject of a store's events.
func Subject(storeID string) string { return SubjectPrefix + storeID }

// StoreOfSubject returns the store id a subject names, if it is one of ours.
func StoreOfSubject(subject string) (string, bool) {
	id, ok := strings.CutPrefix(subject, SubjectPrefix)
	if !ok || !ValidStoreID(id) {
		return "", false
	}
	return id, true
}

// ValidStoreID reports whether s is a store id (events.ValidStoreID), which
// makes it safe as a subject token and a directory name.
func ValidStoreID(s string) bool { return events.ValidStoreID(s) }

// Log receives a run's debug lines (--log-level debug): a message and
// key-value pairs of positions, counts, sequences and error texts, never
// an event's body. Nil logs nothing.
type Log func(msg string, kv ...any)

func (l Log) debug(msg string, kv ...any) {
	if l != nil {
		l(msg, kv...)
	}
}

// StreamConfigError is a stream that exists but cannot hold a fleet: it
// lacks atomic batch publishing or does not cover the subjects. Retrying
// does not help; an operator changes the stream (docs/fleet.md).
type StreamConfigError struct {
	Stream string
	Reason string
}

func (e *StreamConfigError) Error() string {
	return fmt.Sprintf("stream %s: %s", e.Stream, e.Reason)
}

// ensureStream returns the stream, creating it when absent (file storage,
// the given replicas, atomic batches allowed, no limits, discard new, no
// purge: a replica needs every event since position 1). keepsHistory
// (publish) also refuses a stream whose retention could drop events.
func ensureStream(ctx context.Context, js jetstream.JetStream, name string, replicas int, keepsHistory bool) (jetstream.Stream, error) {
	st, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		st, err = js.CreateStream(ctx, historyStream(name, replicas))
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			st, err = js.Stream(ctx, name) // another host created it meanwhile
		}
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	cfg := st.CachedInfo().Config
	if !cfg.AllowAtomicPublish {
		return nil, &StreamConfigError{Stream: name, Reason: "atomic batch publishing is off (allow_atomic); publish needs it to never leave a gap (docs/fleet.md)"}
	}
	covered := false
	for _, s := range cfg.Subjects {
		if s == SubjectWildcard || s == ">" || s == "tree-ring.>" {
			covered = true
		}
	}
	if !covered {
		return nil, &StreamConfigError{Stream: name, Reason: fmt.Sprintf("its subjects %q do not include %s", cfg.Subjects, SubjectWildcard)}
	}
	if keepsHistory {
		if why := dropsHistory(cfg); why != "" {
			return nil, &StreamConfigError{Stream: name, Reason: why + "; a replica needs every event from position 1. Use: " + HistoryConfig(name)}
		}
	}
	return st, nil
}

// historyStream is the stream publish and collect create: every event
// kept (no limits, discard new when an operator sets max_bytes, no purge).
func historyStream(name string, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:               name,
		Description:        "tree-ring ledgers, one subject per store (docs/fleet.md)",
		Subjects:           []string{SubjectWildcard},
		Storage:            jetstream.FileStorage,
		Replicas:           max(replicas, 1),
		Duplicates:         2 * time.Minute,
		AllowAtomicPublish: true,
		AllowDirect:        true,
		Discard:            jetstream.DiscardNew,
		DenyPurge:          true,
	}
}

// HistoryConfig is the retention a fleet stream needs, as the nats CLI
// sets it on an existing stream.
func HistoryConfig(name string) string {
	return fmt.Sprintf("`nats stream edit %s --retention limits --max-msgs=-1 --max-msgs-per-subject=-1 --max-age=0 --discard new --deny-purge` (docs/fleet.md, Retention)", name)
}

// dropsHistory says how cfg could remove events a replica still needs, ""
// when it cannot (message deletes stay allowed: docs/fleet.md says why).
func dropsHistory(cfg jetstream.StreamConfig) string {
	switch {
	case cfg.Retention != jetstream.LimitsPolicy:
		return fmt.Sprintf("retention %s deletes acknowledged messages", cfg.Retention)
	case cfg.MaxMsgs > 0:
		return fmt.Sprintf("max_msgs %d drops the oldest events", cfg.MaxMsgs)
	case cfg.MaxMsgsPerSubject > 0:
		return fmt.Sprintf("max_msgs_per_subject %d drops a store's oldest events", cfg.MaxMsgsPerSubject)
	case cfg.MaxAge > 0:
		return fmt.Sprintf("max_age %s drops old events", cfg.MaxAge)
	case cfg.Discard != jetstream.DiscardNew:
		return "discard old deletes the oldest events when the stream is full"
	case !cfg.DenyPurge:
		return "purges are allowed"
	}
	return ""
}
