package transport

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// benchSegments measures the actor -> learner round trip: one actor
// publishes b.N segments, a consumer drains the learner's channel, with at
// most window segments in flight so that nothing is dropped.
func benchSegments(b *testing.B, sink SegmentSink, src <-chan Frame, size int) {
	const window = 128
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	credit := make(chan struct{}, window)
	done := make(chan struct{})
	go func() {
		for range b.N {
			<-src
			<-credit
		}
		close(done)
	}()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		credit <- struct{}{}
		if err := sink.PublishSegment(1, payload); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		b.Fatalf("not all of %d segments arrived", b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkSegment(b *testing.B) {
	// 262144 bytes is about a training segment of the small preset (100
	// decisions of 16 candidates).
	for _, size := range []int{4096, 65536, 262144} {
		// nats: loopback TCP, as between processes; nats-pipe: the
		// in-process connection of an embedded server (DialConfig.InProcess).
		for _, tr := range []string{"nats", "nats-pipe"} {
			b.Run(fmt.Sprintf("transport=%s/bytes=%d", tr, size), func(b *testing.B) {
				s := startTestServer(b, ServerConfig{MaxPayload: 1 << 20})
				dial := dialTest
				if tr == "nats-pipe" {
					dial = dialPipe
				}
				l := newTestLearner(b, dial(b, s, "bench", "learner"), LearnerConfig{QueueSize: 256})
				a := newTestActor(b, dial(b, s, "bench", "actor"), 1)
				benchSegments(b, a, l.Segments(), size)
				if st := l.Stats(); st.LostSegments+st.QueueOverflow+st.Conn.SlowConsumers != 0 {
					b.Fatalf("drops: %+v", st)
				}
			})
		}
		b.Run(fmt.Sprintf("transport=chan/bytes=%d", size), func(b *testing.B) {
			l, err := NewChanLearner("bench", LearnerConfig{QueueSize: 256})
			if err != nil {
				b.Fatal(err)
			}
			benchSegments(b, l.NewActor(1), l.Segments(), size)
		})
	}
}

// smallBroadcast is the size of a parameter broadcast of tegrl train
// --preset small (weights and metadata).
const smallBroadcast = 40284

// BenchmarkParams measures a broadcast until the actor holds the new
// version: 40284 (the small preset's) and 65536 bytes go in one message,
// 8 MiB through the object store (server max payload 1 MiB). signed: the
// learner signs and the actor verifies.
func BenchmarkParams(b *testing.B) {
	for _, c := range []struct {
		size   int
		signed bool
	}{{smallBroadcast, false}, {smallBroadcast, true}, {65536, false}, {8 << 20, false}, {8 << 20, true}} {
		name := fmt.Sprintf("bytes=%d", c.size)
		if c.signed {
			name += "/signed"
		}
		size := c.size
		b.Run(name, func(b *testing.B) {
			s := startTestServer(b, ServerConfig{MaxPayload: 1 << 20})
			lcfg, acfg := LearnerConfig{KeepParams: 2}, ActorConfig{ID: 1, FetchTimeout: 10 * time.Second}
			if c.signed {
				key := testKey(b, 1)
				lcfg.SigningKey, acfg.TrustKey = key, pubOf(key)
			}
			l := newTestLearner(b, dialTest(b, s, "bench", "learner"), lcfg)
			a, err := NewActor(context.Background(), dialTest(b, s, "bench", "actor"), acfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = a.Close() })
			payload := make([]byte, size)
			for i := range payload {
				payload[i] = byte(i * 31)
			}
			ctx := context.Background()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				v := uint64(i + 1)
				if err := l.PublishParamsContext(ctx, v, payload); err != nil {
					b.Fatal(err)
				}
				deadline := time.Now().Add(10 * time.Second)
				for {
					if got, _, _ := a.LatestParams(); got == v {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("params v%d did not arrive", v)
					}
					time.Sleep(20 * time.Microsecond)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			if via := l.Stats().ParamsViaObjectStore; (size > 1<<20) != (via == uint64(b.N)) {
				b.Fatalf("%d of %d via the object store", via, b.N)
			}
		})
	}
}

// BenchmarkParamsSignature measures signing and verifying one parameter
// broadcast alone: the SHA-256 of the parameters and one ed25519
// signature or verification.
func BenchmarkParamsSignature(b *testing.B) {
	key := testKey(b, 1)
	pub := pubOf(key)
	for _, size := range []int{smallBroadcast, 8 << 20} {
		params := make([]byte, size)
		for i := range params {
			params[i] = byte(i * 31)
		}
		b.Run(fmt.Sprintf("op=sign/bytes=%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for range b.N {
				_ = SignParams(key, "bench", 7, params)
			}
		})
		sig := SignParams(key, "bench", 7, params)
		env, err := DecodeEnvelope(AppendEnvelope(nil, KeyIDOf(pub), sig, params))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("op=verify/bytes=%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for range b.N {
				if err := VerifyParams(pub, "bench", 7, env.Body, &env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
