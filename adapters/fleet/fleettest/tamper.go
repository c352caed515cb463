package fleettest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// EditMessage alters a store's event inside the stream, as anyone with
// write access to it could: it finds the message of subject whose
// Tree-Ring-Position header is pos, deletes it, and publishes edit(body)
// with the same position, hash, key and signature headers at the end of
// the stream (not
// its Nats-Msg-Id, which the duplicate window would drop, nor the batch
// headers). An edit that returns nil only deletes. It returns the deleted
// message's stream sequence.
func EditMessage(url, stream, subject string, pos uint64, edit func([]byte) []byte) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, js, st, err := openStream(ctx, url, stream)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, fmt.Errorf("%s holds no position %d", subject, pos)
		}
		if err != nil {
			return 0, err
		}
		if m.Header.Get("Tree-Ring-Position") != strconv.FormatUint(pos, 10) {
			seq = m.Sequence + 1
			continue
		}
		if err := st.DeleteMsg(ctx, m.Sequence); err != nil {
			return 0, err
		}
		body := edit(append([]byte(nil), m.Data...))
		if body == nil {
			return m.Sequence, nil
		}
		out := nats.NewMsg(subject)
		for _, k := range []string{"Tree-Ring-Position", "Tree-Ring-Hash", "Tree-Ring-Key", "Tree-Ring-Signature"} {
			out.Header.Set(k, m.Header.Get(k))
		}
		out.Data = body
		if _, err := js.PublishMsg(ctx, out); err != nil {
			return 0, err
		}
		return m.Sequence, nil
	}
}

// SubjectCount is how many messages the stream holds on subject.
func SubjectCount(url, stream, subject string) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, _, st, err := openStream(ctx, url, stream)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, err
	}
	return info.State.Subjects[subject], nil
}

func openStream(ctx context.Context, url, stream string) (*nats.Conn, jetstream.JetStream, jetstream.Stream, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err == nil {
		var st jetstream.Stream
		if st, err = js.Stream(ctx, stream); err == nil {
			return nc, js, st, nil
		}
	}
	nc.Close()
	return nil, nil, nil, err
}

// PublishRaw publishes body on subject with the given headers, as anyone
// with publish rights on the subject could (a forger), and waits for the
// stream to store it.
func PublishRaw(url, stream, subject string, body []byte, headers map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, js, _, err := openStream(ctx, url, stream)
	if err != nil {
		return err
	}
	defer nc.Close()
	m := nats.NewMsg(subject)
	m.Data = body
	for k, v := range headers {
		m.Header.Set(k, v)
	}
	_, err = js.PublishMsg(ctx, m)
	return err
}

// CreateStream creates a stream as an operator would, before any publish.
func CreateStream(url string, cfg jetstream.StreamConfig) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	_, err = js.CreateStream(ctx, cfg)
	return err
}

// StreamBytes is what the stream's storage holds: bytes (the server's
// count: subjects, headers, bodies and its per-message record) and
// messages.
func StreamBytes(url, stream string) (bytes, msgs uint64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, _, st, err := openStream(ctx, url, stream)
	if err != nil {
		return 0, 0, err
	}
	defer nc.Close()
	info, err := st.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	return info.State.Bytes, info.State.Msgs, nil
}
