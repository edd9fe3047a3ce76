package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

const testToken = "s3cret"

func startTestServer(t testing.TB, cfg ServerConfig) *Server {
	t.Helper()
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	s, err := StartServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func dialTest(t testing.TB, s *Server, run, name string) *Conn {
	t.Helper()
	return dialTestConfig(t, DialConfig{URL: s.ClientURL(), Token: testToken, Name: name, RunID: run})
}

// dialPipe is dialTest over the in-process pipe (DialConfig.InProcess).
func dialPipe(t testing.TB, s *Server, run, name string) *Conn {
	t.Helper()
	return dialTestConfig(t, DialConfig{URL: s.ClientURL(), Token: testToken, Name: name, RunID: run, InProcess: s})
}

func dialTestConfig(t testing.TB, cfg DialConfig) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func newTestLearner(t testing.TB, c *Conn, cfg LearnerConfig) *Learner {
	t.Helper()
	l, err := NewLearner(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func newTestActor(t testing.TB, c *Conn, id uint32) *Actor {
	t.Helper()
	a, err := NewActor(context.Background(), c, ActorConfig{ID: id, FetchTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func recvFrame(t testing.TB, ch <-chan Frame) Frame {
	t.Helper()
	select {
	case f, ok := <-ch:
		if !ok {
			t.Fatal("segments channel closed")
		}
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no segment within 10 s")
	}
	return Frame{}
}

// unsignedEnvelope is body in an unsigned envelope, the payload of a
// params or pointer frame from a learner without a signing key.
func unsignedEnvelope(body []byte) []byte { return AppendEnvelope(nil, KeyID{}, nil, body) }

// segPayload is a recognisable segment body: actor id and index.
func segPayload(actor uint32, i int) []byte {
	b := binary.LittleEndian.AppendUint32(nil, actor)
	b = binary.LittleEndian.AppendUint32(b, uint32(i))
	return append(b, bytes.Repeat([]byte{byte(i)}, 100)...)
}

func TestServerClientURL(t *testing.T) {
	s := startTestServer(t, ServerConfig{})
	if s.Port() == 0 || s.ClientURL() != fmt.Sprintf("nats://127.0.0.1:%d", s.Port()) {
		t.Errorf("client URL %q port %d", s.ClientURL(), s.Port())
	}
	if s.JetStreamDir() == "" {
		t.Error("no JetStream dir")
	}
	// A second server on the same port fails with the reason.
	_, err := StartServer(ServerConfig{Port: s.Port(), ReadyTimeout: 2 * time.Second})
	if err == nil {
		t.Fatal("second server on a busy port started")
	}
	t.Log(err)
}

func TestEndToEndSegmentsInOrder(t *testing.T) {
	s := startTestServer(t, ServerConfig{})
	run := "e2e"
	l := newTestLearner(t, dialTest(t, s, run, "learner"), LearnerConfig{QueueSize: 512, MaxLag: 5})
	const actors, per = 3, 60
	for id := uint32(1); id <= actors; id++ {
		a := newTestActor(t, dialTest(t, s, run, fmt.Sprint("actor-", id)), id)
		go func() {
			for i := range per {
				if err := a.PublishSegment(uint64(i%3), segPayload(a.ID(), i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	next := map[uint32]int{}
	for range actors * per {
		f := recvFrame(t, l.Segments())
		i := next[f.Actor]
		if f.Kind != KindSegment || f.RunID != run || f.Seq != uint64(i+1) || f.Version != uint64(i%3) || !bytes.Equal(f.Payload, segPayload(f.Actor, i)) {
			t.Fatalf("actor %d segment %d: got %+v", f.Actor, i, f)
		}
		next[f.Actor] = i + 1
	}
	st := l.Stats()
	if st.Received != actors*per || st.Delivered != actors*per || st.LostSegments != 0 || st.Actors != actors ||
		st.DecodeErrors+st.BadChecksum+st.WrongRun+st.WrongKind+st.Stale+st.QueueOverflow+st.SeqResets != 0 {
		t.Errorf("stats %+v", st)
	}
	if st.DeliveredBytes != actors*per*108 {
		t.Errorf("delivered bytes %d", st.DeliveredBytes)
	}
}

func TestParamsRoundTrip(t *testing.T) {
	s := startTestServer(t, ServerConfig{})
	run := "params"
	l := newTestLearner(t, dialTest(t, s, run, "learner"), LearnerConfig{})
	a := newTestActor(t, dialTest(t, s, run, "actor"), 1)
	if _, _, ok := a.LatestParams(); ok {
		t.Fatal("params before any were published")
	}
	if err := l.PublishParams(2, []byte("weights-v2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "params v2", func() bool { v, _, _ := a.LatestParams(); return v == 2 })
	if _, p, _ := a.LatestParams(); string(p) != "weights-v2" {
		t.Fatalf("payload %q", p)
	}
	// An older version is ignored; a newer one replaces.
	if err := l.PublishParams(1, []byte("weights-v1")); err != nil {
		t.Fatal(err)
	}
	// The key-value store still says v2.
	if v, p, _ := newTestActor(t, dialTest(t, s, run, "late"), 2).LatestParams(); v != 2 || string(p) != "weights-v2" {
		t.Errorf("late actor after an older publish: v%d %q", v, p)
	}
	if err := l.PublishParams(3, []byte("weights-v3")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "params v3", func() bool { v, _, _ := a.LatestParams(); return v == 3 })
	if _, p, _ := a.LatestParams(); string(p) != "weights-v3" {
		t.Fatalf("payload %q", p)
	}
	if st := a.Stats(); st.ParamsIgnored != 1 || st.ParamsErrors != 0 {
		t.Errorf("actor stats %+v", st)
	}
	if st := l.Stats(); st.Version != 3 || st.ParamsPublished != 3 || st.ParamsViaObjectStore != 0 {
		t.Errorf("learner stats %+v", st)
	}
}

func TestLargeParamsViaObjectStore(t *testing.T) {
	s := startTestServer(t, ServerConfig{MaxPayload: 1 << 20})
	run := "big"
	lc := dialTest(t, s, run, "learner")
	l := newTestLearner(t, lc, LearnerConfig{KeepParams: 2})
	a := newTestActor(t, dialTest(t, s, run, "actor"), 1)
	big := func(v int) []byte {
		b := make([]byte, 3<<20)
		for i := range b {
			b[i] = byte(i*7 + v)
		}
		return b
	}
	for v := 1; v <= 4; v++ {
		if err := l.PublishParams(uint64(v), big(v)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprint("params v", v), func() bool { got, _, _ := a.LatestParams(); return got == uint64(v) })
		if _, p, _ := a.LatestParams(); !bytes.Equal(p, big(v)) {
			t.Fatalf("v%d: payload differs", v)
		}
	}
	if st := l.Stats(); st.ParamsViaObjectStore != 4 || st.ParamsBytes != 4*3<<20 {
		t.Errorf("learner stats %+v", st)
	}
	if st := a.Stats(); st.ParamsFetched != 4 || st.ParamsErrors != 0 {
		t.Errorf("actor stats %+v", st)
	}
	// Only the last KeepParams versions stay in the store.
	ctx := context.Background()
	obs, err := lc.JetStream().ObjectStore(ctx, ParamsBucket(run))
	if err != nil {
		t.Fatal(err)
	}
	infos, err := obs.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
	}
	if fmt.Sprint(names) != "[v3 v4]" {
		t.Errorf("objects kept: %v, want [v3 v4]", names)
	}

	// A pointer whose checksum does not match the object is refused: the
	// actor keeps v4 and counts the error.
	if _, err := obs.PutBytes(ctx, ObjectName(9), []byte("not what the pointer says")); err != nil {
		t.Fatal(err)
	}
	ptr := AppendPointer(nil, ParamsPointer{Size: 25, Checksum: 12345})
	raw := mustEncode(t, Frame{Kind: KindParamsPointer, RunID: run, Version: 9, Payload: unsignedEnvelope(ptr)})
	if err := lc.NATS().Publish(lc.Subjects().Params, raw); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pointer refused", func() bool { return a.Stats().ParamsErrors == 1 })
	if v, _, _ := a.LatestParams(); v != 4 {
		t.Errorf("actor took corrupt params: v%d", v)
	}
	// Checked directly too: the error says why.
	if err := a.fetchObject(ctx, 9, ParamsPointer{Size: 25, Checksum: 12345}, &Envelope{}); !errors.Is(err, ErrBadChecksum) {
		t.Errorf("fetch with a bad checksum: %v", err)
	}
}

// A server with a small max payload still carries large parameters: the
// object chunks shrink to fit.
func TestParamsSmallMaxPayload(t *testing.T) {
	s := startTestServer(t, ServerConfig{MaxPayload: 64 << 10})
	l := newTestLearner(t, dialTest(t, s, "small", "learner"), LearnerConfig{})
	a := newTestActor(t, dialTest(t, s, "small", "actor"), 1)
	payload := bytes.Repeat([]byte("0123456789"), 30000)
	if err := l.PublishParams(1, payload); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "params v1", func() bool { v, _, _ := a.LatestParams(); return v == 1 })
	if _, p, _ := a.LatestParams(); !bytes.Equal(p, payload) {
		t.Error("payload differs")
	}
	if got := objectChunkSize(64 << 10); got != 60<<10 {
		t.Errorf("chunk for 64 KiB messages: %d", got)
	}
	if got := objectChunkSize(8 << 20); got != 1<<20 {
		t.Errorf("chunk for 8 MiB messages: %d", got)
	}
}

func TestLateActorGetsLatestParams(t *testing.T) {
	for _, size := range []int{1000, 2 << 20} {
		t.Run(fmt.Sprint("bytes=", size), func(t *testing.T) {
			s := startTestServer(t, ServerConfig{MaxPayload: 1 << 20})
			run := "late"
			l := newTestLearner(t, dialTest(t, s, run, "learner"), LearnerConfig{})
			// Before anything is published: ErrNoParams.
			early := newTestActor(t, dialTest(t, s, run, "early"), 1)
			if _, _, err := early.FetchLatestParams(context.Background()); !errors.Is(err, ErrNoParams) {
				t.Fatalf("fetch before publish: %v", err)
			}
			payload := bytes.Repeat([]byte{7}, size)
			for v := uint64(1); v <= 3; v++ {
				payload[0] = byte(v)
				if err := l.PublishParams(v, payload); err != nil {
					t.Fatal(err)
				}
			}
			// NewActor returns with the newest params already in hand.
			a := newTestActor(t, dialTest(t, s, run, "late"), 2)
			v, p, ok := a.LatestParams()
			if !ok || v != 3 || !bytes.Equal(p, payload) {
				t.Fatalf("late actor: v%d ok=%v len=%d", v, ok, len(p))
			}
		})
	}
}

func TestGarbageDroppedAndCounted(t *testing.T) {
	s := startTestServer(t, ServerConfig{})
	run := "junk"
	var stats []Frame
	statsDone := make(chan struct{}, 10)
	l := newTestLearner(t, dialTest(t, s, run, "learner"), LearnerConfig{QueueSize: 64, MaxLag: 2, OnStats: func(f Frame) {
		stats = append(stats, f)
		statsDone <- struct{}{}
	}})
	l.SetVersion(10)
	a := newTestActor(t, dialTest(t, s, run, "actor"), 1)
	raw := dialTest(t, s, run, "raw")
	sub := raw.Subjects()
	seg := func(f Frame) []byte {
		f.RunID, f.Kind = run, KindSegment
		return mustEncode(t, f)
	}
	good := seg(Frame{Version: 10, Actor: 5, Seq: 1, Payload: []byte("ok")})
	badSum := append([]byte(nil), good...)
	badSum[len(badSum)-1] ^= 0xff
	otherRun := mustEncode(t, Frame{Kind: KindSegment, RunID: "other", Version: 10, Actor: 5, Seq: 2})
	wrongKind := mustEncode(t, Frame{Kind: KindParams, RunID: run, Version: 10})
	msgs := [][]byte{
		nil,
		[]byte("garbage"),
		bytes.Repeat([]byte{0xff}, 100),
		good[:HeaderSize],
		append([]byte("TGRL\x07"), good[5:]...), // unknown format version
		badSum,
		otherRun,
		wrongKind,
		seg(Frame{Version: 7, Actor: 5, Seq: 2}), // stale: 7 < 10-2
		seg(Frame{Version: 8, Actor: 5, Seq: 3}), // at the bound: kept
		seg(Frame{Version: 12, Actor: 5, Seq: 6}), // seq 4, 5 lost
		seg(Frame{Version: 12, Actor: 5, Seq: 6}), // duplicate
	}
	if err := raw.NATS().Publish(sub.Traj, good); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := raw.NATS().Publish(sub.Traj, m); err != nil {
			t.Fatal(err)
		}
	}
	// Garbage on the params and stats subjects too.
	for _, m := range [][]byte{[]byte("junk"), badSum, otherRun, good, mustEncode(t, Frame{Kind: KindParamsPointer, RunID: run, Version: 99, Payload: []byte("short")})} {
		if err := raw.NATS().Publish(sub.Params, m); err != nil {
			t.Fatal(err)
		}
		if err := raw.NATS().Publish(sub.Stats, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.PublishStats([]byte(`{"episodes":3}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "all segment messages", func() bool { return l.Stats().Received == uint64(len(msgs)+1) })
	waitFor(t, "all params messages", func() bool { return a.Stats().ParamsErrors == 5 })
	<-statsDone
	waitFor(t, "all stats messages", func() bool { return l.Stats().StatsDropped == 5 })

	var seqs []uint64
	for range 4 {
		seqs = append(seqs, recvFrame(t, l.Segments()).Seq)
	}
	if fmt.Sprint(seqs) != "[1 3 6 6]" {
		t.Errorf("delivered seqs %v, want [1 3 6 6]", seqs)
	}
	st := l.Stats()
	want := LearnerStats{Version: 10, Received: 13, Delivered: 4, DeliveredBytes: 2, DecodeErrors: 5, BadChecksum: 1, WrongRun: 1, WrongKind: 1,
		Stale: 1, LostSegments: 2, SeqResets: 1, Actors: 1, StatsReceived: 1, StatsDropped: 5, Conn: st.Conn}
	if st != want {
		t.Errorf("stats\n got %+v\nwant %+v", st, want)
	}
	if len(stats) != 1 || string(stats[0].Payload) != `{"episodes":3}` || stats[0].Actor != 1 {
		t.Errorf("stats frames %+v", stats)
	}
	if _, _, ok := a.LatestParams(); ok {
		t.Error("actor took params from garbage")
	}
}

func TestQueueOverflow(t *testing.T) {
	s := startTestServer(t, ServerConfig{})
	l := newTestLearner(t, dialTest(t, s, "q", "learner"), LearnerConfig{QueueSize: 2})
	a := newTestActor(t, dialTest(t, s, "q", "actor"), 1)
	for i := range 5 {
		if err := a.PublishSegment(0, segPayload(1, i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "5 segments", func() bool { return l.Stats().Received == 5 })
	if st := l.Stats(); st.Delivered != 2 || st.QueueOverflow != 3 || st.LostSegments != 0 {
		t.Errorf("stats %+v", st)
	}
	if f := recvFrame(t, l.Segments()); f.Seq != 1 {
		t.Errorf("first delivered seq %d", f.Seq)
	}
	// Close closes the channel; later segments are dropped quietly.
	_ = l.Close()
	_ = a.PublishSegment(0, nil)
	for range l.Segments() {
	}
}

func TestWrongTokenRefused(t *testing.T) {
	s := startTestServer(t, ServerConfig{})
	for _, tok := range []string{"", "wrong"} {
		c, err := Dial(context.Background(), DialConfig{URL: s.ClientURL(), Token: tok, Name: "intruder", RunID: "r"})
		if err == nil {
			c.Close()
			t.Fatalf("token %q accepted", tok)
		}
		if !errors.Is(err, ErrUnauthorized) {
			t.Errorf("token %q: error %v does not wrap ErrUnauthorized", tok, err)
		}
	}
	if _, err := Dial(context.Background(), DialConfig{URL: s.ClientURL(), Token: testToken, RunID: "bad.run"}); !errors.Is(err, ErrBadRunID) {
		t.Errorf("bad run id: %v", err)
	}
}

// The server goes away and comes back on the same port with the same
// JetStream directory: clients reconnect by themselves, segments published
// meanwhile are either delivered or counted lost, and the parameters in
// JetStream survive.
func TestServerRestart(t *testing.T) {
	dir := t.TempDir()
	s1, err := StartServer(ServerConfig{Token: testToken, JetStreamDir: dir, MaxPayload: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	port := s1.Port()
	run := "restart"
	lc := dialTest(t, s1, run, "learner")
	ac := dialTest(t, s1, run, "actor")
	l := newTestLearner(t, lc, LearnerConfig{QueueSize: 1024, MaxLag: 100})
	a := newTestActor(t, ac, 1)
	if err := l.PublishParams(1, bytes.Repeat([]byte{1}, 2<<20)); err != nil { // via the object store
		t.Fatal(err)
	}
	waitFor(t, "params v1", func() bool { v, _, _ := a.LatestParams(); return v == 1 })

	const before, during, after = 20, 30, 20
	publish := func(n int) {
		for range n {
			if err := a.PublishSegment(1, make([]byte, 1000)); err != nil {
				t.Logf("publish while down: %v", err)
			}
		}
	}
	publish(before)
	waitFor(t, "segments before the outage", func() bool { return l.Stats().Delivered == before })

	s1.Shutdown()
	waitFor(t, "both clients see the disconnect", func() bool { return !lc.Connected() && !ac.Connected() })
	publish(during) // buffered by the client, flushed after the reconnect

	s2, err := StartServer(ServerConfig{Port: port, Token: testToken, JetStreamDir: dir, MaxPayload: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Shutdown)
	waitFor(t, "both clients reconnect", func() bool {
		return lc.Stats().Reconnects >= 1 && ac.Stats().Reconnects >= 1 && lc.Connected() && ac.Connected()
	})
	publish(after)
	// The last segment is always delivered (both are connected now).
	total := uint64(before + during + after)
	waitFor(t, "the last segment", func() bool {
		st := l.Stats()
		return st.Delivered+st.LostSegments == total
	})
	st := l.Stats()
	t.Logf("after the restart: delivered %d, lost %d of %d published during the outage; conn %+v", st.Delivered, st.LostSegments, during, st.Conn)
	if st.LostSegments > during || st.Delivered < before+after || st.SeqResets != 0 || st.Conn.Disconnects < 1 {
		t.Errorf("stats %+v", st)
	}
	if ast := a.Stats(); ast.SegmentsPublished != total || ast.Conn.Reconnects < 1 {
		t.Errorf("actor stats %+v", ast)
	}

	// Parameters go on, and those in JetStream survived the restart.
	if err := l.PublishParams(2, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "params v2", func() bool { v, _, _ := a.LatestParams(); return v == 2 })
	late := newTestActor(t, dialTest(t, s2, run, "late"), 2)
	if v, p, _ := late.LatestParams(); v != 2 || string(p) != "v2" {
		t.Errorf("late actor after restart: v%d %q", v, p)
	}
	obs, err := lc.JetStream().ObjectStore(context.Background(), ParamsBucket(run))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := obs.GetBytes(context.Background(), ObjectName(1)); err != nil || len(b) != 2<<20 {
		t.Errorf("object v1 after restart: %d bytes, %v", len(b), err)
	}
	var _ jetstream.ObjectStore = obs
}

// Parameters broadcast while an actor is disconnected are not replayed by
// NATS; after a reconnect the actor reads the key-value store.
func TestActorRefetchesAfterReconnect(t *testing.T) {
	s := startTestServer(t, ServerConfig{})
	run := "refetch"
	lc := dialTest(t, s, run, "learner")
	l := newTestLearner(t, lc, LearnerConfig{})
	ac := dialTest(t, s, run, "actor")
	a := newTestActor(t, ac, 1)
	if err := l.PublishParams(1, []byte("one")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "params v1", func() bool { v, _, _ := a.LatestParams(); return v == 1 })
	// Store v2 without broadcasting it, as if the broadcast was missed.
	kv, err := lc.JetStream().KeyValue(context.Background(), LatestBucket(run))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), LatestKey, mustEncode(t, Frame{Kind: KindParams, RunID: run, Version: 2, Payload: unsignedEnvelope([]byte("two"))})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if v, _, _ := a.LatestParams(); v != 1 {
		t.Fatalf("actor at v%d before the reconnect", v)
	}
	if err := ac.NATS().ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "params v2 after the reconnect", func() bool { v, _, _ := a.LatestParams(); return v == 2 })
	if _, p, _ := a.LatestParams(); string(p) != "two" {
		t.Errorf("payload %q", p)
	}
	if st := a.Stats(); st.Conn.Reconnects != 1 || st.ParamsFetched != 1 {
		t.Errorf("actor stats %+v", st)
	}
}

// TestLatestNotStoredIsNotFatal: when the key-value store cannot take the
// latest version (here a JetStream timeout too short for any call), the
// broadcast still reaches the actors, PublishParams succeeds, and the
// failure is counted; a learner with time to spare stores the next version.
func TestLatestNotStoredIsNotFatal(t *testing.T) {
	s := startTestServer(t, ServerConfig{})
	run := "latest"
	l := newTestLearner(t, dialTest(t, s, run, "learner"), LearnerConfig{JetStreamTimeout: time.Nanosecond})
	a := newTestActor(t, dialTest(t, s, run, "actor"), 1)
	for v := uint64(1); v <= 2; v++ {
		if err := l.PublishParams(v, []byte(fmt.Sprint("weights-v", v))); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
	}
	waitFor(t, "params v2", func() bool { v, _, _ := a.LatestParams(); return v == 2 })
	if st := l.Stats(); st.LatestErrors != 2 || st.ParamsPublished != 2 || st.ParamsErrors != 0 {
		t.Errorf("learner stats %+v", st)
	}
	if _, _, err := a.FetchLatestParams(context.Background()); !errors.Is(err, ErrNoParams) {
		t.Errorf("fetch with nothing stored: %v", err)
	}
	l.cfg.JetStreamTimeout = 10 * time.Second
	if err := l.PublishParams(3, []byte("weights-v3")); err != nil {
		t.Fatal(err)
	}
	if v, p, _ := newTestActor(t, dialTest(t, s, run, "late"), 2).LatestParams(); v != 3 || string(p) != "weights-v3" {
		t.Errorf("late actor: v%d %q", v, p)
	}
	if st := l.Stats(); st.LatestErrors != 2 {
		t.Errorf("latest errors %d after a stored version, want 2", st.LatestErrors)
	}
}

// TestInProcessConnection: clients of the embedded server in the same
// process talk to it over an in-memory pipe, beside clients on the
// network, with the same token check, segments and parameters.
func TestInProcessConnection(t *testing.T) {
	s := startTestServer(t, ServerConfig{})
	run := "inproc"
	lc, tcp := dialPipe(t, s, run, "learner"), dialTest(t, s, run, "actor-tcp")
	if got := lc.NATS().ConnectedAddr(); got != "pipe" {
		t.Errorf("in-process connection's address %q, want pipe", got)
	}
	if got := tcp.NATS().ConnectedAddr(); got == "pipe" {
		t.Error("network connection runs over a pipe")
	}
	l := newTestLearner(t, lc, LearnerConfig{QueueSize: 64, MaxLag: 5})
	actors := []*Actor{newTestActor(t, dialPipe(t, s, run, "actor-pipe"), 1), newTestActor(t, tcp, 2)}
	for i := range 5 {
		for _, a := range actors {
			if err := a.PublishSegment(0, segPayload(a.ID(), i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	next := map[uint32]int{}
	for range 10 {
		f := recvFrame(t, l.Segments())
		i := next[f.Actor]
		if f.Seq != uint64(i+1) || !bytes.Equal(f.Payload, segPayload(f.Actor, i)) {
			t.Fatalf("actor %d segment %d: got %+v", f.Actor, i, f)
		}
		next[f.Actor] = i + 1
	}
	if err := l.PublishParams(1, []byte("weights-v1")); err != nil {
		t.Fatal(err)
	}
	for _, a := range actors {
		waitFor(t, "params v1", func() bool { v, p, _ := a.LatestParams(); return v == 1 && string(p) == "weights-v1" })
	}
	for _, tok := range []string{"", "wrong"} {
		if c, err := Dial(context.Background(), DialConfig{URL: s.ClientURL(), Token: tok, RunID: run, InProcess: s}); !errors.Is(err, ErrUnauthorized) {
			if c != nil {
				c.Close()
			}
			t.Errorf("token %q in process: %v, want ErrUnauthorized", tok, err)
		}
	}
}
