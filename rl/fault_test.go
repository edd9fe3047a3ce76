package rl

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tegrl/tegrl/rl/transport"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// testCtx bounds a training test, so that a lost actor fails it instead
// of leaving the learner waiting for segments forever.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// remoteActors starts n remote actors (ids from first) against url, each
// with its own cancel.
func remoteActors(t *testing.T, url, run string, first uint32, n int) ([]context.CancelFunc, *sync.WaitGroup) {
	t.Helper()
	var wg sync.WaitGroup
	var cancels []context.CancelFunc
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		wg.Add(1)
		go func(id uint32) {
			defer wg.Done()
			err := RunRemoteActor(ctx, RemoteActorConfig{URL: url, RunID: run, ID: id, IdleTimeout: 2 * time.Minute, Logger: quietLog})
			if err != nil {
				t.Errorf("actor %d: %v", id, err)
			}
		}(first + uint32(i))
	}
	t.Cleanup(func() {
		for _, c := range cancels {
			c()
		}
		wg.Wait()
	})
	return cancels, &wg
}

func startServer(t *testing.T, port int, dir string) *transport.Server {
	t.Helper()
	s, err := transport.StartServer(transport.ServerConfig{Port: port, JetStreamDir: dir, MaxPayload: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestActorKilled: two separate actors feed a learner over an external
// NATS server; one is killed after the first update and the learner
// finishes on the other.
func TestActorKilled(t *testing.T) {
	srv := startServer(t, 0, t.TempDir())
	defer srv.Shutdown()
	cfg := tinyTrain("nats", 0, false)
	cfg.NATSURL, cfg.RunID = srv.ClientURL(), "kill"
	cancels, _ := remoteActors(t, srv.ClientURL(), cfg.RunID, 1, 2)
	cfg.Progress = func(l UpdateLog) {
		if l.Update == 1 {
			cancels[0]() // the actor process dies
		}
	}
	res, err := Train(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// (How much each actor contributed before the kill depends on timing:
	// in this tiny environment one actor can fill the first batches alone.)
	if len(res.Log) != cfg.Updates() || res.Stats.Delivered == 0 {
		t.Fatalf("%d updates from %d actors, %d segments", len(res.Log), res.Stats.Actors, res.Stats.Delivered)
	}
}

// TestLearnerRestart: the learner stops after its second update and a new
// one resumes from the checkpoint; the running actors take the new
// learner's parameters and go on.
func TestLearnerRestart(t *testing.T) {
	srv := startServer(t, 0, t.TempDir())
	defer srv.Shutdown()
	cfg := tinyTrain("nats", 0, false)
	cfg.NATSURL, cfg.RunID = srv.ClientURL(), "restart"
	cfg.TotalSteps = 1000
	cfg.CheckpointDir, cfg.CheckpointEvery = filepath.Join(t.TempDir(), "ckpt"), 1
	remoteActors(t, srv.ClientURL(), cfg.RunID, 1, 2)
	ctx, cancel := context.WithCancel(testCtx(t))
	first := cfg
	first.Progress = func(l UpdateLog) {
		if l.Update == 2 {
			cancel()
		}
	}
	if _, err := Train(ctx, first); !errors.Is(err, context.Canceled) {
		t.Fatalf("first learner: %v", err)
	}
	second := cfg
	second.Resume = cfg.CheckpointDir
	res, err := Train(testCtx(t), second)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Log); n != 5 || res.Log[4].Version != 6 {
		t.Fatalf("resumed run: %d updates, last version %d", n, res.Log[n-1].Version)
	}
	if res.Stats.Delivered == 0 {
		t.Fatal("the actors fed nothing to the restarted learner")
	}
}

// TestNATSServerRestart: the NATS server goes down after the first update
// and comes back on the same port; everyone reconnects, training
// finishes, and the segments lost in between are counted.
func TestNATSServerRestart(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, 0, dir)
	port := srv.Port()
	cfg := tinyTrain("nats", 0, false)
	cfg.NATSURL, cfg.RunID = srv.ClientURL(), "outage"
	cfg.TotalSteps = 1600 // 8 updates
	remoteActors(t, srv.ClientURL(), cfg.RunID, 1, 1)
	var mu sync.Mutex
	var srv2 *transport.Server
	cfg.Progress = func(l UpdateLog) {
		if l.Update == 1 {
			srv.Shutdown()
			time.Sleep(300 * time.Millisecond)
			s, err := transport.StartServer(transport.ServerConfig{Port: port, JetStreamDir: dir, MaxPayload: 8 << 20})
			if err != nil {
				t.Errorf("restart: %v", err)
				return
			}
			mu.Lock()
			srv2 = s
			mu.Unlock()
		}
	}
	res, err := Train(testCtx(t), cfg)
	mu.Lock()
	if srv2 != nil {
		defer srv2.Shutdown()
	}
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Log) != cfg.Updates() || res.Stats.Conn.Reconnects == 0 {
		t.Fatalf("%d updates, learner reconnects %d", len(res.Log), res.Stats.Conn.Reconnects)
	}
	// Segments published while the server was down are lost (no
	// subscriber to take them): counted, and only those, so the count
	// stops growing once everyone is back. (Whether any were published in
	// the outage depends on timing: the count may be 0.)
	var lost []uint64
	for _, l := range res.Log {
		lost = append(lost, l.Lost)
	}
	t.Logf("lost segments by update %v; delivered %d", lost, res.Stats.Delivered)
	// The client's reconnect buffer (8 MiB) bounds what an outage can
	// swallow: here about 110 of these segments. A gap is seen when the
	// actor's next segment arrives, which may be several updates after the
	// reconnect (the learner first drains what it had queued), so the
	// count must have stopped growing by the last two updates, not sooner.
	n := len(lost)
	if !slices.IsSorted(lost) || lost[n-2] != lost[n-1] || lost[n-1] > 200 {
		t.Fatalf("lost segments by update %v (delivered %d): want a bounded count that stops growing after the reconnect", lost, res.Stats.Delivered)
	}
}

// TestActorIdleTimeout: an asynchronous remote actor stops by itself once
// the learner has broadcast nothing new for its idle timeout.
func TestActorIdleTimeout(t *testing.T) {
	srv := startServer(t, 0, t.TempDir())
	defer srv.Shutdown()
	cfg := tinyTrain("nats", 0, false)
	cfg.NATSURL, cfg.RunID = srv.ClientURL(), "idle"
	done := make(chan error, 1)
	go func() {
		done <- RunRemoteActor(context.Background(), RemoteActorConfig{URL: srv.ClientURL(), RunID: cfg.RunID, ID: 1,
			IdleTimeout: 2 * time.Second, Logger: quietLog})
	}()
	if _, err := Train(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the actor still runs 30 s after the learner stopped")
	}
}

// TestActorStopsWhenRunEnds: a separate actor returns as soon as the
// learner finishes (its end message), long before its idle timeout.
func TestActorStopsWhenRunEnds(t *testing.T) {
	srv := startServer(t, 0, t.TempDir())
	defer srv.Shutdown()
	cfg := tinyTrain("nats", 0, false)
	cfg.NATSURL, cfg.RunID = srv.ClientURL(), "ends"
	done := make(chan error, 1)
	go func() {
		done <- RunRemoteActor(context.Background(), RemoteActorConfig{URL: srv.ClientURL(), RunID: cfg.RunID, ID: 1,
			IdleTimeout: 10 * time.Minute, Logger: quietLog})
	}()
	if _, err := Train(testCtx(t), cfg); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("actor: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the actor still runs a minute after the learner finished")
	}
}
