package rl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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
	Env          ClusterEnvConfig
	Policy       PolicyConfig
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
	rng *rand.Rand
	log *slog.Logger

	version   uint64
	lastNewer time.Time
	episode   uint64
	seg       Segment
	one       Samples
	buf       []byte
	segments  uint64

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
	a := &Actor{cfg: cfg, tr: tr, pol: pol, env: e, log: cfg.Logger.With("actor", cfg.ID),
		rng: rand.New(rand.NewPCG(cfg.Seed, 0x6163746f72000000|uint64(cfg.ID)))}
	a.one.K = cfg.Policy.Candidates
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

// errIdle ends an actor whose learner went quiet.
var errIdle = errors.New("actor: no new parameters within the idle timeout")

// refresh loads newer parameters if the transport has them. With wait it
// blocks until a version newer than the current one arrives.
func (a *Actor) refresh(ctx context.Context, wait bool) error {
	for {
		v, payload, ok := a.tr.LatestParams()
		if ok && v > a.version {
			if _, err := a.pol.LoadParams(payload); err != nil {
				a.log.Warn("refusing parameters", "version", v, "err", err)
			} else {
				a.version, a.lastNewer = v, time.Now()
				return nil
			}
		}
		if !wait {
			return nil
		}
		if a.cfg.IdleTimeout > 0 && time.Since(a.lastNewer) > a.cfg.IdleTimeout {
			return errIdle
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
	if err := a.refresh(ctx, true); err != nil {
		return quiet(err)
	}
	K := a.cfg.Policy.Candidates
	a.seg.Reset(K)
	epRet, epSteps := 0.0, 0
	seed := EpisodeSeed(a.cfg.Seed, a.cfg.ID, a.episode)
	d, err := a.env.ResetErr(seed)
	if err != nil {
		return err
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
			var done bool
			if d.Obs == nil {
				done = true
			} else {
				d, r, done = a.env.Step(env.Wait)
			}
			epRet += r
			if n := a.seg.Len(); n > 0 {
				a.seg.Reward[n-1] += float32(r)
			}
			if done {
				if n := a.seg.Len(); n > 0 {
					a.seg.Done[n-1] = true
				}
				a.finishEpisode(seed, epRet, epSteps)
				epRet, epSteps = 0, 0
				a.episode++
				seed = EpisodeSeed(a.cfg.Seed, a.cfg.ID, a.episode)
				if d, err = a.env.ResetErr(seed); err != nil {
					return err
				}
			}
			continue
		}
		if a.seg.Len() == a.cfg.SegmentLen {
			// The decision after a full segment is its bootstrap sample.
			if !a.seg.Done[a.seg.Len()-1] {
				a.seg.Boot.CopyFrom(&a.one, 0)
			}
			if err := a.publish(); err != nil {
				return err
			}
			wait := a.cfg.SyncSegments > 0 && a.segments%uint64(a.cfg.SyncSegments) == 0
			if err := a.refresh(ctx, wait); err != nil {
				return quiet(err)
			}
			a.seg.Reset(K)
		}
		a.seg.Steps.CopyFrom(&a.one, 0)
		i := a.seg.Len() - 1
		act, logp, value := a.pol.Sample(&a.seg.Steps, i, a.rng, false)
		var r float64
		var done bool
		d, r, done = a.env.Step(act)
		a.Steps++
		epRet += r
		epSteps++
		a.seg.LogP = append(a.seg.LogP, logp)
		a.seg.Value = append(a.seg.Value, value)
		a.seg.Reward = append(a.seg.Reward, float32(r))
		a.seg.Done = append(a.seg.Done, done)
		if done {
			a.finishEpisode(seed, epRet, epSteps)
			epRet, epSteps = 0, 0
			a.episode++
			seed = EpisodeSeed(a.cfg.Seed, a.cfg.ID, a.episode)
			if d, err = a.env.ResetErr(seed); err != nil {
				return err
			}
		}
	}
}

// quiet maps the ways an actor is told to stop to a nil error.
func quiet(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errIdle) {
		return nil
	}
	return err
}

func (a *Actor) finishEpisode(seed uint64, ret float64, steps int) {
	m := a.env.Sim().Metrics()
	a.seg.Episodes = append(a.seg.Episodes, EpisodeResult{
		Seed: seed, Return: ret, Steps: steps, MeanSlowdown: m.MeanSlowdown, SLAViolation: m.SLAViolationRate,
		Reward: m.RewardMean, Success: m.RewardSuccess, Energy: m.RewardEnergy, Latency: m.RewardLatency,
		Completed: m.JobsCompleted, Safety: m.SafetyViolations,
	})
}

func (a *Actor) publish() error {
	a.buf = AppendSegment(a.buf[:0], &a.seg)
	a.segments++
	if err := a.tr.PublishSegment(a.version, a.buf); err != nil {
		// A lost segment is counted by the learner's gap detector; the
		// actor goes on (the connection reconnects by itself).
		a.log.Warn("publishing a segment", "err", err)
	}
	return nil
}
