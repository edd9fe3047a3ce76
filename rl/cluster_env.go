package rl

import (
	"fmt"
	"iter"
	"math/rand/v2"

	"github.com/tegrl/tegrl/env"
)

// Source builds the cluster and workload of one episode from its seed.
type Source func(seed uint64) (*env.Cluster, *env.Workload, error)

// SyntheticSource is a synthetic cluster of machines with the bursty AI
// workload at the given offered load, arriving over horizon seconds.
func SyntheticSource(machines int, load, horizon float64) Source {
	return func(seed uint64) (*env.Cluster, *env.Workload, error) {
		c, err := env.NewSyntheticCluster(machines, seed)
		if err != nil {
			return nil, nil, err
		}
		cfg := env.DefaultWorkload
		cfg.Load, cfg.Horizon = load, horizon
		w, err := env.NewSyntheticWorkload(c, cfg, seed)
		if err != nil {
			return nil, nil, err
		}
		return c, w, nil
	}
}

// EnvSpec describes a synthetic training environment. It is plain data:
// it travels in the learner's parameter broadcasts, so that a remote actor
// needs only the NATS URL and the run id.
type EnvSpec struct {
	Machines    int     `json:"machines"`
	Load        float64 `json:"load"`
	Episode     float64 `json:"episode_s"` // simulated seconds per episode (and the arrival horizon)
	Reward      string  `json:"reward"`
	RewardScale float64 `json:"reward_scale"`
	Baseline    string  `json:"reward_baseline"`
	// Shaping and ShapingGamma: see ClusterEnvConfig.
	Shaping      float64 `json:"shaping_s,omitempty"`
	ShapingGamma float64 `json:"shaping_gamma,omitempty"`
	MTBF         float64 `json:"mtbf_s"` // 0: the simulator's default; < 0: no failures
	// Saturate, when set, makes the environment the FGD saturation
	// experiment instead of the time-stepped cluster (the other fields but
	// RewardScale are then unused).
	Saturate *SaturateSpec `json:"saturate,omitempty"`
}

// validate checks a spec that came from outside (a broadcast).
func (s EnvSpec) validate() error {
	if sat := s.Saturate; sat != nil {
		if sat.Nodes == "" || sat.Pods == "" || !(sat.Tune > 0) || sat.Tune > 100 {
			return fmt.Errorf("saturation environment %+v out of range", *sat)
		}
		return nil
	}
	if s.Machines < 1 || !(s.Episode > 0) || !(s.Load > 0) || !(s.Shaping >= 0) || !(s.ShapingGamma >= 0 && s.ShapingGamma <= 1) {
		return fmt.Errorf("environment %+v out of range", s)
	}
	return nil
}

// Config returns the environment configuration of the spec.
func (s EnvSpec) Config() ClusterEnvConfig {
	if s.Saturate != nil {
		return ClusterEnvConfig{Saturation: s.Saturate.Load, RewardScale: s.RewardScale}
	}
	return ClusterEnvConfig{Source: SyntheticSource(s.Machines, s.Load, s.Episode), Duration: s.Episode,
		Reward: s.Reward, RewardScale: s.RewardScale, Baseline: s.Baseline, Shaping: s.Shaping, ShapingGamma: s.ShapingGamma, MTBF: s.MTBF}
}

// Reward modes of a ClusterEnv.
const (
	// RewardSlowdown is DeepRM's objective: minus the slowdown accrued
	// between two decisions (Σ over jobs in the system of Δt/duration), so
	// that an episode's return is minus its total slowdown, unfinished
	// jobs included.
	RewardSlowdown = "slowdown"
	// RewardTEG is the environment's multi-objective reward (task success
	// 0.5, energy 0.3, latency 0.2 per tick) earned between two decisions.
	RewardTEG = "teg"
)

// ClusterEnvConfig configures a ClusterEnv.
type ClusterEnvConfig struct {
	Source   Source
	Duration float64 // simulated seconds per episode (0: until the workload drains)
	// TEG configures the governor's mechanisms for the learned policy; nil
	// means LearnedTEG().
	TEG         *env.TEGConfig
	Reward      string  // RewardSlowdown or RewardTEG
	RewardScale float64 // multiplies every reward (0: 1)
	MTBF        float64 // machine failures (0: the simulator's default; < 0: none)
	Name        string  // scheduler name in the metrics
	// Baseline, when set, names a built-in scheduler run alongside on the
	// same cluster, workload and seed; each reward is then relative to
	// what the baseline accrued over the same simulated time. The
	// baseline does not depend on the policy's actions, so the optimal
	// policy is unchanged, but the arrival process's noise, which dominates
	// the raw slowdown, cancels out (an input-driven baseline, Mao et al.
	// ICLR 2019).
	Baseline string
	// Shaping, when positive with a baseline, adds the potential-based
	// shaping term γ·Φ(s') − Φ(s) (Ng et al. 1999; γ is ShapingGamma, the
	// learner's discount per decision) to each reward, with Φ = Shaping ×
	// the baseline run's current slowdown rate (SlowdownRate) and Φ = 0 at
	// the end. The relative return's expected value contains the baseline's
	// future accrual, which the critic cannot predict from the policy's own
	// cluster; Φ takes the part of it that the baseline's present load
	// predicts out of the critic's target. Shaping of this form leaves the
	// optimal policy unchanged. Shaping is a horizon in simulated seconds.
	Shaping      float64
	ShapingGamma float64
	// Saturation, when set, makes each episode a run of the FGD
	// saturation experiment on the workload it returns (see SaturateSpec);
	// Source is then unused.
	Saturation func() (*SaturationWorkload, error)
}

// LearnedTEG is the TEG configuration a learned policy runs under: the
// pure Langevin governor's (field, moves, safety, tokens, contention) with
// the Landau controller off, since the policy sets the damping itself.
func LearnedTEG() env.TEGConfig {
	t := env.GovernorTEG("langevin")
	t.Controller = false
	return t
}

// Decision is what a policy sees in a ClusterEnv: the simulator's
// observation for one pending job and the simulation's scheduling stream
// (candidate draws come from it, so they are part of the seeded run).
type Decision struct {
	Obs *env.Observation
	RNG *rand.Rand
}

// ClusterEnv is the TEG cluster simulation as an Env: each step is one
// scheduling decision (the simulator's Scheduler.Decide call), and the
// reward is what accrued until the next decision. The simulation runs as a
// coroutine (iter.Pull) that pauses inside Decide, so the simulator stays a
// plain callback-driven state machine.
type ClusterEnv struct {
	cfg      ClusterEnvConfig
	teg      env.TEGConfig
	sim      *env.Sim
	base     *env.Sim // the baseline's run (nil without one)
	lastB    env.Accrual
	shapePhi float64 // the shaping potential at the last decision
	next     func() (Decision, bool)
	stop     func()
	action   env.Action
	halt     bool
	last     env.Accrual
	dec      Decision

	// A saturation episode's state, outcome and allocation at the last
	// decision.
	satState *env.State
	satRun   env.SaturationRun
	satErr   error
	// Potentials Φ = used - F(M) (milli-GPU) of the policy's run and of
	// FGD's (per pod), the pods done, and the values at the last reward.
	basePhi      []float64
	pods         int
	phi, lastPhi float64
	lastBase     float64
}

// NewClusterEnv checks cfg and returns an environment; Reset starts it.
func NewClusterEnv(cfg ClusterEnvConfig) (*ClusterEnv, error) {
	if cfg.Source == nil && cfg.Saturation == nil {
		return nil, fmt.Errorf("cluster env: no source")
	}
	switch cfg.Reward {
	case "":
		cfg.Reward = RewardSlowdown
	case RewardSlowdown, RewardTEG:
	default:
		return nil, fmt.Errorf("cluster env: reward %q, want %q or %q", cfg.Reward, RewardSlowdown, RewardTEG)
	}
	if cfg.RewardScale == 0 {
		cfg.RewardScale = 1
	}
	if cfg.Name == "" {
		cfg.Name = "policy"
	}
	if cfg.Baseline != "" {
		if _, err := env.NewScheduler(cfg.Baseline); err != nil {
			return nil, fmt.Errorf("cluster env baseline: %w", err)
		}
	}
	e := &ClusterEnv{cfg: cfg, teg: LearnedTEG()}
	if cfg.TEG != nil {
		e.teg = *cfg.TEG
	}
	return e, nil
}

// proxy is the scheduler the simulator calls: it hands the observation to
// the coroutine's consumer and returns the action it was given.
type proxy struct {
	e     *ClusterEnv
	yield func(Decision) bool
}

func (p *proxy) Name() string { return p.e.cfg.Name }

func (p *proxy) Decide(obs *env.Observation, rng *rand.Rand) env.Action {
	if p.e.halt || !p.yield(Decision{Obs: obs, RNG: rng}) {
		p.e.halt = true // abandoned: finish the tick without placing
		return env.Wait
	}
	return p.e.action
}

// Reset implements Env. It returns a Decision with a nil Obs when the
// episode has no decision at all, and the source's or the simulator's
// error when the episode cannot be built.
func (e *ClusterEnv) Reset(seed uint64) (Decision, error) { return e.reset(seed) }

func (e *ClusterEnv) reset(seed uint64) (Decision, error) {
	if e.stop != nil {
		e.stop()
	}
	if e.cfg.Saturation != nil {
		return e.resetSaturation(seed)
	}
	c, w, err := e.cfg.Source(seed)
	if err != nil {
		return Decision{}, fmt.Errorf("cluster env seed %d: %w", seed, err)
	}
	p := &proxy{e: e}
	teg := e.teg
	sim, err := env.NewSim(c, w, p, env.SimConfig{Seed: seed, Duration: e.cfg.Duration, MTBF: e.cfg.MTBF, TEG: &teg})
	if err != nil {
		return Decision{}, fmt.Errorf("cluster env seed %d: %w", seed, err)
	}
	e.base = nil
	if e.cfg.Baseline != "" {
		b, _ := env.NewScheduler(e.cfg.Baseline)
		if e.base, err = env.NewSim(c, w, b, env.SimConfig{Seed: seed, Duration: e.cfg.Duration, MTBF: e.cfg.MTBF}); err != nil {
			return Decision{}, fmt.Errorf("cluster env seed %d baseline: %w", seed, err)
		}
		e.lastB = e.base.Accrued()
	}
	e.shapePhi = 0
	var t env.Tensors
	sim.Observe(&t, nil) // start the load history
	e.sim, e.halt, e.last = sim, false, sim.Accrued()
	e.next, e.stop = iter.Pull(iter.Seq[Decision](func(yield func(Decision) bool) {
		p.yield = yield
		for !sim.Done() && !e.halt {
			sim.Step()
		}
	}))
	d, ok := e.next()
	if !ok {
		d = Decision{}
	}
	e.dec = d
	if ok && e.shaping() {
		e.catchUp(false)
		e.shapePhi = e.cfg.Shaping * e.base.SlowdownRate()
	}
	return d, nil
}

// shaping reports whether rewards carry the potential-based term.
func (e *ClusterEnv) shaping() bool {
	return e.cfg.Shaping > 0 && e.base != nil && e.cfg.Saturation == nil
}

// catchUp steps the baseline's run to the policy's simulated time (to its
// end when end).
func (e *ClusterEnv) catchUp(end bool) {
	for !e.base.Done() && (end || e.base.Now() < e.sim.Now()) {
		e.base.Step()
	}
}

// Step implements Env.
func (e *ClusterEnv) Step(a env.Action) (Decision, float64, bool) {
	if e.dec.Obs == nil {
		return Decision{}, 0, true
	}
	e.action = a
	d, ok := e.next()
	r := e.reward(!ok)
	if !ok {
		e.dec = Decision{}
		return Decision{}, r, true
	}
	e.dec = d
	return d, r, false
}

// reward returns the reward accrued since the last call, relative to the
// baseline's over the same simulated time when there is one (at the end of
// the episode, over the baseline's whole run).
func (e *ClusterEnv) reward(end bool) float64 {
	if e.cfg.Saturation != nil {
		return e.satReward()
	}
	r := e.gain(e.sim.Accrued(), &e.last)
	if e.base != nil {
		e.catchUp(end)
		r -= e.gain(e.base.Accrued(), &e.lastB)
	}
	if e.shaping() {
		phi := 0.0 // at the end
		if !end {
			phi = e.cfg.Shaping * e.base.SlowdownRate()
		}
		r += e.cfg.ShapingGamma*phi - e.shapePhi
		e.shapePhi = phi
	}
	return r * e.cfg.RewardScale
}

// gain returns the reward in a since *last and moves *last to a.
func (e *ClusterEnv) gain(a env.Accrual, last *env.Accrual) float64 {
	var r float64
	if e.cfg.Reward == RewardSlowdown {
		r = -(a.Slowdown - last.Slowdown)
	} else {
		r = a.Total - last.Total
	}
	*last = a
	return r
}

// Sim is the running simulation (its metrics at the end of an episode).
func (e *ClusterEnv) Sim() *env.Sim { return e.sim }

// Baseline is the baseline's simulation, nil without one.
func (e *ClusterEnv) Baseline() *env.Sim { return e.base }

// Close stops the simulation coroutine.
func (e *ClusterEnv) Close() {
	if e.stop != nil {
		e.stop()
		e.stop = nil
	}
}
