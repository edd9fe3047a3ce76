package rl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/nn"
	"github.com/tegrl/tegrl/replay"
)

// OfflineData holds decisions re-created from recorded runs: the policy's
// inputs and the recorded actions, with each decision's reward (the
// slowdown accrued until the next decision) and discounted return.
type OfflineData struct {
	S      Samples
	Reward []float32
	Return []float32
	// Last marks each run's last decision (its return ends there).
	Last     []bool
	Gamma    float64 // the discount of Return
	Episodes int
}

// Len is the number of decisions.
func (d *OfflineData) Len() int { return d.S.Len() }

// offlineRec wraps the recorded scheduler: it lets it decide, then
// featurises the decision with the recorded choice among the candidates.
type offlineRec struct {
	inner env.Scheduler
	pol   *Policy
	data  *OfflineData
	rng   *rand.Rand // candidate draws: not the simulation's stream, which the recorded run used alone
	last  int        // sample of the last decision of this run (-1 none)
}

func (o *offlineRec) Name() string            { return o.inner.Name() }
func (o *offlineRec) Governor() env.TEGConfig { return env.GovernorFor(o.inner) }
func (o *offlineRec) Decide(obs *env.Observation, rng *rand.Rand) env.Action {
	a := o.inner.Decide(obs, rng)
	if a.Node < 0 || a.Node >= len(obs.State.M) {
		return a
	}
	s := &o.data.S
	o.pol.feat.Force = a.Node
	ok := o.pol.Featurize(Decision{Obs: obs, RNG: o.rng}, s)
	o.pol.feat.Force = -1
	if !ok {
		return a
	}
	i := s.Len() - 1
	choice := -1
	for k := 0; k < int(s.Valid[i]); k++ {
		if int(s.Nodes[i*s.K+k]) == a.Node {
			choice = k
		}
	}
	if choice < 0 {
		s.drop() // the machine does not admit the job: the simulator will refuse it too
		return a
	}
	const eps = 1e-4
	clamp := func(x float64) float32 { return float32(min(1-eps, max(eps, x))) }
	aff := float32(0.5)
	if s.Service[i] != 0 {
		aff = clamp(float64(a.Affinity))
	}
	d := float64(a.Damping)
	if math.IsNaN(d) {
		d = obs.TEG.Damping // the controller's value: what the policy's damping replaces
	}
	cfg := &o.pol.Cfg
	s.SetAction(i, choice, max(0, min(ReplicaChoices-1, a.ReplicaDelta+ReplicaChoices/2)), aff,
		clamp((d-cfg.DampingMin)/(cfg.DampingMax-cfg.DampingMin)))
	o.data.Reward = append(o.data.Reward, 0)
	o.last = i
	return a
}

// LoadRecording re-runs a recorded run with sched (its recorded
// scheduler), under the recorded configuration, featurising each decision
// for pol and appending it to data with the recorded action. Rewards are
// minus the slowdown accrued between decisions, times scale, and returns
// are discounted by gamma within the run. With ref (nil: none), rewards
// are relative to what the reference scheduler accrued over the same
// simulated time on the same cluster, workload and seed, as ClusterEnv's
// Baseline does online: the arrivals' noise, which dominates a run's
// returns, cancels out of the advantages. The re-run must reproduce the
// recording: its metrics are compared byte for byte with run.json.
func LoadRecording(t *replay.Trace, sched, ref env.Scheduler, pol *Policy, gamma, scale float64, data *OfflineData) error {
	if sched.Name() != t.Config.Scheduler {
		return fmt.Errorf("offline %s: recorded by %q, re-run with %q", t.Dir, t.Config.Scheduler, sched.Name())
	}
	if data.Len() == 0 {
		data.S.Configure(pol.Cfg)
	}
	start := data.Len()
	rec := &offlineRec{inner: sched, pol: pol, data: data, rng: rand.New(rand.NewPCG(t.Config.Seed, 0x6f66666c696e65)), last: -1}
	sim, err := env.NewSim(t.Cluster, t.Workload, rec, t.SimConfig(sched, replay.GovernorRecorded))
	if err != nil {
		return fmt.Errorf("offline %s: %w", t.Dir, err)
	}
	var base *env.Sim
	if ref != nil {
		bc := t.Config.Sim()
		bc.TEG = nil // the reference under its own governor
		if base, err = env.NewSim(t.Cluster, t.Workload, ref, bc); err != nil {
			return fmt.Errorf("offline %s reference: %w", t.Dir, err)
		}
	}
	var tens env.Tensors
	sim.Observe(&tens, nil) // the load history, as the actors see it
	prev := sim.Accrued()
	var prevB env.Accrual
	if base != nil {
		prevB = base.Accrued()
	}
	for !sim.Done() {
		sim.Step()
		a := sim.Accrued()
		r := -(a.Slowdown - prev.Slowdown)
		if base != nil {
			for !base.Done() && (sim.Done() || base.Now() < sim.Now()) {
				base.Step()
			}
			b := base.Accrued()
			r += b.Slowdown - prevB.Slowdown
			prevB = b
		}
		if rec.last >= 0 {
			data.Reward[rec.last] += float32(r * scale)
		}
		prev = a
	}
	if t.RecordedMetrics != nil {
		got, err := json.Marshal(sim.Metrics())
		if err != nil {
			return err
		}
		if !bytes.Equal(got, t.RecordedMetrics) {
			return fmt.Errorf("offline %s: the re-run did not reproduce the recording (metrics differ); was it recorded by another build?", t.Dir)
		}
	}
	n := data.Len()
	if data.Episodes > 0 && data.Gamma != gamma {
		return fmt.Errorf("offline %s: discount %g, the data already loaded has %g", t.Dir, gamma, data.Gamma)
	}
	data.Gamma = gamma
	data.Return = append(data.Return, make([]float32, n-start)...)
	data.Last = append(data.Last, make([]bool, n-start)...)
	if n > start {
		data.Last[n-1] = true
	}
	var g float64
	for i := n - 1; i >= start; i-- {
		g = float64(data.Reward[i]) + gamma*g
		data.Return[i] = float32(g)
	}
	data.Episodes++
	return nil
}

// advantages fills adv with the decisions' advantages under the values
// vals: TD(λ) within each run for lambda < 1, with the λ-returns in
// target, and the Monte Carlo returns' R - V(s) for lambda 1 (target is
// then not written). A run's last decision is terminal, as in its return.
func (d *OfflineData) advantages(adv, target, vals []float32, lambda float64) {
	if lambda >= 1 {
		for i := range adv {
			adv[i] = d.Return[i] - vals[i]
		}
		return
	}
	for e := len(adv); e > 0; {
		s := e - 1
		for s > 0 && !d.Last[s-1] {
			s--
		}
		GAE(adv[s:e], target[s:e], d.Reward[s:e], vals[s:e], d.Last[s:e], 0, d.Gamma, lambda)
		e = s
	}
}

// OfflineConfig configures learning from recorded decisions.
type OfflineConfig struct {
	// Method: "bc" (behaviour cloning: maximise the recorded actions'
	// log-likelihood) or "awr" (advantage-weighted regression, Peng et al.
	// 2019: the same, weighted by exp(A/β) with A the advantage,
	// normalised, and weights capped at MaxWeight).
	Method string `json:"method" flag:"offline-method" default:"bc" usage:"offline method: bc (behaviour cloning) or awr (advantage-weighted regression)"`
	// Lambda is the λ of AWR's advantages and value targets, TD(λ) on
	// the data's discount as in Peng et al.: 1 (the default) uses the
	// Monte Carlo returns, A = R - V(s); smaller values bootstrap from
	// the value of later decisions, trading bias for less of the
	// workload's noise.
	Lambda    float64 `json:"awr_lambda" flag:"awr-lambda" usage:"AWR's TD(λ) for advantages and value targets: 1 uses the Monte Carlo returns, less bootstraps from the value function"`
	Epochs    int     `json:"epochs" flag:"offline-epochs" usage:"passes over the offline data"`
	Minibatch int     `json:"minibatch"`
	LR        float64 `json:"lr"`
	Beta      float64 `json:"awr_beta" flag:"awr-beta" usage:"AWR temperature β on normalised advantages (smaller: greedier)"`
	MaxWeight float64 `json:"awr_max_weight"`
	VFCoef    float64 `json:"vf_coef"`
	Seed      uint64  `json:"seed"`
}

// DefaultOfflineConfig: 10 epochs of minibatches of 256 at lr 1e-3, AWR
// with β 1 on normalised advantages and weights capped at 20.
func DefaultOfflineConfig() OfflineConfig {
	return OfflineConfig{Method: "bc", Lambda: 1, Epochs: OfflineEpochs, Minibatch: OfflineMinibatch, LR: OfflineLR,
		Beta: OfflineAWRBeta, MaxWeight: OfflineAWRMaxWeight, VFCoef: OfflineVFCoef, Seed: 1}
}

// OfflineStats is one epoch's log line.
type OfflineStats struct {
	Epoch      int     `json:"epoch"`
	PolicyLoss float64 `json:"policy_loss"` // mean weighted negative log-likelihood
	ValueLoss  float64 `json:"value_loss"`
	MeanWeight float64 `json:"mean_weight"`
	Agreement  float64 `json:"agreement"` // share of decisions whose most likely machine is the recorded one
}

// TrainOffline fits pol to data and returns one line per epoch.
func TrainOffline(pol *Policy, data *OfflineData, cfg OfflineConfig) ([]OfflineStats, error) {
	if cfg.Method != "bc" && cfg.Method != "awr" {
		return nil, fmt.Errorf("offline: method %q, want bc or awr", cfg.Method)
	}
	if cfg.Epochs < 1 || cfg.Minibatch < 1 || !(cfg.LR > 0) || !(cfg.Beta > 0) || !(cfg.MaxWeight >= 1) || !(cfg.Lambda >= 0 && cfg.Lambda <= 1) {
		return nil, fmt.Errorf("offline: config %+v out of range", cfg)
	}
	n := data.Len()
	if n == 0 {
		return nil, fmt.Errorf("offline: no decisions")
	}
	if err := data.S.Validate(); err != nil {
		return nil, fmt.Errorf("offline: %w", err)
	}
	if len(data.Reward) != n || len(data.Return) != n || len(data.Last) != n || (n > 0 && !data.Last[n-1]) {
		return nil, fmt.Errorf("offline: %d decisions with %d rewards, %d returns and %d run ends", n, len(data.Reward), len(data.Return), len(data.Last))
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6f66662d74726e))
	opt := nn.NewAdam(pol.ps, cfg.LR)
	opt.Eps = 1e-5
	tp := nn.NewTape[float32]()
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	w := make([]float32, n)
	for i := range w {
		w[i] = 1
	}
	vals := make([]float32, n)
	adv, target := make([]float32, n), data.Return
	if cfg.Method == "awr" && cfg.Lambda < 1 {
		target = make([]float32, n)
	}
	wT, rT := nn.Zeros[float32](0), nn.Zeros[float32](0)
	var out []OfflineStats
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		st := OfflineStats{Epoch: epoch}
		// Values and agreement under the current parameters.
		agree := 0
		for s := 0; s < n; s += evalChunk {
			e := min(n, s+evalChunk)
			idx := perm[:0:0]
			for i := s; i < e; i++ {
				idx = append(idx, i)
			}
			tp.Reset()
			o := pol.forward(tp, &data.S, idx, true)
			copy(vals[s:e], o.value.Data)
			K := data.S.K
			for b, i := range idx {
				v := int(data.S.Valid[i])
				if nn.Argmax(o.node.Data[b*K:b*K+v]) == data.S.Choice[i] {
					agree++
				}
			}
		}
		st.Agreement = float64(agree) / float64(n)
		if cfg.Method == "awr" {
			data.advantages(adv, target, vals, cfg.Lambda)
			var m, ss float64
			for _, a := range adv {
				m += float64(a)
				ss += float64(a) * float64(a)
			}
			m /= float64(n)
			sd := math.Sqrt(max(0, ss/float64(n)-m*m)) + 1e-8
			for i := range w {
				a := (float64(adv[i]) - m) / sd
				w[i] = float32(min(cfg.MaxWeight, math.Exp(a/cfg.Beta)))
			}
		}
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		batches := 0
		for s := 0; s+cfg.Minibatch <= n || (s == 0 && n < cfg.Minibatch); s += cfg.Minibatch {
			mb := perm[s:min(n, s+cfg.Minibatch)]
			tp.Reset()
			pol.ps.ZeroGrad()
			wT, rT = fill(wT, w, mb), fill(rT, target, mb)
			logp, _, v := pol.evaluate(tp, &data.S, mb)
			pl := tp.Scale(tp.MeanAll(tp.Mul(logp, wT)), -1)
			vl := tp.Scale(tp.MSE(v, rT), 0.5)
			loss := tp.Add(pl, tp.Scale(vl, cfg.VFCoef))
			tp.BackwardLeaves(loss)
			if norm := pol.ps.ClipGradNorm(40); !math.IsNaN(norm) && !math.IsInf(norm, 0) {
				opt.Step()
			}
			st.PolicyLoss += pl.Item()
			st.ValueLoss += vl.Item()
			for _, x := range wT.Data {
				st.MeanWeight += float64(x) / float64(len(mb))
			}
			batches++
			if s+cfg.Minibatch >= n {
				break
			}
		}
		st.PolicyLoss /= float64(batches)
		st.ValueLoss /= float64(batches)
		st.MeanWeight /= float64(batches)
		out = append(out, st)
	}
	return out, nil
}
