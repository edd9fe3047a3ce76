package rl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tegrl/tegrl/nn"
)

// Config holds the learner's hyper-parameters, named as in CleanRL's
// ppo.py. DefaultConfig is the TEG setting; CartPoleConfig CleanRL's.
type Config struct {
	LR          float64 `json:"lr"`            // Adam learning rate (start of the linear anneal)
	AnnealLR    bool    `json:"anneal_lr"`     // decay the rate linearly to 0 over the run
	Gamma       float64 `json:"gamma"`         // discount
	Lambda      float64 `json:"gae_lambda"`    // GAE λ (and V-trace's trace-cutting λ)
	Epochs      int     `json:"update_epochs"` // passes over each batch
	Minibatches int     `json:"num_minibatches"`
	ClipCoef    float64 `json:"clip_coef"`  // surrogate clipping ε
	ClipVLoss   bool    `json:"clip_vloss"` // clip the value loss around the old values
	EntCoef     float64 `json:"ent_coef"`
	VFCoef      float64 `json:"vf_coef"`
	MaxGradNorm float64 `json:"max_grad_norm"`
	// TargetKL stops an update's epochs once the approximate KL of a
	// minibatch exceeds 1.5·TargetKL; 0 never stops early.
	TargetKL float64 `json:"target_kl"`
	NormAdv  bool    `json:"norm_adv"` // normalise advantages per minibatch
	AdamEps  float64 `json:"adam_eps"`
	// RhoBar and CBar clip V-trace's importance weights (Espeholt et al.
	// 2018); 1 and 1 as in IMPALA.
	RhoBar float64 `json:"vtrace_rho_bar"`
	CBar   float64 `json:"vtrace_c_bar"`
}

// DefaultConfig is the learner setting for the TEG environment, from the
// constants of presets.go: GAE (0.99, 0.95), clip 0.2, gradient-norm clip
// 40, approximate-KL early stop at 1.5 × 0.015. The value loss is not clipped:
// clipping it to ±0.2 around the old values stalls a critic whose targets
// are far from its initial outputs (CleanRL clips, but on normalised
// rewards).
func DefaultConfig() Config {
	return Config{
		LR: DefaultLR, AnnealLR: true, Gamma: DefaultGamma, Lambda: DefaultLambda, Epochs: 4, Minibatches: 4,
		ClipCoef: DefaultClipCoef, ClipVLoss: false, EntCoef: DefaultEntCoef, VFCoef: 0.5, MaxGradNorm: DefaultMaxGradNorm,
		TargetKL: DefaultTargetKL, NormAdv: true, AdamEps: 1e-5, RhoBar: 1, CBar: 1,
	}
}

// CartPoleConfig is CleanRL's ppo.py default for CartPole-v1.
func CartPoleConfig() Config {
	return Config{
		LR: 2.5e-4, AnnealLR: true, Gamma: 0.99, Lambda: 0.95, Epochs: 4, Minibatches: 4,
		ClipCoef: 0.2, ClipVLoss: true, EntCoef: 0.01, VFCoef: 0.5, MaxGradNorm: 0.5,
		NormAdv: true, AdamEps: 1e-5, RhoBar: 1, CBar: 1,
	}
}

// Validate reports the first out-of-range hyper-parameter.
func (c *Config) Validate() error {
	switch {
	case !(c.LR > 0):
		return fmt.Errorf("ppo config: lr %g, want > 0", c.LR)
	case !(c.Gamma >= 0 && c.Gamma <= 1):
		return fmt.Errorf("ppo config: gamma %g, want in [0, 1]", c.Gamma)
	case !(c.Lambda >= 0 && c.Lambda <= 1):
		return fmt.Errorf("ppo config: gae_lambda %g, want in [0, 1]", c.Lambda)
	case c.Epochs < 1 || c.Minibatches < 1:
		return fmt.Errorf("ppo config: %d epochs, %d minibatches, want >= 1", c.Epochs, c.Minibatches)
	case !(c.ClipCoef > 0):
		return fmt.Errorf("ppo config: clip_coef %g, want > 0", c.ClipCoef)
	case !(c.MaxGradNorm > 0):
		return fmt.Errorf("ppo config: max_grad_norm %g, want > 0", c.MaxGradNorm)
	case !(c.TargetKL >= 0) || !(c.EntCoef >= 0) || !(c.VFCoef >= 0):
		return fmt.Errorf("ppo config: target_kl, ent_coef and vf_coef must be >= 0")
	case !(c.RhoBar > 0) || !(c.CBar > 0):
		return fmt.Errorf("ppo config: V-trace rho_bar %g, c_bar %g, want > 0", c.RhoBar, c.CBar)
	}
	return nil
}

// Model is a policy-value network over a batch of stored samples. The
// learner never sees observations or actions: the model keeps them and
// evaluates samples by index.
type Model interface {
	Params() *nn.Params[float32]
	// Evaluate records on tp, for the samples idx, the log-probability of
	// the stored actions under the current parameters, the policy's entropy
	// and the value estimate: three tensors of shape [len(idx)].
	Evaluate(tp *nn.Tape[float32], idx []int) (logp, entropy, value *nn.Tensor[float32])
}

// Batch is what one update learns from, indexed like the model's samples.
// OldLogP are the log-probabilities under the policy that the ratio is
// taken against; Values the value estimates when the advantages were
// computed.
type Batch struct {
	OldLogP, Values, Adv, Returns []float32
}

// Len is the number of samples.
func (b *Batch) Len() int { return len(b.Adv) }

func (b *Batch) validate() error {
	n := len(b.Adv)
	if n == 0 {
		return errors.New("ppo: empty batch")
	}
	if len(b.OldLogP) != n || len(b.Values) != n || len(b.Returns) != n {
		return fmt.Errorf("ppo: batch lengths old_logp %d, values %d, adv %d, returns %d differ",
			len(b.OldLogP), len(b.Values), n, len(b.Returns))
	}
	for i := 0; i < n; i++ {
		if !finite32(b.OldLogP[i]) || !finite32(b.Values[i]) || !finite32(b.Adv[i]) || !finite32(b.Returns[i]) {
			return fmt.Errorf("ppo: batch sample %d is not finite", i)
		}
	}
	return nil
}

func finite32(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }

// UpdateStats are the standard diagnostics of one update, averaged over
// the minibatches it ran.
type UpdateStats struct {
	PolicyLoss   float64 `json:"policy_loss"`
	ValueLoss    float64 `json:"value_loss"`
	Entropy      float64 `json:"entropy"`
	ApproxKL     float64 `json:"approx_kl"` // of the last minibatch, (r-1) - log r estimator
	ClipFrac     float64 `json:"clip_frac"`
	ExplainedVar float64 `json:"explained_variance"`
	LR           float64 `json:"learning_rate"`
	GradNorm     float64 `json:"grad_norm"` // before clipping, mean over minibatches
	Epochs       int     `json:"epochs"`    // epochs run (fewer after a KL stop)
	Minibatches  int     `json:"minibatches"`
	SkippedSteps int     `json:"skipped_steps"` // minibatches whose gradient was not finite
}

// PPO is the clipped-surrogate learner (Schulman et al. 2017) with the
// CleanRL details: per-minibatch advantage normalisation, clipped value
// loss, global gradient-norm clipping and approximate-KL early stopping.
type PPO struct {
	Cfg   Config
	model Model
	opt   *nn.Adam[float32]
	tp    *nn.Tape[float32]
	src   *rand.PCG
	rng   *rand.Rand

	perm                    []int
	oldLogP, adv, ret, oldV *nn.Tensor[float32]
	updates                 int
}

// NewPPO returns a learner for model. seed drives the minibatch shuffles.
func NewPPO(model Model, cfg Config, seed uint64) (*PPO, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opt := nn.NewAdam(model.Params(), cfg.LR)
	opt.Eps = cfg.AdamEps
	src := rand.NewPCG(seed, 0x70706f2d6d696e69) // "ppo-mini"
	return &PPO{
		Cfg: cfg, model: model, opt: opt, tp: nn.NewTape[float32](), src: src,
		rng:     rand.New(src),
		oldLogP: nn.Zeros[float32](0), adv: nn.Zeros[float32](0), ret: nn.Zeros[float32](0), oldV: nn.Zeros[float32](0),
	}, nil
}

// Optimizer exposes the Adam state (for checkpoints).
func (p *PPO) Optimizer() *nn.Adam[float32] { return p.opt }

// RNGState is the minibatch shuffler's state (for checkpoints).
func (p *PPO) RNGState() ([]byte, error) { return p.src.MarshalBinary() }

// SetRNGState restores RNGState's bytes.
func (p *PPO) SetRNGState(b []byte) error { return p.src.UnmarshalBinary(b) }

// Updates is the number of updates run.
func (p *PPO) Updates() int { return p.updates }

// Update runs the configured epochs of minibatch steps on b at learning
// rate lr and returns the diagnostics.
func (p *PPO) Update(b *Batch, lr float64) (UpdateStats, error) {
	if err := b.validate(); err != nil {
		return UpdateStats{}, err
	}
	cfg := &p.Cfg
	n := b.Len()
	mbSize := max(1, n/cfg.Minibatches)
	if cap(p.perm) < n {
		p.perm = make([]int, n)
	}
	p.perm = p.perm[:n]
	for i := range p.perm {
		p.perm[i] = i
	}
	p.opt.LR = lr
	st := UpdateStats{LR: lr, ExplainedVar: explainedVariance(b.Values, b.Returns)}
	var clipSum float64
	for epoch := 0; epoch < cfg.Epochs; epoch++ {
		p.rng.Shuffle(n, func(i, j int) { p.perm[i], p.perm[j] = p.perm[j], p.perm[i] })
		stop := false
		for start := 0; start+mbSize <= n; start += mbSize {
			mb := p.perm[start : start+mbSize]
			m := p.minibatch(b, mb)
			st.Minibatches++
			st.PolicyLoss += m.pg
			st.ValueLoss += m.v
			st.Entropy += m.ent
			st.ApproxKL = m.kl
			clipSum += m.clip
			st.GradNorm += m.norm
			if !m.stepped {
				st.SkippedSteps++
			}
			if cfg.TargetKL > 0 && m.kl > KLStopFactor*cfg.TargetKL {
				stop = true
				break
			}
		}
		st.Epochs++
		if stop {
			break
		}
	}
	k := float64(max(1, st.Minibatches))
	st.PolicyLoss /= k
	st.ValueLoss /= k
	st.Entropy /= k
	st.GradNorm /= k
	st.ClipFrac = clipSum / k
	p.updates++
	return st, nil
}

type mbStats struct {
	pg, v, ent, kl, clip, norm float64
	stepped                    bool
}

// minibatch takes one gradient step on the samples mb.
func (p *PPO) minibatch(b *Batch, mb []int) mbStats {
	cfg := &p.Cfg
	tp := p.tp
	tp.Reset()
	ps := p.model.Params()
	ps.ZeroGrad()
	k := len(mb)
	p.oldLogP = fill(p.oldLogP, b.OldLogP, mb)
	p.adv = fill(p.adv, b.Adv, mb)
	p.ret = fill(p.ret, b.Returns, mb)
	p.oldV = fill(p.oldV, b.Values, mb)
	if cfg.NormAdv && k > 1 {
		normalize(p.adv.Data)
	}
	logp, ent, v := p.model.Evaluate(tp, mb)
	logRatio := tp.Sub(logp, p.oldLogP)
	ratio := tp.Exp(logRatio)
	var st mbStats
	for i, lr := range logRatio.Data {
		r := float64(ratio.Data[i])
		st.kl += (r - 1) - float64(lr)
		if math.Abs(r-1) > cfg.ClipCoef {
			st.clip++
		}
	}
	st.kl /= float64(k)
	st.clip /= float64(k)

	// Policy loss: -E[min(r·A, clip(r, 1-ε, 1+ε)·A)].
	surr := tp.Minimum(tp.Mul(ratio, p.adv), tp.Mul(tp.Clip(ratio, 1-cfg.ClipCoef, 1+cfg.ClipCoef), p.adv))
	pgLoss := tp.Scale(tp.MeanAll(surr), -1)
	// Value loss: ½E[max((v-R)², (v_old + clip(v-v_old, ±ε) - R)²)].
	vErr := tp.Square(tp.Sub(v, p.ret))
	if cfg.ClipVLoss {
		vClipped := tp.Add(p.oldV, tp.Clip(tp.Sub(v, p.oldV), -cfg.ClipCoef, cfg.ClipCoef))
		vErrClipped := tp.Square(tp.Sub(vClipped, p.ret))
		vErr = tp.Scale(tp.Minimum(tp.Scale(vErr, -1), tp.Scale(vErrClipped, -1)), -1) // max
	}
	vLoss := tp.Scale(tp.MeanAll(vErr), 0.5)
	entMean := tp.MeanAll(ent)
	loss := tp.Add(tp.Add(pgLoss, tp.Scale(entMean, -cfg.EntCoef)), tp.Scale(vLoss, cfg.VFCoef))
	tp.BackwardLeaves(loss)
	st.pg, st.v, st.ent = pgLoss.Item(), vLoss.Item(), entMean.Item()
	st.norm = ps.ClipGradNorm(cfg.MaxGradNorm)
	if st.stepped = !math.IsNaN(st.norm) && !math.IsInf(st.norm, 0); st.stepped {
		p.opt.Step()
	}
	return st
}

// fill copies src[idx] into t, resized to len(idx).
func fill(t *nn.Tensor[float32], src []float32, idx []int) *nn.Tensor[float32] {
	t.Resize(len(idx))
	for i, j := range idx {
		t.Data[i] = src[j]
	}
	return t
}

// normalize rescales x to mean 0 and standard deviation 1 (sample std,
// ε 1e-8), as CleanRL does per minibatch.
func normalize(x []float32) {
	var mean float64
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	var ss float64
	for _, v := range x {
		d := float64(v) - mean
		ss += d * d
	}
	std := math.Sqrt(ss / float64(len(x)-1))
	for i, v := range x {
		x[i] = float32((float64(v) - mean) / (std + 1e-8))
	}
}

// explainedVariance is 1 - Var[R - V]/Var[R]: 1 for a perfect critic, 0
// for one that predicts a constant, NaN when the returns do not vary.
func explainedVariance(v, r []float32) float64 {
	var mr, md float64
	for i := range r {
		mr += float64(r[i])
		md += float64(r[i] - v[i])
	}
	n := float64(len(r))
	mr /= n
	md /= n
	var vr, vd float64
	for i := range r {
		a := float64(r[i]) - mr
		d := float64(r[i]-v[i]) - md
		vr += a * a
		vd += d * d
	}
	if vr == 0 {
		return math.NaN()
	}
	return 1 - vd/vr
}

// GAE computes generalised advantage estimates (Schulman et al. 2016) and
// returns (adv + value) for one trajectory. dones[t] says the episode ended
// after step t, so nothing is bootstrapped across it; bootstrap is the
// value of the state after the last step.
func GAE(adv, ret, rewards, values []float32, dones []bool, bootstrap float32, gamma, lambda float64) {
	var last float64
	next := float64(bootstrap)
	for t := len(rewards) - 1; t >= 0; t-- {
		nonTerminal := 1.0
		if dones[t] {
			nonTerminal = 0
		}
		delta := float64(rewards[t]) + gamma*next*nonTerminal - float64(values[t])
		last = delta + gamma*lambda*nonTerminal*last
		adv[t] = float32(last)
		ret[t] = float32(last + float64(values[t]))
		next = float64(values[t])
	}
}

// VTrace computes V-trace value targets vs and policy-gradient advantages
// (Espeholt et al. 2018, eq. 1 and §4.2) for one trajectory segment
// generated by a behaviour policy μ and evaluated under π: logRhos[t] =
// log π(a_t|x_t) - log μ(a_t|x_t). Truncation: ρ_t = min(ρ̄, π/μ) and
// c_t = λ·min(c̄, π/μ). With π = μ the targets vs are GAE's λ-returns,
// and with λ = 1 the advantages are GAE's too.
func VTrace(vs, adv, rewards, values []float32, dones []bool, logRhos []float32, bootstrap float32, gamma, lambda, rhoBar, cBar float64) {
	n := len(rewards)
	nextV := float64(bootstrap)  // V(x_{t+1})
	nextVs := float64(bootstrap) // vs_{t+1}
	var acc float64              // vs_{t+1} - V(x_{t+1})
	for t := n - 1; t >= 0; t-- {
		nonTerminal := 1.0
		if dones[t] {
			nonTerminal = 0
		}
		ratio := math.Exp(float64(logRhos[t]))
		rho := min(rhoBar, ratio)
		c := lambda * min(cBar, ratio)
		v := float64(values[t])
		delta := rho * (float64(rewards[t]) + gamma*nonTerminal*nextV - v)
		acc = delta + gamma*nonTerminal*c*acc
		vsT := v + acc
		adv[t] = float32(rho * (float64(rewards[t]) + gamma*nonTerminal*nextVs - v))
		vs[t] = float32(vsT)
		nextV, nextVs = v, vsT
	}
}
