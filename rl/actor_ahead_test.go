package rl

import (
	"context"
	"testing"
	"time"

	"github.com/tegrl/tegrl/rl/transport"
)

// TestActorMaxAhead: an IMPALA actor publishes MaxAhead segments under a
// version, then waits for a newer one; a new version lets it go on at
// once, and a wait that times out lets it publish MaxAhead more.
func TestActorMaxAhead(t *testing.T) {
	defer func(w time.Duration) { aheadWait = w }(aheadWait)
	aheadWait = 2 * time.Second
	tc := tinyTrain("chan", 1, false)
	cfg := tc.ActorConfig(1)
	if cfg.SyncSegments != 0 || cfg.MaxAhead != 2*tc.BatchSize/tc.SegmentLen {
		t.Fatalf("async actor config: sync segments %d, max ahead %d, want 0 and %d", cfg.SyncSegments, cfg.MaxAhead, 2*tc.BatchSize/tc.SegmentLen)
	}
	// Two batches' worth per version, shared among in-process actors;
	// remote actors (Actors 0) each get the whole.
	segs := 2 * ((tc.BatchSize + tc.SegmentLen - 1) / tc.SegmentLen)
	for _, n := range []int{0, 2, 3} {
		c := tinyTrain("chan", n, false)
		want := segs
		if n > 1 {
			want = (segs + n - 1) / n
		}
		if got := c.ActorConfig(1).MaxAhead; got != want || want < 1 {
			t.Errorf("%d actors: max ahead %d, want %d", n, got, want)
		}
	}
	st := tinyTrain("chan", 1, true)
	if s := st.ActorConfig(1); s.MaxAhead != 0 {
		t.Fatalf("sync actor config: max ahead %d, want 0", s.MaxAhead)
	}
	cfg.MaxAhead, cfg.Logger = 2, quietLog
	l, err := transport.NewChanLearner("ahead", transport.LearnerConfig{QueueSize: 64, MaxLag: 100})
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewActor(cfg, l.NewActor(1))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicy(cfg.Policy, 1)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := p.EncodeParams(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.PublishParams(1, payload); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	count := func(n int, within time.Duration) {
		t.Helper()
		deadline := time.After(within)
		for got := 0; got < n; got++ {
			select {
			case <-l.Segments():
			case <-deadline:
				t.Fatalf("%d segments, want %d", got, n)
			}
		}
	}
	quiet := func(d time.Duration) {
		t.Helper()
		select {
		case <-l.Segments():
			t.Fatalf("a segment beyond MaxAhead within %v", d)
		case <-time.After(d):
		}
	}
	count(2, 10*time.Second)
	quiet(300 * time.Millisecond) // waiting for version 2
	if err := l.PublishParams(2, payload); err != nil {
		t.Fatal(err)
	}
	count(2, 10*time.Second) // two more under version 2
	count(1, 10*time.Second) // and, after the wait times out, two more,
	count(1, time.Second)    // without waiting between them
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
