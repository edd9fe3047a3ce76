package rl

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// LookaheadConfig configures Lookahead.
type LookaheadConfig struct {
	// Base is the scheduler improved upon and followed after each tried
	// choice.
	Base func() env.Scheduler
	// Every evaluates every n-th decision (1: all of them); the others
	// follow Base.
	Every int
	// Candidates is the size of the candidate set, drawn as the learned
	// policy draws it (PolicyConfig.Candidates).
	Candidates int
	// Seed seeds the candidate draws (a stream of their own: the
	// simulation's is left as the base run uses it).
	Seed uint64
	// Visit, if set, is told of each evaluated decision: its sample (row
	// 0 of s: the candidates' features, s.Nodes the machines), the base's
	// action, and values[k], the accrued slowdown of the episode that
	// places the job on s.Nodes[k] and follows the base afterwards.
	Visit func(obs *env.Observation, s *Samples, base env.Action, values []float64)
	// Workers runs a decision's rollouts on this many goroutines (<= 1:
	// one); the result does not depend on it.
	Workers int
	// Support, when positive, tries only the base's choice and the
	// candidates to which the governor's placement distribution, the
	// langevin scheduler's p ∝ exp(-E/T) over the candidate set, gives at
	// least this probability; the others' values are +Inf. It bounds what
	// a learner that may only re-weight the actions in a langevin-like
	// behaviour's logs could gain, knowing the future. 0 tries every
	// candidate.
	Support float64
}

// LookaheadResult is one Lookahead run.
type LookaheadResult struct {
	// Base and Lookahead are the final metrics of the base scheduler's
	// run and of the improved run; BaseAccrued and LookaheadAccrued
	// their accrued slowdown (Σ over jobs of time in the system /
	// duration, unfinished jobs included: minus an episode's return).
	Base, Lookahead               env.Metrics
	BaseAccrued, LookaheadAccrued float64
	// Decisions counts Decide calls, Evaluated those whose candidates
	// were tried (two or more), Changed those where a candidate beat
	// the base's choice, Rollouts the simulations run.
	Decisions, Evaluated, Changed, Rollouts int
	// Best is, per evaluated decision, the accrued slowdown of its best
	// rollout: never increasing (the rollout algorithm's improvement
	// property), and its last entry is LookaheadAccrued.
	Best []float64
}

// Lookahead measures how much a policy choosing among the learned
// policy's candidates could gain over a base scheduler, knowing the
// future: the one-step rollout improvement of the base (Bertsekas'
// rollout algorithm, one step of policy iteration) with clairvoyant,
// exact evaluation. At each evaluated decision it tries every candidate
// machine (the base's choice among them) by running the simulation again
// from the start, with the choices made so far, that candidate, and the
// base scheduler after it, to the end of the episode, and keeps the
// candidate with the least accrued slowdown (ties: the base's choice).
//
// The simulator is deterministic and the base's choice a function of the
// simulation's state (its random streams included), so the run's accrued
// slowdown never exceeds the base's, and each evaluated decision's best
// value is at most the previous one's. It is a measurement, not a
// scheduler: it knows the workload's future, and it costs a simulation
// per candidate per decision from the start of the episode (quadratic in
// the episode's length).
func Lookahead(ctx context.Context, c *env.Cluster, w *env.Workload, sim env.SimConfig, cfg LookaheadConfig) (LookaheadResult, error) {
	var res LookaheadResult
	if cfg.Base == nil || cfg.Every < 1 || cfg.Candidates < 2 || !(cfg.Support >= 0 && cfg.Support <= 1) {
		return res, fmt.Errorf("lookahead: config needs a base, every >= 1, candidates >= 2 and support in [0, 1]")
	}
	base, err := env.NewSim(c, w, cfg.Base(), sim)
	if err != nil {
		return res, fmt.Errorf("lookahead: %w", err)
	}
	res.Base = base.Run()
	res.BaseAccrued = base.Accrued().Slowdown

	pc := DefaultPolicyConfig()
	pc.Candidates = cfg.Candidates
	pol, err := NewPolicy(pc, cfg.Seed) // only its featurizer: the candidate draw
	if err != nil {
		return res, err
	}
	var smp Samples
	smp.Configure(pol.Cfg)
	crng := rand.New(rand.NewPCG(cfg.Seed, 0x6c6f6f6b61686561)) // "lookahea"

	var taken []int // the main run's decisions so far
	var values, energy []float64
	var try []bool
	rollout := func(choice int) (float64, error) {
		rs, err := env.NewSim(c, w, &replayed{base: cfg.Base(), prefix: taken, next: choice}, sim)
		if err != nil {
			return 0, err
		}
		rs.Run()
		return rs.Accrued().Slowdown, nil
	}
	// rollAll sets values[k] to the rollout of candidate k where try[k]
	// (+Inf elsewhere), on up to cfg.Workers goroutines: the rollouts
	// share only read-only inputs.
	rollAll := func(nodes []int32) error {
		values = resize(values, len(nodes))
		for k := range nodes {
			if try[k] {
				res.Rollouts++
			}
		}
		return report.ForEach(ctx, len(nodes), max(cfg.Workers, 1), func(k int) (err error) {
			values[k] = math.Inf(1)
			if try[k] {
				values[k], err = rollout(int(nodes[k]))
			}
			return err
		})
	}
	var failed error
	main := &replayed{base: cfg.Base(), next: -1}
	main.decide = func(obs *env.Observation, a *env.Action) {
		n := len(taken)
		defer func() { taken = append(taken, a.Node) }()
		if failed != nil || a.Node < 0 || n%cfg.Every != 0 {
			return
		}
		if err := ctx.Err(); err != nil {
			failed = err
			return
		}
		smp.Reset()
		pol.feat.Force = a.Node
		ok := pol.Featurize(Decision{Obs: obs, RNG: crng}, &smp)
		pol.feat.Force = -1
		if !ok || smp.Valid[0] < 2 {
			return
		}
		nodes := smp.Nodes[:smp.Valid[0]]
		if try, failed = supported(obs, nodes, a.Node, cfg.Support, try, &energy); failed != nil {
			return
		}
		res.Evaluated++
		if err := rollAll(nodes); err != nil {
			failed = err
			return
		}
		bestV := math.Inf(1)
		for k, m := range nodes {
			if int(m) == a.Node {
				bestV = values[k]
			}
		}
		best := a.Node // ties go to the base's choice
		for k, m := range nodes {
			if values[k] < bestV {
				best, bestV = int(m), values[k]
			}
		}
		if cfg.Visit != nil {
			cfg.Visit(obs, &smp, *a, values)
		}
		res.Best = append(res.Best, bestV)
		if best != a.Node {
			res.Changed++
			a.Node, a.GPU = best, -1
		}
	}
	ms, err := env.NewSim(c, w, main, sim)
	if err != nil {
		return res, fmt.Errorf("lookahead: %w", err)
	}
	res.Lookahead = ms.Run()
	if failed != nil {
		return res, fmt.Errorf("lookahead: %w", failed)
	}
	res.LookaheadAccrued = ms.Accrued().Slowdown
	res.Decisions = len(taken)
	return res, nil
}

// supported sets try[k] for the candidates a lookahead with the given
// support tries: all of them when support is 0, else the base's choice
// and those to which env.PlacementProbs of the governor's energies over
// the candidates gives at least support.
func supported(obs *env.Observation, nodes []int32, chosen int, support float64, try []bool, energy *[]float64) ([]bool, error) {
	try = resize(try, len(nodes))
	if support == 0 {
		for k := range try {
			try[k] = true
		}
		return try, nil
	}
	v := obs.TEG
	if v == nil || v.Field == nil {
		return try, fmt.Errorf("support %g needs the TEG governor's field", support)
	}
	e := resize(*energy, len(nodes))
	*energy = e
	for k, m := range nodes {
		e[k] = v.Energy(obs.Job, &obs.Req, int(m))
	}
	e = env.PlacementProbs(e, v.Temperature(), e)
	for k, m := range nodes {
		try[k] = int(m) == chosen || e[k] >= support
	}
	return try, nil
}

// replayed runs base, but takes prefix's machine at the decisions it
// covers and next (when >= 0) at the one after; then, if decide is set,
// lets it change each later decision. The base decides every time, so
// that its state and the simulation's random streams move as in the run
// that took these decisions.
type replayed struct {
	base   env.Scheduler
	prefix []int
	next   int
	n      int
	decide func(obs *env.Observation, a *env.Action)
}

func (r *replayed) Name() string            { return r.base.Name() }
func (r *replayed) Governor() env.TEGConfig { return env.GovernorFor(r.base) }
func (r *replayed) Decide(obs *env.Observation, rng *rand.Rand) env.Action {
	a := r.base.Decide(obs, rng)
	i := r.n
	r.n++
	node := a.Node
	switch {
	case i < len(r.prefix):
		node = r.prefix[i]
	case i == len(r.prefix) && r.next >= 0:
		node = r.next
	case r.decide != nil:
		r.decide(obs, &a)
		return a
	}
	if node != a.Node {
		a.Node, a.GPU = node, -1
	}
	return a
}
