package fleettest

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The raw baseline of the fleet benchmarks: plain nats.go JetStream
// publishing and consuming of the same bytes, with none of what fleet adds
// (ids, headers, atomic batches, replica commits).

// rawStream is the baseline's stream, beside the fleet's on one server.
const rawStream, rawSubject = "RAW_BASELINE", "raw.events"

// RawPublish creates the baseline stream (file storage, like the fleet's)
// and publishes every body next yields, asynchronously with up to 4,096
// acknowledgements in flight, until next returns nil. It returns how many.
func RawPublish(url string, next func() [][]byte) (int, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: rawStream, Subjects: []string{rawSubject}, Storage: jetstream.FileStorage}); err != nil {
		return 0, err
	}
	n := 0
	for bodies := next(); bodies != nil; bodies = next() {
		for _, b := range bodies {
			if _, err := js.PublishAsync(rawSubject, b, jetstream.WithStallWait(time.Minute)); err != nil {
				return n, err
			}
			n++
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return n, ctx.Err()
	}
	if p := js.PublishAsyncPending(); p != 0 {
		return n, fmt.Errorf("%d publishes unacknowledged", p)
	}
	return n, nil
}

// RawConsume reads n messages of the baseline stream with a durable pull
// consumer, in fetches of 1,000, acknowledging each, and returns the bytes
// read.
func RawConsume(url string, n int) (int64, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	cons, err := js.CreateOrUpdateConsumer(ctx, rawStream, jetstream.ConsumerConfig{
		Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 20_000,
	})
	if err != nil {
		return 0, err
	}
	var bytes int64
	for got := 0; got < n; {
		batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return bytes, err
		}
		for m := range batch.Messages() {
			bytes += int64(len(m.Data()))
			if err := m.Ack(); err != nil {
				return bytes, err
			}
			got++
		}
		if err := batch.Error(); err != nil {
			return bytes, err
		}
	}
	return bytes, nc.Flush()
}
