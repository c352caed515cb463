package fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamHeads is, for every store's subject the stream holds, the
// position of its last message (its Tree-Ring-Position header), read
// without consuming anything and without creating the stream: the
// stream's info filtered to the store subjects, then each subject's last
// message. Each request waits requestTimeout(timeout).
func StreamHeads(ctx context.Context, nc *nats.Conn, stream string, timeout time.Duration) (map[string]uint64, error) {
	if stream == "" {
		stream = DefaultStream
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout(timeout))
	defer cancel()
	st, err := js.Stream(rctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("stream %s does not exist (fleet publish creates it)", stream)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", stream, err)
	}
	return subjectHeads(ctx, st, timeout)
}

// subjectHeads is StreamHeads on a stream at hand; the heads read before
// a failed request come with its error. Each request has its own
// deadline, so many stores over a slow link do not share one.
func subjectHeads(ctx context.Context, st jetstream.Stream, timeout time.Duration) (map[string]uint64, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout(timeout))
	info, err := st.Info(rctx, jetstream.WithSubjectFilter(SubjectWildcard))
	cancel()
	if err != nil {
		return nil, fmt.Errorf("the stream's subjects: %w", err)
	}
	heads := make(map[string]uint64, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		id, ok := StoreOfSubject(subj)
		if !ok {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, requestTimeout(timeout))
		m, err := st.GetLastMsgForSubject(rctx, subj)
		cancel()
		if err != nil {
			return heads, fmt.Errorf("store %s: the stream's last message: %w", id, err)
		}
		heads[id], _ = strconv.ParseUint(m.Header.Get(HeaderPosition), 10, 64)
	}
	return heads, nil
}
