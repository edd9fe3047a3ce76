package transport

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestChanSegmentsAndParams(t *testing.T) {
	if _, err := NewChanLearner("bad run", LearnerConfig{}); !errors.Is(err, ErrBadRunID) {
		t.Fatalf("bad run id: %v", err)
	}
	var mu sync.Mutex
	var stats []string
	l, err := NewChanLearner("chan", LearnerConfig{QueueSize: 100, MaxLag: 1, OnStats: func(f Frame) {
		mu.Lock()
		stats = append(stats, fmt.Sprintf("%d:%s", f.Actor, f.Payload))
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for id := uint32(1); id <= 2; id++ {
		a := l.NewActor(id)
		wg.Go(func() {
			for i := range 30 {
				buf := segPayload(id, i)
				if err := a.PublishSegment(5, buf); err != nil {
					t.Error(err)
				}
				buf[0] = 0xff // the transport copied it
			}
			_ = a.PublishStats([]byte("s"))
		})
	}
	wg.Wait()
	next := map[uint32]int{}
	for range 60 {
		f := <-l.Segments()
		i := next[f.Actor]
		if f.RunID != "chan" || f.Seq != uint64(i+1) || !bytes.Equal(f.Payload, segPayload(f.Actor, i)) {
			t.Fatalf("actor %d segment %d: %+v", f.Actor, i, f)
		}
		next[f.Actor] = i + 1
	}
	if len(stats) != 2 {
		t.Errorf("stats %v", stats)
	}

	a := l.NewActor(9)
	if _, _, ok := a.LatestParams(); ok {
		t.Fatal("params before publish")
	}
	p := []byte("w7")
	if err := l.PublishParams(7, p); err != nil {
		t.Fatal(err)
	}
	p[0] = 'x'
	_ = l.PublishParams(6, []byte("old"))
	if v, got, ok := a.LatestParams(); !ok || v != 7 || string(got) != "w7" {
		t.Fatalf("params v%d %q %v", v, got, ok)
	}
	// Version 7 is current, lag 1: version 5 is stale, 6 is kept.
	_ = a.PublishSegment(5, nil)
	_ = a.PublishSegment(6, nil)
	if f := <-l.Segments(); f.Version != 6 {
		t.Errorf("delivered v%d", f.Version)
	}
	st := l.Stats()
	want := LearnerStats{Version: 7, Received: 62, Delivered: 61, DeliveredBytes: 60 * 108, Stale: 1, Actors: 3, StatsReceived: 2, ParamsPublished: 2, ParamsBytes: 5}
	if st != want {
		t.Errorf("stats\n got %+v\nwant %+v", st, want)
	}
	_ = a.Close()
	if err := a.PublishSegment(7, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("publish after close: %v", err)
	}
	_ = l.Close()
	_ = l.NewActor(10).PublishSegment(7, nil) // dropped, no panic
	if _, ok := <-l.Segments(); ok {
		t.Error("channel open after Close")
	}
}

func TestChanOverflow(t *testing.T) {
	l, _ := NewChanLearner("o", LearnerConfig{QueueSize: 3})
	a := l.NewActor(1)
	for range 10 {
		_ = a.PublishSegment(0, []byte{1})
	}
	if st := l.Stats(); st.Delivered != 3 || st.QueueOverflow != 7 || st.LostSegments != 0 {
		t.Errorf("stats %+v", st)
	}
}
