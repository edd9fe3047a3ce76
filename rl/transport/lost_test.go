package transport

import (
	"context"
	"testing"
	"time"
)

// TestFailedPublishesCountedLost: while the server is down, an actor's
// publishes beyond its reconnect buffer fail. Each failed publish is a
// segment the learner never gets, and the learner counts it lost: after
// the reconnect, delivered + lost equals every segment the actor tried,
// and lost covers at least every publish that failed.
func TestFailedPublishesCountedLost(t *testing.T) {
	dir := t.TempDir()
	s1, err := StartServer(ServerConfig{Token: testToken, JetStreamDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	port := s1.Port()
	run := "lost"
	lc := dialTest(t, s1, run, "learner")
	// Room for two 1,000-byte segments while disconnected.
	ac := dialTestConfig(t, DialConfig{URL: s1.ClientURL(), Token: testToken, Name: "actor", RunID: run, ReconnectBufSize: 2500})
	l := newTestLearner(t, lc, LearnerConfig{QueueSize: 1024, MaxLag: 100})
	a := newTestActor(t, ac, 1)
	failed := 0
	publish := func(n int) {
		for range n {
			if err := a.PublishSegment(1, make([]byte, 1000)); err != nil {
				failed++
			}
		}
	}
	const before, during, after = 5, 40, 5
	publish(before)
	waitFor(t, "segments before the outage", func() bool { return l.Stats().Delivered == before })
	s1.Shutdown()
	waitFor(t, "the actor sees the disconnect", func() bool { return !ac.Connected() })
	publish(during)
	if failed < during-3 {
		t.Fatalf("%d of %d publishes failed while down with a 2,500-byte buffer", failed, during)
	}
	s2, err := StartServer(ServerConfig{Port: port, Token: testToken, JetStreamDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Shutdown)
	waitFor(t, "both clients reconnect", func() bool { return lc.Connected() && ac.Connected() && lc.Stats().Reconnects >= 1 })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := lc.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	publish(after)
	total := uint64(before + during + after)
	waitFor(t, "the last segment", func() bool {
		st := l.Stats()
		return st.Delivered+st.LostSegments == total
	})
	st, ast := l.Stats(), a.Stats()
	t.Logf("%d publishes failed; learner: delivered %d, lost %d", failed, st.Delivered, st.LostSegments)
	if st.LostSegments < uint64(failed) || st.LostSegments > during || st.SeqResets != 0 {
		t.Errorf("learner counted %d lost (%d seq resets) for %d failed publishes of %d during the outage", st.LostSegments, st.SeqResets, failed, during)
	}
	if ast.PublishErrors != uint64(failed) || ast.SegmentsPublished != total-uint64(failed) {
		t.Errorf("actor stats %+v, %d failed", ast, failed)
	}
}
