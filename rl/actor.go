package rl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/rl/transport"
)

// ActorConfig configures one IMPALA actor.
type ActorConfig struct {
	ID         uint32
	Seed       uint64 // the run's seed: episode seeds and sampling derive from it and ID
	SegmentLen int    // steps per segment (default 100)
	// SyncSegments, when > 0, makes the actor wait for a newer policy
	// version after every SyncSegments segments (on-policy lockstep; with
	// one actor the run is deterministic). 0 never waits (IMPALA).
	SyncSegments int
	// MaxAhead, in IMPALA mode (SyncSegments 0) and when > 0, makes the
	// actor wait for a newer policy version once it has published MaxAhead
	// segments under its current one, for at most aheadWait: a learner
	// drops the segments it cannot use, and actors that ran ahead of it
	// only flooded the transport with them (over NATS on two cores, enough
	// to make the server drop the learner's connection). A wait that times
	// out lets the actor publish MaxAhead more, so lost segments never
	// stall a run.
	MaxAhead int
	Env      ClusterEnvConfig
	Policy   PolicyConfig
	// Graph adds graph rows to the segments even when the policy does not
	// need them (a GNN teacher labels an MLP student's decisions).
	Graph bool
	// IdleTimeout stops the actor when no newer parameters arrived for
	// this long (0: never): a learner that finished or died leaves no
	// orphans behind.
	IdleTimeout time.Duration
	Logger      *slog.Logger
}

// Actor runs episodes with a local copy of the policy and publishes
// trajectory segments; between segments it switches to the newest
// parameters the learner broadcast, without stopping.
type Actor struct {
	cfg ActorConfig
	tr  transport.ActorTransport
	pol *Policy
	env *ClusterEnv
	src *rand.PCG
	rng *rand.Rand
	log *slog.Logger

	// The current episode's actions, so that a checkpoint can replay the
	// episode to where it stood (the simulator itself is not serialised).
	actions []env.Action
	epRet   float64
	epSteps int
	seed    uint64
	// Sync-mode snapshot taken before each wait, and a restored one.
	snapMu   sync.Mutex
	snap     *ActorState
	restored *ActorState

	version   uint64
	lastNewer time.Time
	// Failed publishes since the last warning, and when it was logged: a
	// broker that is gone fails every segment, and one line per
	// publishWarnEvery is enough to say so.
	publishFails int
	publishWarn  time.Time
	episode      uint64
	seg          Segment
	one          Samples
	buf          []byte
	segments     uint64
	ahead        int // segments published since the version last changed (MaxAhead)

	// Steps counts decisions taken.
	Steps uint64
}

// NewActor prepares an actor on tr.
func NewActor(cfg ActorConfig, tr transport.ActorTransport) (*Actor, error) {
	if cfg.SegmentLen <= 0 {
		cfg.SegmentLen = 100
	}
	if cfg.SegmentLen > maxSegLen {
		return nil, fmt.Errorf("actor: segment length %d above %d", cfg.SegmentLen, maxSegLen)
	}
	pol, err := NewPolicy(cfg.Policy, 0)
	if err != nil {
		return nil, err
	}
	e, err := NewClusterEnv(cfg.Env)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	src := rand.NewPCG(cfg.Seed, 0x6163746f72000000|uint64(cfg.ID))
	a := &Actor{cfg: cfg, tr: tr, pol: pol, env: e, log: cfg.Logger.With("actor", cfg.ID), src: src, rng: rand.New(src)}
	a.one.Configure(cfg.Policy)
	a.one.WithGraph = a.one.WithGraph || cfg.Graph
	return a, nil
}

// EpisodeSeed is the seed of an actor's n-th training episode: disjoint
// from the small seeds used for evaluation (1..10^6).
func EpisodeSeed(run uint64, actor uint32, n uint64) uint64 {
	z := run*0x9e3779b97f4a7c15 + uint64(actor)*0xbf58476d1ce4e5b9 + n*0x94d049bb133111eb
	z ^= z >> 31
	z *= 0xd6e8feb96a8a2ec5
	z ^= z >> 29
	return 1_000_000 + z%(1<<52)
}

// timeNow is the wall clock of idle timeouts.
var timeNow = time.Now

// errIdle ends an actor whose learner went quiet.
var errIdle = errors.New("actor: no new parameters within the idle timeout")

// errEnded ends an actor whose learner said the run has ended.
var errEnded = errors.New("actor: the learner ended the run")

// ender is a transport that hears the learner's end of run (NATS).
type ender interface{ Ended() bool }

// latestFetcher is a transport that can also look up the newest
// parameters itself (NATS: the key-value store), for a broadcast that
// arrived before the actor's subscription.
type latestFetcher interface {
	FetchLatestParams(ctx context.Context) (uint64, []byte, error)
}

// aheadWait bounds an actor's wait for a newer version after MaxAhead
// segments.
var aheadWait = time.Second

// refresh loads newer parameters if the transport has them. With wait it
// blocks until a version newer than the current one arrives, or, when
// until is not zero, until then.
func (a *Actor) refresh(ctx context.Context, wait bool, until time.Time) error {
	waited := 0
	for {
		v, payload, ok := a.tr.LatestParams()
		if ok && v > a.version {
			if _, err := a.pol.LoadParams(payload); err != nil {
				a.log.Warn("refusing parameters", "version", v, "err", err)
			} else {
				a.version, a.lastNewer, a.ahead = v, time.Now(), 0
				return nil
			}
		}
		if e, ok := a.tr.(ender); ok && e.Ended() {
			return errEnded
		}
		if a.cfg.IdleTimeout > 0 && time.Since(a.lastNewer) > a.cfg.IdleTimeout {
			return errIdle // the learner died: no orphan actors
		}
		if !wait {
			return nil
		}
		if !until.IsZero() && time.Now().After(until) {
			a.ahead = 0 // no newer version in time: publish MaxAhead more
			return nil
		}
		if waited++; waited%1000 == 0 {
			if f, ok := a.tr.(latestFetcher); ok {
				fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, _, _ = f.FetchLatestParams(fctx) // best effort: the broadcast may still come
				cancel()
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Microsecond):
		}
	}
}

// Run acts until ctx is cancelled or the learner goes quiet; it returns
// nil in both cases, and an error for anything else.
func (a *Actor) Run(ctx context.Context) error {
	defer a.env.Close()
	a.lastNewer = time.Now()
	K := a.cfg.Policy.Candidates
	a.seg.Reset(K, a.one.WithGraph)
	var d Decision
	var err error
	resumeWait := false
	if st := a.restored; st != nil {
		if d, err = a.replay(st); err != nil {
			return err
		}
		resumeWait = true
	} else {
		if err := a.refresh(ctx, true, time.Time{}); err != nil {
			return quiet(err)
		}
		if d, err = a.newEpisode(); err != nil {
			return err
		}
	}
	for {
		if ctx.Err() != nil {
			return nil
		}
		a.one.Reset()
		if d.Obs == nil || !a.pol.Featurize(d, &a.one) {
			// No decision to learn from: the job waits (or the episode had
			// no decisions at all).
			var r float64
			done := true
			if d.Obs != nil {
				d, r, done = a.step(env.Wait)
			}
			if n := a.seg.Len(); n > 0 {
				a.seg.Reward[n-1] += float32(r)
				a.seg.Done[n-1] = a.seg.Done[n-1] || done
			}
			if done {
				a.finishEpisode()
				if d, err = a.newEpisode(); err != nil {
					return err
				}
			}
			continue
		}
		switch {
		case resumeWait:
			// Restored at the wait that followed a full segment.
			resumeWait = false
			if err := a.refresh(ctx, true, time.Time{}); err != nil {
				return quiet(err)
			}
			a.seg.Reset(K, a.one.WithGraph)
		case a.seg.Len() == a.cfg.SegmentLen:
			// The decision after a full segment is its bootstrap sample.
			if !a.seg.Done[a.seg.Len()-1] {
				a.seg.Boot.CopyFrom(&a.one, 0)
			}
			wait := a.cfg.SyncSegments > 0 && (a.segments+1)%uint64(a.cfg.SyncSegments) == 0
			if wait {
				a.snapshot() // the state at the wait below, before the learner can see the segment
			}
			a.publish()
			var until time.Time
			if !wait && a.cfg.SyncSegments == 0 && a.cfg.MaxAhead > 0 && a.ahead >= a.cfg.MaxAhead {
				wait, until = true, time.Now().Add(aheadWait)
			}
			if err := a.refresh(ctx, wait, until); err != nil {
				return quiet(err)
			}
			a.seg.Reset(K, a.one.WithGraph)
		}
		a.seg.Steps.CopyFrom(&a.one, 0)
		i := a.seg.Len() - 1
		act, logp, value := a.pol.Sample(&a.seg.Steps, i, a.rng, false)
		act = a.pol.feat.placeGPU(act)
		var r float64
		var done bool
		d, r, done = a.step(act)
		a.Steps++
		a.seg.LogP = append(a.seg.LogP, logp)
		a.seg.Value = append(a.seg.Value, value)
		a.seg.Reward = append(a.seg.Reward, float32(r))
		a.seg.Done = append(a.seg.Done, done)
		if done {
			a.finishEpisode()
			if d, err = a.newEpisode(); err != nil {
				return err
			}
		}
	}
}

// step applies act, keeping the episode's log and return.
func (a *Actor) step(act env.Action) (Decision, float64, bool) {
	a.actions = append(a.actions, act)
	d, r, done := a.env.Step(act)
	a.epRet += r
	if act.Node >= 0 {
		a.epSteps++
	}
	return d, r, done
}

// newEpisode starts the actor's next episode.
func (a *Actor) newEpisode() (Decision, error) {
	a.seed = EpisodeSeed(a.cfg.Seed, a.cfg.ID, a.episode)
	a.actions, a.epRet, a.epSteps = a.actions[:0], 0, 0
	return a.env.Reset(a.seed)
}

// quiet maps the ways an actor is told to stop to a nil error.
func quiet(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errIdle) || errors.Is(err, errEnded) {
		return nil
	}
	return err
}

func (a *Actor) finishEpisode() {
	a.episode++
	if a.env.Sim() == nil { // a saturation episode
		run := a.env.SaturationRun()
		a.seg.Episodes = append(a.seg.Episodes, EpisodeResult{Seed: a.seed, Return: a.epRet, Steps: a.epSteps, Completed: run.Pods - run.Dropped})
		return
	}
	m := a.env.Sim().Metrics()
	a.seg.Episodes = append(a.seg.Episodes, EpisodeResult{
		Seed: a.seed, Return: a.epRet, Steps: a.epSteps, MeanSlowdown: m.MeanSlowdown, SLAViolation: m.SLAViolationRate,
		Reward: m.RewardMean, Success: m.RewardSuccess, Energy: m.RewardEnergy, Latency: m.RewardLatency,
		Completed: m.JobsCompleted, Safety: m.SafetyViolations,
	})
}

func (a *Actor) publish() {
	a.buf = AppendSegment(a.buf[:0], &a.seg)
	a.segments++
	a.ahead++
	if err := a.tr.PublishSegment(a.version, a.buf); err != nil {
		// A lost segment is counted by the learner's gap detector; the
		// actor goes on (the connection reconnects by itself).
		a.publishFails++
		if now := timeNow(); now.Sub(a.publishWarn) >= publishWarnEvery {
			a.log.Warn("publishing segments failed", "failed", a.publishFails, "err", err)
			a.publishFails, a.publishWarn = 0, now
		}
	}
}

// publishWarnEvery spaces the warnings of failed publishes.
const publishWarnEvery = 5 * time.Second
