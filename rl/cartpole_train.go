package rl

import (
	"fmt"
	"math/rand/v2"

	"github.com/tegrl/tegrl/nn"
)

// CartPoleRun configures PPO on vectorised CartPole environments, with
// CleanRL's defaults (4 environments × 128 steps per rollout, 64-64 tanh
// actor and critic).
type CartPoleRun struct {
	Seed       uint64
	Envs       int // environments stepped in lockstep
	Steps      int // steps per environment per rollout
	TotalSteps int // environment steps in all
	Hidden     []int
	PPO        Config
	// Window is the number of recent episodes the reported moving mean
	// return averages over.
	Window int
}

// DefaultCartPoleRun is CleanRL's ppo.py setting for CartPole-v1.
func DefaultCartPoleRun(seed uint64) CartPoleRun {
	return CartPoleRun{Seed: seed, Envs: 4, Steps: 128, TotalSteps: 500_000, Hidden: []int{64, 64},
		PPO: CartPoleConfig(), Window: 20}
}

// CartPoleResult summarises a run.
type CartPoleResult struct {
	Episodes int
	// Returns holds every finished episode's return, in order, with the
	// global step at which it ended.
	Returns []float64
	EndStep []int
	// BestMean is the highest moving mean return (over Window episodes)
	// seen, and BestMeanStep where it was first reached.
	BestMean     float64
	BestMeanStep int
	// FinalMean is the moving mean at the end of the run.
	FinalMean float64
	Last      UpdateStats
}

// MovingMeanAt returns the first global step at which the moving mean of
// window episode returns reached target, or -1.
func (r *CartPoleResult) MovingMeanAt(target float64, window int) int {
	var sum float64
	for i, x := range r.Returns {
		sum += x
		if i >= window {
			sum -= r.Returns[i-window]
		}
		if i+1 >= window && sum/float64(window) >= target {
			return r.EndStep[i]
		}
	}
	return -1
}

// TrainCartPole runs PPO on CartPole; progress, when not nil, is called
// after every update with the global step. Same run, same numbers.
func TrainCartPole(run CartPoleRun, progress func(step int, st UpdateStats, res *CartPoleResult)) (*CartPoleResult, error) {
	if run.Envs < 1 || run.Steps < 1 || run.TotalSteps < run.Envs*run.Steps || run.Window < 1 {
		return nil, fmt.Errorf("cartpole run: envs %d, steps %d, total %d, window %d", run.Envs, run.Steps, run.TotalSteps, run.Window)
	}
	m := NewMLPActorCritic(4, 2, run.Hidden, run.Seed)
	learner, err := NewPPO(m, run.PPO, run.Seed)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(run.Seed, 0x6163742d63617274)) // "act-cart"
	n, T := run.Envs, run.Steps
	envs := make([]CartPole, n)
	obs := make([]float32, n*4)
	epRet := make([]float64, n)
	for e := range envs {
		o, _ := envs[e].Reset(run.Seed*1000 + uint64(e)) // CartPole's Reset never fails
		copy(obs[e*4:], o)
	}
	episodes := uint64(n)
	size := n * T
	// Rollout arrays in [env][step] order so that GAE runs on contiguous
	// per-environment trajectories.
	b := Batch{OldLogP: make([]float32, size), Values: make([]float32, size), Adv: make([]float32, size), Returns: make([]float32, size)}
	rew := make([]float32, size)
	dones := make([]bool, size)
	acts := make([]int, n)
	logp := make([]float32, n)
	val := make([]float32, n)
	stepObs := make([][]float32, size)
	stepAct := make([]int, size)
	for i := range stepObs {
		stepObs[i] = make([]float32, 4)
	}
	tp := nn.NewTape[float32]()
	res := &CartPoleResult{}
	updates := run.TotalSteps / size
	step := 0
	for u := 0; u < updates; u++ {
		lr := run.PPO.LR
		if run.PPO.AnnealLR {
			lr *= 1 - float64(u)/float64(updates)
		}
		for t := 0; t < T; t++ {
			m.Act(tp, obs, rng, acts, logp, val)
			for e := 0; e < n; e++ {
				k := e*T + t
				copy(stepObs[k], obs[e*4:(e+1)*4])
				stepAct[k] = acts[e]
				b.OldLogP[k], b.Values[k] = logp[e], val[e]
				o, r, done := envs[e].Step(acts[e])
				step++
				rew[k], dones[k] = float32(r), done
				epRet[e] += r
				if done {
					res.Returns = append(res.Returns, epRet[e])
					res.EndStep = append(res.EndStep, step)
					epRet[e] = 0
					o, _ = envs[e].Reset(run.Seed*1000 + episodes)
					episodes++
				}
				copy(obs[e*4:], o)
			}
		}
		// Bootstrap values of the states after the rollout.
		m.Act(tp, obs, rng, acts, logp, val)
		for e := 0; e < n; e++ {
			s := e * T
			GAE(b.Adv[s:s+T], b.Returns[s:s+T], rew[s:s+T], b.Values[s:s+T], dones[s:s+T], val[e], run.PPO.Gamma, run.PPO.Lambda)
		}
		m.Reset()
		for k := 0; k < size; k++ {
			m.Store(stepObs[k], stepAct[k])
		}
		st, err := learner.Update(&b, lr)
		if err != nil {
			return nil, fmt.Errorf("cartpole update %d: %w", u, err)
		}
		res.Last = st
		if len(res.Returns) >= run.Window {
			var sum float64
			for _, x := range res.Returns[len(res.Returns)-run.Window:] {
				sum += x
			}
			res.FinalMean = sum / float64(run.Window)
			if res.FinalMean > res.BestMean {
				res.BestMean, res.BestMeanStep = res.FinalMean, step
			}
		}
		if progress != nil {
			progress(step, st, res)
		}
	}
	res.Episodes = len(res.Returns)
	return res, nil
}
