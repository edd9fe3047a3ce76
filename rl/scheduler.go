package rl

import (
	"math/rand/v2"

	"github.com/tegrl/tegrl/env"
)

// Scheduler runs a Policy as an env.Scheduler, so that every tool
// (simulate, ab, replay, saturate) runs a learned policy like a built-in
// one. Greedy takes the policy's mode (evaluation); otherwise it samples
// with its own seeded stream (the simulator's stream still draws the
// candidates, so runs are reproducible either way).
type Scheduler struct {
	P      *Policy
	Greedy bool
	Label  string
	// Version is the policy version reported with each decision (0 when
	// unknown).
	Version uint64
	// ActionOnly, with Greedy, decides with Policy.Decide: the same
	// actions without the log-probability and the value, which
	// LastBehaviour then reports as 0 (serving uses only the action).
	ActionOnly bool
	rng        *rand.Rand

	lastLogP, lastValue float32
}

// SchedulerConfig configures NewScheduler. The zero value but a name is
// the evaluation mode: greedy decisions.
type SchedulerConfig struct {
	// Name is what the metrics call the scheduler.
	Name string
	// Sample draws each action from the policy's distribution instead of
	// taking its mode, from a stream seeded by Seed (the simulator's own
	// stream still draws the candidates, so runs are reproducible either
	// way).
	Sample bool
	// Seed seeds the sampling stream (with Sample).
	Seed uint64
}

// schedulerStream is the second word of a sampling scheduler's PCG seed
// ("sch-poli"), so that its stream differs from the simulator's for the
// same Seed.
const schedulerStream = 0x7363682d706f6c69

// NewScheduler wraps p as an env.Scheduler configured by cfg.
func NewScheduler(p *Policy, cfg SchedulerConfig) *Scheduler {
	return &Scheduler{P: p, Greedy: !cfg.Sample, Label: cfg.Name, rng: rand.New(rand.NewPCG(cfg.Seed, schedulerStream))}
}

// Name implements env.Scheduler.
func (s *Scheduler) Name() string { return s.Label }

// Decide implements env.Scheduler.
func (s *Scheduler) Decide(obs *env.Observation, rng *rand.Rand) env.Action {
	if s.ActionOnly && s.Greedy {
		a, ok := s.P.Decide(Decision{Obs: obs, RNG: rng})
		s.lastLogP, s.lastValue = 0, 0
		if !ok {
			return env.Wait
		}
		return a
	}
	a, logp, value, ok := s.P.Act(Decision{Obs: obs, RNG: rng}, s.rng, s.Greedy)
	s.lastLogP, s.lastValue = logp, value
	if !ok {
		return env.Wait
	}
	return a
}

// LastBehaviour returns the log-probability and value of the last decision
// and the policy version (datasets.Behaviour: recorded transitions of a
// learned policy carry them).
func (s *Scheduler) LastBehaviour() (logp, value float32, version uint64) {
	return s.lastLogP, s.lastValue, s.Version
}

// Governor implements env.Governed: a learned policy runs under
// LearnedTEG, setting the damping itself.
func (s *Scheduler) Governor() env.TEGConfig { return LearnedTEG() }
