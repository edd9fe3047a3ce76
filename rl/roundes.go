package rl

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// RoundESConfig configures TrainRoundES: evolution strategies (Salimans et
// al., "Evolution Strategies as a Scalable Alternative to Reinforcement
// Learning", 2017) on the weights of env.ScoredPolicy, each candidate
// scored by whole runs of Gavel's continuous-jobs protocol. Every field
// has its default in DefaultRoundESConfig.
type RoundESConfig struct {
	// Multi trains on continuous-multiple (gangs of 1-8 GPUs) instead of
	// continuous-single.
	Multi bool
	// Clairvoyant trains env.ScoredPolicy with its clairvoyant feature (a
	// job's remaining run time): the result is a bound to measure the
	// non-clairvoyant policies against, not a deployable policy.
	Clairvoyant bool
	// Pack trains env.PackedScoredPolicy: the same score, with waiting
	// jobs space-sharing GPUs with running ones (Gavel's packing).
	Pack bool
	// Exchange trains env.ScoredPolicy with its exchange pass: the score
	// decides which gangs run, swaps and moves between types where they
	// run.
	Exchange bool
	// Consolidate trains env.ScoredPolicy with Consolidate: on the
	// node-list clusters of the training scenarios placement-sensitive
	// gangs run on one server only.
	Consolidate bool
	// Upgrade trains env.ScoredPolicy with Upgrade: between allocations
	// an allocated job may also run on idle GPUs of a type faster for it.
	Upgrade bool
	// Tiered trains env.TieredPackedPolicy instead: the weights of its
	// tier score, then its log priority ratio and the ratio's load slope,
	// inside Gavel's max_min_fairness_packed LP.
	Tiered bool
	// GangGuardHours is the tiered policy's env.TieredPackedPolicy
	// GangGuardHours: kept as given, not trained (tegrl train --init
	// carries it from the file).
	GangGuardHours float64
	// AgeGuardHours is the tiered policy's env.TieredPackedPolicy
	// AgeGuardHours, kept and carried like GangGuardHours.
	AgeGuardHours float64
	// TieDeficit is the tiered policy's env.TieredPackedPolicy
	// TieDeficit, kept and carried like GangGuardHours.
	TieDeficit float64
	// Rates (jobs/h) and Seeds are the training runs; a candidate's
	// fitness is the mean over them of its average JCT divided by
	// Baseline's on the same rate and seed (1: as good as the baseline).
	Rates []float64
	Seeds []uint64
	// Scenarios are more training runs on other GPU clusters (node-list
	// clusters at an offered load), scored like the protocol's runs:
	// relative to Baseline on the same cluster, load and seed.
	Scenarios []RoundESScenario
	// Baseline is the registered policy each run's JCT is relative to.
	Baseline string
	// Iterations of ES; each evaluates 2·Pairs candidates (antithetic
	// pairs θ ± σε) on every training run.
	Iterations, Pairs int
	// Sigma is the perturbation's standard deviation; LR the Adam step on
	// the rank-shaped gradient estimate.
	Sigma, LR float64
	// Penalty is the relative JCT charged for a run that stopped at the
	// simulator's bound (above capacity), or that left every job idle.
	Penalty float64
	// TailWeight charges a run's p99 JCT beyond Baseline's: a run's
	// relative JCT gains TailWeight × max(0, p99 / Baseline's p99 − 1),
	// so a candidate cannot buy its mean with the longest jobs' wait.
	// 0 scores the mean alone.
	TailWeight float64
	// MaxActive bounds a training run (env.RoundConfig.MaxActive): a bad
	// candidate is cut short at this many active jobs.
	MaxActive int
	// GraceHours bounds a training run's simulated time: the last measured
	// job's expected arrival (5,000 jobs at the rate) plus this many hours.
	GraceHours float64
	// Init is the starting weights (env.DefaultScoredWeights if nil); a
	// clairvoyant run extends non-clairvoyant ones with a 0 weight.
	Init []float64
	// Seed drives the perturbations.
	Seed uint64
	// Workers runs at once (0: GOMAXPROCS); the result does not depend on it.
	Workers int
}

// RoundESScenario is one training run on a GPU scenario other than
// Gavel's protocol (report.RunGPU).
type RoundESScenario struct {
	// Scenario is CLUSTER-WORKLOAD (report.ParseGPUScenario), e.g.
	// "openb/16-multi".
	Scenario string `json:"scenario"`
	// Load is the offered GPU load.
	Load float64 `json:"load"`
	// Seed draws the run's jobs.
	Seed uint64 `json:"seed"`
}

// ParseRoundESScenarios parses CLUSTER-WORKLOAD@LOAD[:SEED] entries,
// comma-separated; an entry without a seed runs once per seed of seeds.
func ParseRoundESScenarios(spec string, seeds []uint64) ([]RoundESScenario, error) {
	var out []RoundESScenario
	for _, e := range strings.Split(spec, ",") {
		e = strings.TrimSpace(e)
		name, rest, ok := strings.Cut(e, "@")
		if !ok {
			return nil, fmt.Errorf("%q is not CLUSTER-WORKLOAD@LOAD[:SEED]", e)
		}
		if _, err := report.ParseGPUScenario(name); err != nil {
			return nil, err
		}
		ls, ss, hasSeed := strings.Cut(rest, ":")
		load, err := strconv.ParseFloat(ls, 64)
		if err != nil || !(load > 0 && load < 100) {
			return nil, fmt.Errorf("%q: load %q is not in (0, 100)", e, ls)
		}
		run := seeds
		if hasSeed {
			s, err := strconv.ParseUint(ss, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q: seed %q is not a non-negative integer", e, ss)
			}
			run = []uint64{s}
		}
		for _, s := range run {
			out = append(out, RoundESScenario{Scenario: name, Load: load, Seed: s})
		}
	}
	return out, nil
}

// DefaultRoundESConfig is the gavel-multi training: rates 2.0, 2.4 and
// 2.6 jobs/h (the largest gaps below the rate where every policy diverges)
// on training seeds 100-102, relative to fifo_perf.
func DefaultRoundESConfig() RoundESConfig {
	return RoundESConfig{
		Multi: true, Rates: []float64{2.0, 2.4, 2.6}, Seeds: []uint64{100, 101, 102}, Baseline: "fifo_perf",
		Iterations: 30, Pairs: 8, Sigma: 0.3, LR: 0.1, Penalty: 5, MaxActive: 1500, GraceHours: 500,
	}
}

// DefaultRoundESConfigSingle is the gavel-single training: the
// continuous-single protocol at 4.8, 5.2 and 5.6 jobs/h, where the best
// heuristic is furthest above the floor while every seed still finishes,
// relative to max_min_fairness_perf (fifo_perf stops at the bound there
// on some seeds).
func DefaultRoundESConfigSingle() RoundESConfig {
	c := DefaultRoundESConfig()
	c.Multi, c.Rates, c.Baseline = false, []float64{4.8, 5.2, 5.6}, "max_min_fairness_perf"
	return c
}

// DefaultRoundESConfigTiered is the tiered policy's training on the
// continuous-single protocol: 6.4 and 7.0 jobs/h, where
// max_min_fairness_packed is furthest above the floor while every seed
// still finishes, on training seeds 100-101, relative to
// max_min_fairness_packed. Each run solves Gavel's packed LP at every
// arrival and completion (about 12 s a run), so the population and the
// iterations are smaller than the scored policy's: about 30 minutes on 2
// cores.
func DefaultRoundESConfigTiered() RoundESConfig {
	c := DefaultRoundESConfigSingle()
	c.Tiered, c.Rates, c.Seeds, c.Baseline = true, []float64{6.4, 7.0}, []uint64{100, 101}, "max_min_fairness_packed"
	c.Iterations, c.Pairs = 8, 4
	return c
}

// RoundESIteration is one ES iteration's record: the learning curve.
type RoundESIteration struct {
	Iteration int       `json:"iteration"`
	Fitness   float64   `json:"fitness"`   // mean relative JCT of the weights after the update
	BestPop   float64   `json:"best_pop"`  // best candidate of the population
	MeanPop   float64   `json:"mean_pop"`  // population mean
	Weights   []float64 `json:"weights"`   // after the update
	Saturated int       `json:"saturated"` // population runs stopped at the bound
}

// RoundESResult is TrainRoundES's outcome: the weights of the iteration
// with the best training fitness and the curve.
type RoundESResult struct {
	Weights []float64          `json:"weights"`
	Fitness float64            `json:"fitness"`
	Curve   []RoundESIteration `json:"curve"`
}

// TrainRoundES runs ES and returns the best weights seen on the training
// runs; onIter, when set, sees every iteration.
func TrainRoundES(ctx context.Context, cfg RoundESConfig, onIter func(RoundESIteration)) (RoundESResult, error) {
	d, nonClair := len(env.ScoredFeatureNames(cfg.Clairvoyant)), env.NumScoredFeatures
	theta := slices.Clone(cfg.Init)
	if cfg.GangGuardHours != 0 && !(cfg.Tiered && cfg.GangGuardHours > 0 && cfg.GangGuardHours < math.Inf(1)) {
		return RoundESResult{}, fmt.Errorf("round ES: gang guard %v h: want a finite positive number of hours, on a tiered policy", cfg.GangGuardHours)
	}
	if cfg.AgeGuardHours != 0 && !(cfg.Tiered && cfg.AgeGuardHours > 0 && cfg.AgeGuardHours < math.Inf(1)) {
		return RoundESResult{}, fmt.Errorf("round ES: age guard %v h: want a finite positive number of hours, on a tiered policy", cfg.AgeGuardHours)
	}
	if cfg.TieDeficit != 0 && !(cfg.Tiered && cfg.TieDeficit > 0 && cfg.TieDeficit <= env.MaxTieDeficit) {
		return RoundESResult{}, fmt.Errorf("round ES: tie-break deficit weight %v: want a weight in (0, %g], on a tiered policy", cfg.TieDeficit, float64(env.MaxTieDeficit))
	}
	if cfg.Tiered {
		if cfg.Pack {
			return RoundESResult{}, fmt.Errorf("round ES: a tiered policy packs through its LP (Pack and Tiered together)")
		}
		if cfg.Exchange {
			return RoundESResult{}, fmt.Errorf("round ES: a tiered policy's LP already matches jobs to types (Exchange and Tiered together)")
		}
		if cfg.Consolidate {
			return RoundESResult{}, fmt.Errorf("round ES: a tiered policy time-shares through its LP and places as max_min_fairness_packed does (Consolidate and Tiered together)")
		}
		if cfg.Upgrade {
			return RoundESResult{}, fmt.Errorf("round ES: the mechanism already runs a tiered policy's jobs on GPUs its LP leaves idle (Upgrade and Tiered together)")
		}
		d, nonClair = len(env.TieredFeatureNames(cfg.Clairvoyant))+2, len(env.TieredFeatures)+2
		if theta == nil {
			w, r := env.DefaultTieredParams(cfg.Clairvoyant)
			theta = append(w, r, 0)
		}
		if cfg.Clairvoyant && len(theta) == nonClair {
			// The log ratio and its load slope stay last.
			k := nonClair - 2
			theta = append(theta[:k:k], 0, theta[k], theta[k+1])
		}
	}
	if theta == nil {
		theta = env.DefaultScoredWeights()
	}
	if cfg.Clairvoyant && len(theta) == nonClair {
		theta = append(theta, 0)
	}
	if len(theta) != d {
		return RoundESResult{}, fmt.Errorf("round ES: %d initial weights, want %d", len(theta), d)
	}
	if cfg.Iterations < 1 || cfg.Pairs < 1 || !(cfg.Sigma > 0) || !(cfg.LR > 0) || len(cfg.Rates) == 0 || len(cfg.Seeds) == 0 {
		return RoundESResult{}, fmt.Errorf("round ES: need iterations, pairs, sigma, lr, rates and seeds (got %+v)", cfg)
	}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return RoundESResult{}, err
	}
	runs := len(cfg.Rates)*len(cfg.Seeds) + len(cfg.Scenarios)
	base := make([]runJCT, runs)
	if err := report.ForEach(ctx, runs, cfg.Workers, func(k int) error {
		r, err := cfg.runAt(tab, k, nil)
		if err != nil {
			return err
		}
		if r.atBound {
			return fmt.Errorf("round ES: baseline %s stops at the bound on %s: choose lower rates or loads", cfg.Baseline, cfg.runName(k))
		}
		base[k] = r
		return nil
	}); err != nil {
		return RoundESResult{}, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15))
	eps := make([][]float64, cfg.Pairs)
	cand := make([][]float64, 2*cfg.Pairs+1) // the population, then theta
	fit := make([]float64, len(cand))
	sat := make([]int, len(cand))
	adam := newAdam64(d, cfg.LR)
	res := RoundESResult{Fitness: math.Inf(1)}
	for it := 0; it < cfg.Iterations; it++ {
		for k := range eps {
			eps[k] = make([]float64, d)
			for i := range eps[k] {
				eps[k][i] = rng.NormFloat64()
			}
			cand[2*k], cand[2*k+1] = axpy(theta, cfg.Sigma, eps[k]), axpy(theta, -cfg.Sigma, eps[k])
		}
		cand[len(cand)-1] = slices.Clone(theta)
		if err := cfg.evaluate(ctx, tab, cand, base, fit, sat); err != nil {
			return res, err
		}
		if f := fit[len(fit)-1]; f < res.Fitness { // theta before this update
			res.Fitness, res.Weights = f, slices.Clone(theta)
		}
		u := centredRanks(fit[:len(fit)-1])
		g := make([]float64, d)
		for k := range eps {
			for i := range g {
				g[i] += (u[2*k] - u[2*k+1]) * eps[k][i] / (float64(2*cfg.Pairs) * cfg.Sigma)
			}
		}
		adam.step(theta, g) // descend: lower relative JCT is better
		rec := RoundESIteration{Iteration: it + 1, Fitness: fit[len(fit)-1], Weights: slices.Clone(theta)}
		rec.BestPop, rec.MeanPop = slices.Min(fit[:len(fit)-1]), mean(fit[:len(fit)-1])
		for _, s := range sat[:len(sat)-1] {
			rec.Saturated += s
		}
		res.Curve = append(res.Curve, rec)
		if onIter != nil {
			onIter(rec)
		}
	}
	// The final weights have not been scored yet.
	last := [][]float64{slices.Clone(theta)}
	f, s := []float64{0}, []int{0}
	if err := cfg.evaluate(ctx, tab, last, base, f, s); err != nil {
		return res, err
	}
	if f[0] < res.Fitness {
		res.Fitness, res.Weights = f[0], last[0]
	}
	return res, nil
}

// run is the k-th training run (rate-major) under weights w, or under the
// baseline when w is nil.
func (cfg RoundESConfig) run(k int, w []float64) env.GavelRun {
	rate := cfg.Rates[k/len(cfg.Seeds)]
	// A candidate may keep a job off every type for good while the others
	// finish: the time bound (the measured jobs' arrivals plus GraceHours)
	// ends such runs, as the active-jobs bound ends overloaded ones.
	g := env.GavelRun{Policy: cfg.Baseline, Rate: rate, Seed: cfg.Seeds[k%len(cfg.Seeds)], Multi: cfg.Multi,
		Round: env.RoundConfig{MaxActive: cfg.MaxActive, MaxSeconds: (5000/rate + cfg.GraceHours) * 3600}}
	if w != nil {
		g.Policy = "scored"
		g.New = func() env.AllocationPolicy { return cfg.policy(w) }
	}
	return g
}

// policy is the policy weights w define under cfg.
func (cfg RoundESConfig) policy(w []float64) env.AllocationPolicy {
	if cfg.Tiered {
		return cfg.tieredPolicy(w)
	}
	p := env.ScoredPolicy{Weights: w, Clairvoyant: cfg.Clairvoyant, Exchange: cfg.Exchange, Consolidate: cfg.Consolidate, Upgrade: cfg.Upgrade}
	if cfg.Pack {
		return &env.PackedScoredPolicy{ScoredPolicy: p}
	}
	return &p
}

// runJCT is one training run's measured JCTs: average and p99 in hours,
// and whether the run stopped at the bound (then the hours mean nothing).
type runJCT struct {
	avg, p99 float64
	atBound  bool
}

// runAt is the k-th training run under weights w (the baseline when w is
// nil): the protocol's runs, then Scenarios.
func (cfg RoundESConfig) runAt(tab *env.ThroughputTable, k int, w []float64) (runJCT, error) {
	if g := len(cfg.Rates) * len(cfg.Seeds); k >= g {
		sc := cfg.Scenarios[k-g]
		rc := report.GPURunConfig{Scenario: sc.Scenario, Load: sc.Load, Policy: cfg.Baseline, Seed: sc.Seed}
		if w != nil {
			rc.Policy = "scored"
			rc.New = func() env.AllocationPolicy { return cfg.policy(w) }
		}
		m, err := report.RunGPU(rc)
		if err != nil {
			return runJCT{}, err
		}
		if m.AtBound || m.AvgJCT == nil || m.P99JCT == nil {
			return runJCT{atBound: true}, nil
		}
		return runJCT{avg: *m.AvgJCT, p99: *m.P99JCT}, nil
	}
	r, err := cfg.run(k, w).Run(tab)
	if err != nil {
		return runJCT{}, err
	}
	return runJCT{avg: r.AvgJCTHours, p99: r.P99JCTHours(), atBound: r.Saturated || math.IsNaN(r.AvgJCTHours)}, nil
}

// relative is a run's score against the baseline's run on the same rate
// and seed (1: as good as the baseline), at most Penalty.
func (cfg RoundESConfig) relative(r, base runJCT) float64 {
	if r.atBound {
		return cfg.Penalty
	}
	rel := r.avg / base.avg
	if cfg.TailWeight > 0 {
		rel += cfg.TailWeight * math.Max(0, r.p99/base.p99-1)
	}
	return math.Min(cfg.Penalty, rel)
}

// runName names the k-th training run for errors.
func (cfg RoundESConfig) runName(k int) string {
	if g := len(cfg.Rates) * len(cfg.Seeds); k >= g {
		sc := cfg.Scenarios[k-g]
		return fmt.Sprintf("%s at load %.2f seed %d", sc.Scenario, sc.Load, sc.Seed)
	}
	return fmt.Sprintf("%.2f jobs/h seed %d", cfg.Rates[k/len(cfg.Seeds)], cfg.Seeds[k%len(cfg.Seeds)])
}

// evaluate fills fit[c] with candidate c's mean relative JCT over the
// training runs and sat[c] with its runs stopped at the bound.
func (cfg RoundESConfig) evaluate(ctx context.Context, tab *env.ThroughputTable, cand [][]float64, base []runJCT, fit []float64, sat []int) error {
	runs := len(base)
	rel := make([]float64, len(cand)*runs)
	satRun := make([]bool, len(rel))
	err := report.ForEach(ctx, len(rel), cfg.Workers, func(i int) error {
		c, k := i/runs, i%runs
		r, err := cfg.runAt(tab, k, cand[c])
		if err != nil {
			return err
		}
		rel[i], satRun[i] = cfg.relative(r, base[k]), r.atBound
		return nil
	})
	if err != nil {
		return err
	}
	for c := range cand {
		fit[c], sat[c] = mean(rel[c*runs:(c+1)*runs]), 0
		for _, s := range satRun[c*runs : (c+1)*runs] {
			if s {
				sat[c]++
			}
		}
	}
	return nil
}

// tieredLogRatioLimit is where ES's tiered log priority ratio saturates
// (env's files take up to ±10).
const tieredLogRatioLimit = 8

// tieredPolicy is the tiered policy of ES's parameters: the tier score's
// weights, then the log priority ratio and its load slope, each
// saturating at ±tieredLogRatioLimit (ES may step past the policy's
// range), with cfg's clairvoyance, guards and tie-break weight.
func (cfg RoundESConfig) tieredPolicy(theta []float64) *env.TieredPackedPolicy {
	n := len(theta) - 2
	sat := func(v float64) float64 { return math.Max(-tieredLogRatioLimit, math.Min(tieredLogRatioLimit, v)) }
	return &env.TieredPackedPolicy{Weights: theta[:n:n], LogRatio: sat(theta[n]), LoadSlope: sat(theta[n+1]), Clairvoyant: cfg.Clairvoyant,
		GangGuardHours: cfg.GangGuardHours, AgeGuardHours: cfg.AgeGuardHours, TieDeficit: cfg.TieDeficit}
}

func axpy(x []float64, a float64, y []float64) []float64 {
	out := slices.Clone(x)
	for i := range out {
		out[i] += a * y[i]
	}
	return out
}

// centredRanks maps fitnesses to ranks scaled to [-0.5, 0.5], the lowest
// (best) fitness to -0.5: ES's fitness shaping, which makes the update
// invariant to the fitness's scale and robust to the bound's penalty.
func centredRanks(f []float64) []float64 {
	idx := make([]int, len(f))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(f[a], f[b]) })
	u := make([]float64, len(f))
	for r, i := range idx {
		u[i] = float64(r)/float64(len(f)-1) - 0.5
	}
	return u
}

// adam64 is Adam (Kingma and Ba, ICLR 2015) on a float64 vector, for the
// few weights of ES.
type adam64 struct {
	lr, b1, b2, epsilon float64
	m, v                []float64
	t                   int
}

func newAdam64(n int, lr float64) *adam64 {
	return &adam64{lr: lr, b1: 0.9, b2: 0.999, epsilon: 1e-8, m: make([]float64, n), v: make([]float64, n)}
}

// step moves x against the gradient g.
func (a *adam64) step(x, g []float64) {
	a.t++
	c1, c2 := 1-math.Pow(a.b1, float64(a.t)), 1-math.Pow(a.b2, float64(a.t))
	for i := range x {
		a.m[i] = a.b1*a.m[i] + (1-a.b1)*g[i]
		a.v[i] = a.b2*a.v[i] + (1-a.b2)*g[i]*g[i]
		x[i] -= a.lr * (a.m[i] / c1) / (math.Sqrt(a.v[i]/c2) + a.epsilon)
	}
}

// mean is the arithmetic mean (report.MeanStd's).
func mean(v []float64) float64 {
	m, _ := report.MeanStd(v)
	return m
}
