package rl

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/rl/transport"
)

// roundParams is the learner's broadcast to the round PPO actors: the
// weights to sample iteration Iteration's rollouts with.
type roundParams struct {
	Iteration uint64    `json:"iteration"`
	Weights   []float64 `json:"weights"`
}

// roundActors are the round PPO actors: goroutines that each hold an
// actor transport, take the newest weights the learner broadcast, sample
// their share of the iteration's rollouts (rollout i goes to actor
// i mod Actors) and send them back in segments. Rollout i's seed does
// not depend on the actor, so the rollouts, and the training, are those
// of the in-process workers.
type roundActors struct {
	cfg     RoundPPOConfig
	n       int // rollouts per iteration
	ts      *transportSet
	version uint64
	stop    context.CancelFunc
	wg      sync.WaitGroup
	errs    chan error
}

// startRoundActors opens the transport of cfg and starts cfg.Actors
// actors on it.
func startRoundActors(ctx context.Context, cfg RoundPPOConfig, tab *env.ThroughputTable, es RoundESConfig, n int) (*roundActors, error) {
	// Every chunk of an iteration may wait in the queue at once.
	lcfg := transport.LearnerConfig{QueueSize: 64*n + 64, SigningKey: cfg.SigningKey, Logger: cfg.logger()}
	kind := cfg.Transport
	if kind == "" {
		kind = "nats"
	}
	ts, err := openTransport(ctx, transportOptions{Kind: kind, RunID: "gavel-ppo", Logger: cfg.logger(), SigningKey: cfg.SigningKey, Learner: lcfg})
	if err != nil {
		return nil, err
	}
	actx, stop := context.WithCancel(ctx)
	ra := &roundActors{cfg: cfg, n: n, ts: ts, stop: stop, errs: make(chan error, cfg.Actors)}
	for a := range cfg.Actors {
		tr, err := ts.newActor(uint32(a + 1))
		if err != nil {
			ra.close()
			return nil, fmt.Errorf("round PPO: actor %d: %w", a+1, err)
		}
		ra.wg.Add(1)
		go func() {
			defer ra.wg.Done()
			if err := ra.run(actx, tr, a, tab, es); err != nil && actx.Err() == nil {
				ra.errs <- fmt.Errorf("round PPO: actor %d: %w", a+1, err)
			}
		}()
	}
	return ra, nil
}

func (cfg RoundPPOConfig) logger() *slog.Logger {
	if cfg.Logger != nil {
		return cfg.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// run is actor a's loop: wait for a newer broadcast, sample its rollouts,
// send them.
func (ra *roundActors) run(ctx context.Context, tr transport.ActorTransport, a int, tab *env.ThroughputTable, es RoundESConfig) error {
	var last uint64
	for {
		v, payload, ok := tr.LatestParams()
		if !ok || v <= last {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(2 * time.Millisecond):
			}
			continue
		}
		last = v
		var p roundParams
		if err := json.Unmarshal(payload, &p); err != nil || len(p.Weights) != env.NumScoredFeatures {
			return fmt.Errorf("parameters of version %d: %d weights, %v", v, len(p.Weights), err)
		}
		for i := a; i < ra.n; i += ra.cfg.Actors {
			r, err := ra.cfg.sampleRollout(tab, es, p.Weights, p.Iteration, i)
			if err != nil {
				return err
			}
			for _, chunk := range encodeRoundRollout(&r, roundChunkBytes) {
				if err := tr.PublishSegment(v, chunk); err != nil {
					return err
				}
			}
			if ctx.Err() != nil {
				return nil
			}
		}
	}
}

// sample broadcasts w for iteration it and collects every rollout of it.
func (ra *roundActors) sample(ctx context.Context, it uint64, w []float64) ([]roundRollout, error) {
	ra.version++
	payload, err := json.Marshal(roundParams{Iteration: it, Weights: w})
	if err != nil {
		return nil, err
	}
	if err := ra.ts.learner.PublishParams(ra.version, payload); err != nil {
		return nil, fmt.Errorf("round PPO: broadcasting the weights: %w", err)
	}
	out := make([]roundRollout, ra.n)
	parts := make([][][]roundPoint, ra.n) // each rollout's points by chunk
	got := make([][]bool, ra.n)           // chunks received per rollout
	left := ra.n
	idle := time.NewTimer(ra.cfg.actorTimeout())
	defer idle.Stop()
	for left > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-ra.errs:
			return nil, err
		case <-idle.C:
			return nil, fmt.Errorf("round PPO: %d of %d rollouts of iteration %d did not arrive within %v (transport %+v)", left, ra.n, it+1, ra.cfg.actorTimeout(), ra.ts.learner.Stats())
		case f := <-ra.ts.learner.Segments():
			if f.Version != ra.version {
				continue // an older iteration's (the transport drops most)
			}
			idle.Reset(ra.cfg.actorTimeout())
			c, err := decodeRoundChunk(f.Payload, env.NumScoredFeatures)
			if err != nil || c.rollout >= ra.n || (got[c.rollout] != nil && len(got[c.rollout]) != c.chunks) {
				return nil, fmt.Errorf("round PPO: a bad segment from actor %d: %v", f.Actor, err)
			}
			if got[c.rollout] == nil {
				got[c.rollout], parts[c.rollout] = make([]bool, c.chunks), make([][]roundPoint, c.chunks)
			}
			if got[c.rollout][c.chunk] {
				continue // a duplicate
			}
			got[c.rollout][c.chunk], parts[c.rollout][c.chunk] = true, c.points
			if c.head != nil {
				out[c.rollout] = *c.head
			}
			if complete(got[c.rollout]) {
				left--
			}
		}
	}
	// Chunks may arrive in any order: the points in the order sampled.
	for i := range out {
		for _, p := range parts[i] {
			out[i].points = append(out[i].points, p...)
		}
	}
	return out, nil
}

func complete(got []bool) bool {
	for _, g := range got {
		if !g {
			return false
		}
	}
	return true
}

// actorTimeout is how long the learner waits for the next segment.
func (cfg RoundPPOConfig) actorTimeout() time.Duration {
	if cfg.ActorTimeout > 0 {
		return cfg.ActorTimeout
	}
	return 10 * time.Minute
}

// close stops the actors and the transport.
func (ra *roundActors) close() {
	ra.stop()
	ra.wg.Wait()
	ra.ts.close()
}
