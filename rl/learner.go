package rl

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/tegrl/tegrl/nn"
	"github.com/tegrl/tegrl/rl/transport"
)

// UpdateLog is one update's line of the learning log: the PPO diagnostics,
// the episodes that finished in the batch and the transport's counters.
type UpdateLog struct {
	Update        int     `json:"update"`
	Version       uint64  `json:"policy_version"`
	Steps         uint64  `json:"steps"` // decisions learned from so far
	WallS         float64 `json:"wall_s"`
	StepsPerS     float64 `json:"steps_per_s"`   // learner throughput over this update
	BehaviourLag  float64 `json:"behaviour_lag"` // mean versions between acting and learning
	MeanRho       float64 `json:"mean_rho"`      // mean importance ratio π/μ before truncation
	UpdateStats           // policy_loss, value_loss, entropy, approx_kl, ...
	Episodes      int     `json:"episodes"` // finished in this batch
	EpisodeReturn float64 `json:"episodic_return"`
	MeanSlowdown  float64 `json:"mean_slowdown"`
	SLAViolation  float64 `json:"sla_violation_rate"`
	Reward        float64 `json:"reward_mean"`
	RewardSuccess float64 `json:"reward_success"`
	RewardEnergy  float64 `json:"reward_energy"`
	RewardLatency float64 `json:"reward_latency"`
	Safety        int     `json:"safety_violations"`
	// RewardStd50 is the standard deviation of the per-episode mean reward
	// over the last ConvergeWindow episodes; Converged says it is below
	// ConvergeRewardStd.
	RewardStd50 float64 `json:"reward_std_50"`
	Converged   bool    `json:"converged"`
	BadSegments uint64  `json:"bad_segments"`
	Stale       uint64  `json:"stale_segments"`
	Lost        uint64  `json:"lost_segments"`
}

// segSpan locates one segment in the learner's batch.
type segSpan struct {
	start, n int
	boot     int // index into the boot samples, -1 when the last step ends an episode
	version  uint64
}

// Learner is the PPO learner fed by actors' segments: it corrects for
// policy lag with V-trace and broadcasts versioned parameters.
type Learner struct {
	Cfg     TrainConfig
	Pol     *Policy
	PPO     *PPO
	tr      transport.LearnerTransport
	version uint64

	seg   Segment
	batch Samples
	boot  Samples
	beh   []float32
	rew   []float32
	done  []bool
	spans []segSpan
	cur   []float32
	val   []float32
	adv   []float32
	ret   []float32
	bootV []float32
	lr    []float32 // log ratios

	tp          *nn.Tape[float32]
	idx         []int
	steps       uint64
	updates     int
	recent      []float64 // per-episode mean rewards, the last ConvergeWindow
	badSegments uint64
	staleQueued uint64 // segments that went stale in the queue
	start       time.Time
}

// batchModel evaluates the learner's batch for PPO.
type batchModel struct {
	p *Policy
	s *Samples
}

func (m batchModel) Params() *nn.Params[float32] { return m.p.ps }
func (m batchModel) Evaluate(tp *nn.Tape[float32], idx []int) (logp, entropy, value *nn.Tensor[float32]) {
	return m.p.evaluate(tp, m.s, idx)
}

// NewLearner builds the learner's policy and optimiser from cfg.
func NewLearner(cfg TrainConfig, tr transport.LearnerTransport) (*Learner, error) {
	pol, err := NewPolicy(cfg.Policy, cfg.Seed)
	if err != nil {
		return nil, err
	}
	if cfg.Init != nil {
		if _, err := pol.LoadParams(cfg.Init); err != nil {
			return nil, fmt.Errorf("learner: initial policy: %w", err)
		}
	}
	l := &Learner{Cfg: cfg, Pol: pol, tr: tr, tp: nn.NewTape[float32](), start: time.Now()}
	l.batch.Configure(cfg.Policy)
	l.boot.Configure(cfg.Policy)
	if l.PPO, err = NewPPO(batchModel{pol, &l.batch}, cfg.PPO, cfg.Seed); err != nil {
		return nil, err
	}
	return l, nil
}

// Version is the current policy version (0 before the first broadcast).
func (l *Learner) Version() uint64 { return l.version }

// Broadcast publishes the current parameters as the next version.
func (l *Learner) Broadcast() error {
	payload, err := l.Pol.EncodeParams(l.meta(l.version + 1))
	if err != nil {
		return err
	}
	l.version++
	l.tr.SetVersion(l.version)
	if err := l.tr.PublishParams(l.version, payload); err != nil {
		return fmt.Errorf("learner: publishing version %d: %w", l.version, err)
	}
	return nil
}

// Metadata keys of a broadcast that remote actors read.
const (
	metaRun     = "tegrl.run"
	metaVersion = "tegrl.version"
	metaEnv     = "tegrl.env"
	metaActor   = "tegrl.actor"
)

// actorMeta is what a remote actor needs besides the environment.
type actorMeta struct {
	Seed       uint64 `json:"seed"`
	SegmentLen int    `json:"segment_len"`
	MaxAhead   int    `json:"max_ahead,omitempty"`
}

// meta is the metadata of version v's broadcast.
func (l *Learner) meta(v uint64) map[string]string {
	env, _ := json.Marshal(l.Cfg.Env)
	act, _ := json.Marshal(actorMeta{Seed: l.Cfg.Seed, SegmentLen: l.Cfg.SegmentLen, MaxAhead: l.Cfg.maxAhead()})
	return map[string]string{metaRun: l.Cfg.RunID, metaVersion: fmt.Sprint(v), metaEnv: string(env), metaActor: string(act)}
}

// collect reads segments until the batch holds BatchSize decisions.
func (l *Learner) collect(ctx context.Context) ([]EpisodeResult, error) {
	l.batch.Reset()
	l.boot.Reset()
	l.beh, l.rew, l.done, l.spans = l.beh[:0], l.rew[:0], l.done[:0], l.spans[:0]
	var eps []EpisodeResult
	// Synchronous in-process actors send exactly this many segments per
	// update and then wait: count frames, not decisions, so that a
	// segment dropped below cannot leave both sides waiting.
	frames, syncFrames := 0, 0
	if l.Cfg.Sync && l.Cfg.Actors > 0 {
		syncFrames = l.Cfg.BatchSize / l.Cfg.SegmentLen
	}
	for (syncFrames == 0 && l.batch.Len() < l.Cfg.BatchSize) || (syncFrames > 0 && frames < syncFrames) {
		var f transport.Frame
		var ok bool
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case f, ok = <-l.tr.Segments():
		case <-time.After(30 * time.Second):
			// Remote actors may join late; say so rather than sit silent.
			l.Cfg.Logger.Warn("learner: no segments for 30 s; waiting for actors", "version", l.version,
				"have", l.batch.Len(), "want", l.Cfg.BatchSize)
			continue
		}
		if !ok {
			return nil, fmt.Errorf("learner: transport closed")
		}
		frames++
		if f.Version+l.Cfg.MaxLag < l.version {
			// Too old by now: the transport checks the lag when a segment
			// arrives, but a segment can wait in the queue while updates go
			// by, and V-trace's truncated weights learn little from it.
			l.staleQueued++
			continue
		}
		if err := DecodeSegment(f.Payload, &l.seg, l.Cfg.Policy.Candidates, l.batch.WithGraph); err != nil {
			l.badSegments++ // garbage from an actor: dropped and counted
			l.Cfg.Logger.Warn("learner: dropping a bad segment", "actor", f.Actor, "seq", f.Seq, "err", err)
			continue
		}
		s := &l.seg
		span := segSpan{start: l.batch.Len(), n: s.Len(), boot: -1, version: f.Version}
		for i := 0; i < s.Len(); i++ {
			l.batch.CopyFrom(&s.Steps, i)
		}
		if s.Boot.Len() > 0 && !s.Done[s.Len()-1] {
			span.boot = l.boot.Len()
			l.boot.CopyFrom(&s.Boot, 0)
		}
		l.beh = append(l.beh, s.LogP...)
		l.rew = append(l.rew, s.Reward...)
		l.done = append(l.done, s.Done...)
		l.spans = append(l.spans, span)
		eps = append(eps, s.Episodes...)
	}
	return eps, nil
}

// evalChunk is the batch size of the learner's no-gradient passes.
const evalChunk = 256

// forward fills cur (log-probabilities of the behaviour actions under the
// current policy) and val, and bootV for the boot samples.
func (l *Learner) forward() {
	n := l.batch.Len()
	l.cur, l.val = resize(l.cur, n), resize(l.val, n)
	for s := 0; s < n; s += evalChunk {
		e := min(n, s+evalChunk)
		l.idx = resize(l.idx, e-s)
		for i := range l.idx {
			l.idx[i] = s + i
		}
		l.tp.Reset()
		lp, _, v := l.Pol.evaluate(l.tp, &l.batch, l.idx)
		copy(l.cur[s:e], lp.Data)
		copy(l.val[s:e], v.Data)
	}
	nb := l.boot.Len()
	l.bootV = resize(l.bootV, nb)
	for s := 0; s < nb; s += evalChunk {
		e := min(nb, s+evalChunk)
		l.idx = resize(l.idx, e-s)
		for i := range l.idx {
			l.idx[i] = s + i
		}
		l.tp.Reset()
		o := l.Pol.forward(l.tp, &l.boot, l.idx, true)
		copy(l.bootV[s:e], o.value.Data)
	}
}

// Step collects one batch and runs one PPO update on it with V-trace
// advantages and targets; the caller then broadcasts the new parameters
// (Broadcast), after checkpointing if it wants to: actors in sync mode wait
// for that broadcast, so a checkpoint taken before it sees them idle.
func (l *Learner) Step(ctx context.Context, totalUpdates int) (UpdateLog, error) {
	t0 := time.Now()
	eps, err := l.collect(ctx)
	if err != nil {
		return UpdateLog{}, err
	}
	if l.batch.Len() == 0 {
		return UpdateLog{}, fmt.Errorf("learner: every segment of the batch was dropped (%d bad so far)", l.badSegments)
	}
	l.forward()
	n := l.batch.Len()
	l.adv, l.ret, l.lr = resize(l.adv, n), resize(l.ret, n), resize(l.lr, n)
	cfg := &l.Cfg.PPO
	var lag, rho float64
	for i := 0; i < n; i++ {
		l.lr[i] = l.cur[i] - l.beh[i]
		rho += math.Exp(float64(l.lr[i]))
	}
	for _, sp := range l.spans {
		var boot float32
		if sp.boot >= 0 {
			boot = l.bootV[sp.boot]
		}
		e := sp.start + sp.n
		VTrace(l.ret[sp.start:e], l.adv[sp.start:e], l.rew[sp.start:e], l.val[sp.start:e], l.done[sp.start:e],
			l.lr[sp.start:e], boot, cfg.Gamma, cfg.Lambda, cfg.RhoBar, cfg.CBar)
		lag += float64(sp.n) * float64(l.version-min(sp.version, l.version))
	}
	lrNow := cfg.LR
	if cfg.AnnealLR && totalUpdates > 0 {
		lrNow *= max(0, 1-float64(l.updates)/float64(totalUpdates))
	}
	st, err := l.PPO.Update(&Batch{OldLogP: l.cur, Values: l.val, Adv: l.adv, Returns: l.ret}, lrNow)
	if err != nil {
		return UpdateLog{}, err
	}
	l.updates++
	l.steps += uint64(n)
	log := UpdateLog{Update: l.updates, Version: l.version + 1, Steps: l.steps, WallS: time.Since(l.start).Seconds(),
		StepsPerS: float64(n) / time.Since(t0).Seconds(), BehaviourLag: lag / float64(n), MeanRho: rho / float64(n),
		UpdateStats: st, Episodes: len(eps), BadSegments: l.badSegments}
	for _, e := range eps {
		k := float64(len(eps))
		log.EpisodeReturn += e.Return / k
		log.MeanSlowdown += e.MeanSlowdown / k
		log.SLAViolation += e.SLAViolation / k
		log.Reward += e.Reward / k
		log.RewardSuccess += e.Success / k
		log.RewardEnergy += e.Energy / k
		log.RewardLatency += e.Latency / k
		log.Safety += e.Safety
		l.recent = append(l.recent, e.Reward)
	}
	if len(l.recent) > ConvergeWindow {
		l.recent = append(l.recent[:0], l.recent[len(l.recent)-ConvergeWindow:]...)
	}
	if len(l.recent) == ConvergeWindow {
		var m, ss float64
		for _, x := range l.recent {
			m += x / ConvergeWindow
		}
		for _, x := range l.recent {
			ss += (x - m) * (x - m)
		}
		log.RewardStd50 = math.Sqrt(ss / (ConvergeWindow - 1))
		log.Converged = log.RewardStd50 < ConvergeRewardStd
	}
	ts := l.tr.Stats()
	log.Stale, log.Lost = ts.Stale+l.staleQueued, ts.LostSegments
	return log, nil
}
