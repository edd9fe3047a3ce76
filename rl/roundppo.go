package rl

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl/transport"
)

// RoundPPOConfig configures TrainRoundPPO: proximal policy optimisation
// (Schulman et al., "Proximal Policy Optimization Algorithms", 2017) of
// the scored allocation policy as a masked softmax over (job, GPU type)
// candidates plus stop (roundSampler), on whole runs of Gavel's
// continuous-jobs protocol. Every field has its default in
// DefaultRoundPPOConfig.
type RoundPPOConfig struct {
	// Multi trains on continuous-multiple (gangs of 1-8 GPUs) instead of
	// continuous-single.
	Multi bool
	// Rates (jobs/h) and Seeds are the training runs.
	Rates []float64
	Seeds []uint64
	// Baseline is the registered policy the reported fitness is relative
	// to: each iteration's greedy weights are scored like ES's, mean
	// average JCT over the training runs divided by Baseline's.
	Baseline string
	// Iterations of PPO; each samples Rollouts runs of every training run
	// with the current weights, then updates them.
	Iterations, Rollouts int
	// RecordProb is the share of a rollout's allocations kept as samples
	// (the rest only count for the returns): neighbouring allocations are
	// nearly the same state, and a run has thousands.
	RecordProb float64
	// HorizonHours is the return's discount time constant: the return at
	// time t is minus the job-hours spent in the system after t, each
	// hour weighted exp(-(s-t)/HorizonHours). Little's law makes the
	// undiscounted sum the total JCT.
	HorizonHours float64
	// Epochs over the samples per iteration, in minibatches of Minibatch
	// allocations.
	Epochs, Minibatch int
	// Clip is PPO's ratio clip; LR the Adam step; EntCoef the entropy
	// bonus's weight.
	Clip, LR, EntCoef float64
	// MaxActive and GraceHours bound a run as in RoundESConfig.
	MaxActive  int
	GraceHours float64
	// Init is the starting weights (env.DefaultScoredWeights if nil).
	Init []float64
	// InitScale multiplies Init: the greedy policy does not change with
	// the weights' scale, but the softmax's temperature does. At scale 1
	// the default weights sample nearly uniformly (4.3 nats per action on
	// gavel-multi at 2.0-2.6 jobs/h) and their rollouts average 2.1x the
	// greedy policy's JCT; at 4 (2.6 nats) they are within 3% of it.
	InitScale float64
	// Seed drives the actions, the recorded allocations and the
	// minibatches.
	Seed uint64
	// Workers runs at once (0: GOMAXPROCS); the result does not depend on it.
	Workers int
	// Actors, when above 0, sample the rollouts instead of the workers:
	// goroutines that receive each iteration's weights and send their
	// rollouts back over Transport ("nats": an embedded NATS server, as
	// the other presets' actors use; "chan": in-process channels). The
	// result does not depend on it.
	Actors    int    `json:"actors"`
	Transport string `json:"transport,omitempty"`
	// ActorTimeout bounds the wait for the next rollout segment (0: 10
	// minutes).
	ActorTimeout time.Duration `json:"-"`
	// SigningKey signs the weight broadcasts; the actors trust only it.
	SigningKey ed25519.PrivateKey `json:"-"`
	// Logger receives the transport's messages (nil: none).
	Logger *slog.Logger `json:"-"`
}

// DefaultRoundPPOConfig is the gavel-multi training of TrainRoundPPO on
// DefaultRoundESConfig's runs: 2.0, 2.4 and 2.6 jobs/h on seeds 100-102.
func DefaultRoundPPOConfig() RoundPPOConfig {
	es := DefaultRoundESConfig()
	return RoundPPOConfig{
		Multi: es.Multi, Rates: es.Rates, Seeds: es.Seeds, Baseline: es.Baseline,
		Iterations: 30, Rollouts: 4, RecordProb: 0.1, HorizonHours: 24,
		Epochs: 4, Minibatch: 64, Clip: 0.2, LR: 0.02, EntCoef: 0, InitScale: 4,
		MaxActive: es.MaxActive, GraceHours: es.GraceHours,
	}
}

// DefaultRoundPPOConfigSingle is the gavel-single training of
// TrainRoundPPO on DefaultRoundESConfigSingle's runs.
func DefaultRoundPPOConfigSingle() RoundPPOConfig {
	c := DefaultRoundPPOConfig()
	es := DefaultRoundESConfigSingle()
	c.Multi, c.Rates, c.Baseline = es.Multi, es.Rates, es.Baseline
	return c
}

// es is the ES configuration with the same runs: its fitness is the one
// PPO reports.
func (c RoundPPOConfig) es() RoundESConfig {
	e := DefaultRoundESConfig()
	e.Multi, e.Rates, e.Seeds, e.Baseline, e.MaxActive, e.GraceHours, e.Workers = c.Multi, c.Rates, c.Seeds, c.Baseline, c.MaxActive, c.GraceHours, c.Workers
	return e
}

// RoundPPOIteration is one PPO iteration's record: the learning curve and
// PPO's standard diagnostics.
type RoundPPOIteration struct {
	Iteration int     `json:"iteration"`
	Fitness   float64 `json:"fitness"` // greedy weights before the update, relative to the baseline
	// RolloutJCT is the rollouts' mean average JCT relative to the
	// baseline's (the stochastic policy's own fitness).
	RolloutJCT float64   `json:"rollout_rel_jct"`
	Saturated  int       `json:"saturated"` // rollouts stopped at the bound
	Samples    int       `json:"samples"`   // recorded allocations
	Choices    int       `json:"choices"`   // actions in them
	Entropy    float64   `json:"entropy"`   // mean per action, before the update
	ApproxKL   float64   `json:"approx_kl"` // mean over the last epoch
	ClipFrac   float64   `json:"clip_frac"` // last epoch
	Weights    []float64 `json:"weights"`   // after the update
}

// RoundPPOResult is TrainRoundPPO's outcome: the greedy weights with the
// best training fitness and the curve.
type RoundPPOResult struct {
	Weights []float64           `json:"weights"`
	Fitness float64             `json:"fitness"`
	Curve   []RoundPPOIteration `json:"curve"`
	// Transport is the learner's transport counters with Actors (nil
	// without).
	Transport *transport.LearnerStats `json:"transport,omitempty"`
}

func (c RoundPPOConfig) validate() error {
	switch {
	case c.Iterations < 1 || c.Rollouts < 2 || c.Epochs < 1 || c.Minibatch < 1:
		return fmt.Errorf("round PPO: need iterations, epochs and minibatch >= 1 and rollouts >= 2 (got %d, %d, %d, %d)", c.Iterations, c.Epochs, c.Minibatch, c.Rollouts)
	case !(c.RecordProb > 0 && c.RecordProb <= 1):
		return fmt.Errorf("round PPO: record probability %v not in (0, 1]", c.RecordProb)
	case !(c.InitScale > 0):
		return fmt.Errorf("round PPO: initial scale %v must be positive", c.InitScale)
	case !(c.HorizonHours > 0) || !(c.Clip > 0) || !(c.LR > 0) || !(c.EntCoef >= 0):
		return fmt.Errorf("round PPO: horizon, clip and lr must be positive and the entropy weight not negative (got %v, %v, %v, %v)", c.HorizonHours, c.Clip, c.LR, c.EntCoef)
	case c.Actors < 0 || (c.Actors > 0 && c.Transport != "" && c.Transport != "nats" && c.Transport != "chan"):
		return fmt.Errorf("round PPO: %d actors over transport %q: want 0 actors, or some over nats or chan", c.Actors, c.Transport)
	case len(c.Rates) == 0 || len(c.Seeds) == 0:
		return fmt.Errorf("round PPO: need training rates and seeds")
	}
	return nil
}

// TrainRoundPPO runs PPO and returns the greedy weights with the best
// training fitness; onIter, when set, sees every iteration.
//
// Each iteration samples Rollouts runs of every training run with the
// same jobs. A recorded allocation's advantage is its rollout's return
// from that time minus the mean return of the other rollouts of the same
// run at the same time: the input-dependent baseline of Mao et al.
// ("Variance Reduction for Reinforcement Learning in Input-Driven
// Environments", ICLR 2019, used by Decima), which removes the variance
// that the arrivals, not the actions, cause. Every action of an
// allocation shares its advantage.
func TrainRoundPPO(ctx context.Context, cfg RoundPPOConfig, onIter func(RoundPPOIteration)) (RoundPPOResult, error) {
	if err := cfg.validate(); err != nil {
		return RoundPPOResult{}, err
	}
	d := env.NumScoredFeatures
	theta := slices.Clone(cfg.Init)
	if theta == nil {
		theta = env.DefaultScoredWeights()
	}
	if len(theta) != d {
		return RoundPPOResult{}, fmt.Errorf("round PPO: %d initial weights, want %d", len(theta), d)
	}
	for i := range theta {
		theta[i] *= cfg.InitScale
	}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return RoundPPOResult{}, err
	}
	es := cfg.es()
	runs := len(cfg.Rates) * len(cfg.Seeds)
	base := make([]runJCT, runs)
	if err := report.ForEach(ctx, runs, cfg.Workers, func(k int) error {
		r, err := es.runAt(tab, k, nil)
		if err != nil {
			return err
		}
		if r.atBound {
			return fmt.Errorf("round PPO: baseline %s stops at the bound on %s: choose lower rates", cfg.Baseline, es.runName(k))
		}
		base[k] = r
		return nil
	}); err != nil {
		return RoundPPOResult{}, err
	}
	adam := newAdam64(d, cfg.LR)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xda3e39cb94b95bdb))
	res := RoundPPOResult{Fitness: math.Inf(1)}
	fit := []float64{0}
	sat := []int{0}
	sample := func(ctx context.Context, it uint64, w []float64) ([]roundRollout, error) {
		return cfg.localRollouts(ctx, tab, es, w, it, runs*cfg.Rollouts)
	}
	var ra *roundActors
	if cfg.Actors > 0 {
		if ra, err = startRoundActors(ctx, cfg, tab, es, runs*cfg.Rollouts); err != nil {
			return RoundPPOResult{}, err
		}
		defer ra.close()
		sample = ra.sample
	}
	for it := 0; it < cfg.Iterations; it++ {
		if err := es.evaluate(ctx, tab, [][]float64{theta}, base, fit, sat); err != nil {
			return res, err
		}
		if fit[0] < res.Fitness {
			res.Fitness, res.Weights = fit[0], slices.Clone(theta)
		}
		rec := RoundPPOIteration{Iteration: it + 1, Fitness: fit[0]}
		ro, err := sample(ctx, uint64(it), theta)
		if err != nil {
			return res, err
		}
		pts := cfg.advantages(ro, base, es.Penalty, &rec)
		cfg.update(ctx, theta, pts, adam, rng, &rec)
		rec.Weights = slices.Clone(theta)
		res.Curve = append(res.Curve, rec)
		if onIter != nil {
			onIter(rec)
		}
	}
	if err := es.evaluate(ctx, tab, [][]float64{theta}, base, fit, sat); err != nil {
		return res, err
	}
	if fit[0] < res.Fitness {
		res.Fitness, res.Weights = fit[0], slices.Clone(theta)
	}
	if ra != nil {
		st := ra.ts.learner.Stats()
		res.Transport = &st
	}
	return res, nil
}

// sampleRollout is rollout i of iteration it under weights w: training
// run i/Rollouts sampled with a seed of (cfg.Seed, i, it), so that the
// result does not depend on who samples it.
func (cfg RoundPPOConfig) sampleRollout(tab *env.ThroughputTable, es RoundESConfig, w []float64, it uint64, i int) (roundRollout, error) {
	seed := EpisodeSeed(cfg.Seed^0x726f756e64, uint32(i), it)
	sm := newRoundSampler(w, false, seed, cfg.RecordProb)
	g := es.run(i/cfg.Rollouts, w)
	g.Policy, g.New = "scored_sampler", func() env.AllocationPolicy { return sm }
	r, err := g.Run(tab)
	if err != nil {
		return roundRollout{}, err
	}
	return roundRollout{index: i, simS: r.SimSeconds, avgJCT: r.AvgJCTHours, saturated: r.Saturated || math.IsNaN(r.AvgJCTHours),
		calls: sm.calls, points: sm.points}, nil
}

// localRollouts samples an iteration's rollouts in this process's
// workers.
func (cfg RoundPPOConfig) localRollouts(ctx context.Context, tab *env.ThroughputTable, es RoundESConfig, w []float64, it uint64, n int) ([]roundRollout, error) {
	out := make([]roundRollout, n)
	err := report.ForEach(ctx, n, cfg.Workers, func(i int) error {
		var err error
		out[i], err = cfg.sampleRollout(tab, es, w, it, i)
		return err
	})
	return out, err
}

// advantages turns an iteration's rollouts (Rollouts per training run, in
// index order) into samples with advantages, normalised to mean 0 and
// standard deviation 1.
func (cfg RoundPPOConfig) advantages(ro []roundRollout, base []runJCT, penalty float64, rec *RoundPPOIteration) []*roundPoint {
	runs := len(base)
	const bin = 360.0 // s: the round length
	gamma := math.Exp(-bin / 3600 / cfg.HorizonHours)
	var pts []*roundPoint
	rel := 0.0
	for k := range runs {
		group := ro[k*cfg.Rollouts : (k+1)*cfg.Rollouts]
		nb := 0
		for _, r := range group {
			nb = max(nb, int(math.Ceil(r.simS/bin))+1)
			if r.saturated {
				rec.Saturated++
				rel += penalty
			} else {
				rel += math.Min(penalty, r.avgJCT/base[k].avg)
			}
		}
		ret := make([][]float64, len(group))
		for m, sm := range group {
			ret[m] = discountedCost(sm.calls, nb, bin, gamma)
		}
		for m, sm := range group {
			for i := range sm.points {
				pt := &sm.points[i]
				b := min(nb-1, int(pt.t/bin))
				others := 0.0
				for o := range group {
					if o != m {
						others += ret[o][b]
					}
				}
				pt.adv = ret[m][b] - others/float64(len(group)-1)
				pts = append(pts, pt)
			}
		}
	}
	rec.RolloutJCT = rel / float64(len(ro))
	if len(pts) > 1 {
		a := make([]float64, len(pts))
		for i, pt := range pts {
			a[i] = pt.adv
		}
		mu, sd := report.MeanStd(a)
		for _, pt := range pts {
			pt.adv = (pt.adv - mu) / math.Max(sd, 1e-8)
		}
	}
	return pts
}

// discountedCost is minus the discounted job-hours in the system from each
// bin of bin seconds on, given the allocations' times and active jobs (a
// job count holds until the next allocation; the last one to the end).
func discountedCost(calls []roundCall, nb int, bin, gamma float64) []float64 {
	jobs := make([]float64, nb)
	c := 0
	for b := range jobs {
		for c < len(calls) && calls[c].t <= float64(b)*bin {
			c++
		}
		if c > 0 {
			jobs[b] = float64(calls[c-1].jobs)
		}
	}
	g := make([]float64, nb+1)
	for b := nb - 1; b >= 0; b-- {
		g[b] = -jobs[b]*bin/3600 + gamma*g[b+1]
	}
	return g[:nb]
}

// update runs cfg.Epochs of PPO's clipped-surrogate ascent on w over pts
// in minibatches, and fills rec's diagnostics.
func (cfg RoundPPOConfig) update(ctx context.Context, w []float64, pts []*roundPoint, adam *adam64, rng *rand.Rand, rec *RoundPPOIteration) {
	d := len(w)
	rec.Samples = len(pts)
	if len(pts) == 0 {
		return
	}
	order := make([]int, len(pts))
	for i := range order {
		order[i] = i
	}
	// One gradient slot per sample, summed in sample order, so that the
	// result does not depend on the number of workers.
	grads := make([]float64, cfg.Minibatch*d)
	stats := make([][4]float64, cfg.Minibatch)
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	bufs := make([]roundGradBuf, workers)
	for ep := 0; ep < cfg.Epochs; ep++ {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		var kl, clipped, choices, ent float64
		for at := 0; at < len(order); at += cfg.Minibatch {
			mb := order[at:min(at+cfg.Minibatch, len(order))]
			clear(grads)
			chunk := (len(mb) + workers - 1) / workers
			_ = report.ForEach(ctx, workers, workers, func(wk int) error {
				for i := wk * chunk; i < min(len(mb), (wk+1)*chunk); i++ {
					pt := pts[mb[i]]
					_, h, k, c := roundPointGrad(pt, w, cfg.Clip, cfg.EntCoef, grads[i*d:(i+1)*d], &bufs[wk])
					stats[i] = [4]float64{h, k, float64(c), float64(len(pt.seq))}
				}
				return nil
			})
			g := make([]float64, d)
			n := 0.0
			for i := range mb {
				for k := range d {
					g[k] += grads[i*d+k]
				}
				ent, kl, clipped, n = ent+stats[i][0], kl+stats[i][1], clipped+stats[i][2], n+stats[i][3]
			}
			choices += n
			if n == 0 {
				continue
			}
			for k := range g {
				g[k] = -g[k] / n // Adam descends; PPO ascends the surrogate
			}
			adam.step(w, g)
		}
		if ep == 0 {
			rec.Entropy, rec.Choices = ent/math.Max(1, choices), int(choices)
		}
		rec.ApproxKL, rec.ClipFrac = kl/math.Max(1, choices), clipped/math.Max(1, choices)
		if ctx.Err() != nil {
			return
		}
	}
}
