package events

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/tree-ring/tree-ring/events/strictjson"
)

// Spec declares one event type: its current schema version, the stream
// family it belongs to and its typed payload.
type Spec struct {
	Type          string
	SchemaVersion int
	// StreamPrefix is the stream family: "store" (exact) or a prefix such as
	// "harness/", "memory/", "run/".
	StreamPrefix string
	payload      reflect.Type
	moves        func() bool // movesOf[P]: asserted on demand, not at init
	// newPayload is new(P) and isPayload tells a *P or P: known at
	// registration, so building and checking a payload per event needs no
	// reflection.
	newPayload func() any
	isPayload  func(any) bool
}

// NewPayload returns a pointer to a fresh zero payload of this type.
func (s Spec) NewPayload() any { return s.newPayload() }

// Moves reports whether this type's payload embeds a Transition (Moves
// returns one for every decoded payload of the type), without decoding or
// allocating one: folds ask it of every event they see.
func (s Spec) Moves() bool { return s.moves != nil && s.moves() }

func isPayloadOf[P any](p any) bool {
	switch p.(type) {
	case *P, P:
		return true
	}
	return false
}

func movesOf[P any]() bool {
	_, ok := any((*P)(nil)).(interface{ transition() Transition })
	return ok
}

var (
	regMu sync.RWMutex
	// registry is written only by register, from this package's init, so
	// it is read without the lock (package initialization happens before
	// any other goroutine reads it); replay looks types up per event.
	registry = make(map[string]Spec, 32) // sized for the catalogue: init never rehashes
)

// register declares an event type whose payload is P. Called only from this
// package's init; the catalogue is closed to other packages so that every
// fact the ledger may hold is listed in one place.
func register[P any](typ string, version int, streamPrefix string) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[typ]; dup {
		panic("events: duplicate registration of " + typ)
	}
	registry[typ] = Spec{Type: typ, SchemaVersion: version, StreamPrefix: streamPrefix, payload: reflect.TypeFor[P](), moves: movesOf[P],
		newPayload: func() any { return new(P) }, isPayload: isPayloadOf[P]}
}

// Lookup returns the spec of a registered type.
func Lookup(typ string) (Spec, bool) {
	s, ok := registry[typ]
	return s, ok
}

// TypeName returns the registered type named by b as a shared string, so
// hot loops over stored events can call Projection.Handles without
// allocating a string per event.
func TypeName(b []byte) (string, bool) {
	s, ok := registry[string(b)]
	return s.Type, ok
}

// Types lists every registered type, sorted.
func Types() []string {
	out := make([]string, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// UnknownTypeError reports an event type outside the catalogue.
type UnknownTypeError struct{ Type string }

func (e *UnknownTypeError) Error() string { return fmt.Sprintf("unknown event type %q", e.Type) }

// CurrentPayload returns e's payload after checking that its type is
// registered and its schema_version is the type's current one. Every type
// is at its first schema version; when one moves on, its older payloads
// are migrated on read here (stored bytes never change).
func CurrentPayload(e *Envelope) (json.RawMessage, error) {
	spec, ok := Lookup(e.Type)
	if !ok {
		return nil, &UnknownTypeError{Type: e.Type}
	}
	if e.SchemaVersion != spec.SchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d not supported (current %d)", e.Type, e.SchemaVersion, spec.SchemaVersion)
	}
	return e.Payload, nil
}

// DecodePayload strictly decodes e's payload (at the current schema version)
// into a pointer to its registered struct, and checks the stream family.
func DecodePayload(e *Envelope) (any, error) {
	spec, ok := Lookup(e.Type)
	if !ok {
		return nil, &UnknownTypeError{Type: e.Type}
	}
	if spec.StreamPrefix == StoreStream && e.Stream != StoreStream ||
		spec.StreamPrefix != StoreStream && (len(e.Stream) <= len(spec.StreamPrefix) || !strings.HasPrefix(e.Stream, spec.StreamPrefix)) {
		return nil, fmt.Errorf("%s does not belong on stream %q", e.Type, e.Stream)
	}
	raw, err := CurrentPayload(e)
	if err != nil {
		return nil, err
	}
	v := spec.NewPayload()
	if err := strictjson.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("%s payload: %w", e.Type, err)
	}
	if c, ok := v.(interface{ Check() error }); ok {
		if err := c.Check(); err != nil {
			return nil, fmt.Errorf("%s payload: %w", e.Type, err)
		}
	}
	return v, nil
}

// Payload decodes e's payload into P, failing if e is not of a type whose
// payload is P.
func Payload[P any](e *Envelope) (*P, error) {
	v, err := DecodePayload(e)
	if err != nil {
		return nil, err
	}
	p, ok := v.(*P)
	if !ok {
		return nil, fmt.Errorf("%s payload is %T, not %T", e.Type, v, p)
	}
	return p, nil
}

// Factory mints envelopes with an injected clock and id source, so tests
// are deterministic. The zero value is not usable: cmd builds one on the
// wall clock and its own ULID source (cmd/tree-ring/ids.go), tests on
// events/eventstest.
// A Factory is safe for concurrent use if its Now and NewID are.
type Factory struct {
	Now   func() time.Time
	NewID func() ulid.ULID
	Actor string
}

// New builds an unsealed envelope of type typ on stream with payload p, at
// the type's current schema version. The payload is marshalled once here
// (json.Marshal) and validated once: the envelope carries the value its validation decoded
// (VerifiedPayload), so Tx.Append and the folds it runs do not decode the
// bytes again. The carried value is the decoded bytes', never p.
func (f *Factory) New(stream, typ string, p any) (Envelope, error) {
	spec, ok := Lookup(typ)
	if !ok {
		return Envelope{}, &UnknownTypeError{Type: typ}
	}
	if !spec.isPayload(p) {
		return Envelope{}, fmt.Errorf("%s: payload is %T, want %v", typ, p, spec.payload)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return Envelope{}, fmt.Errorf("marshal %s payload: %w", typ, err)
	}
	e := Envelope{
		ID: f.NewID(), Stream: stream, Type: typ, SchemaVersion: spec.SchemaVersion,
		RecordedAt: f.Now().UTC(), Actor: f.Actor, Payload: raw,
	}
	// json.Marshal writes compact JSON (it compacts what a MarshalJSON
	// returns too): no whitespace scan.
	v, err := e.validate(false)
	if err != nil {
		return Envelope{}, err
	}
	e.verified = &verifiedEnvelope{e: e, payload: v}
	return e, nil
}

// Must is New for callers that build payloads from constants (tests).
func (f *Factory) Must(stream, typ string, p any) Envelope {
	e, err := f.New(stream, typ, p)
	if err != nil {
		panic(err)
	}
	return e
}
