package rl

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/nn"
)

// Feature widths of the policy's inputs.
const (
	// candExtra: the newest history step and the mean over the history
	// (2 × channels), what would be left on the machine after placing the
	// job (CPU, memory, GPU), the Langevin energy seen three ways
	// (relative to the best candidate in units of T, as a log Boltzmann
	// probability, and signed-log raw), the GPU fragmentation the job
	// would add, and the contention model's prediction: the job's start
	// rate, the machine's CPU oversubscription after placing it, and that
	// times the jobs it would slow.
	candExtra = 2*env.HistoryChannels + 3 + 3 + 1 + 3
	// CandFeatures is the width of a candidate machine's row.
	CandFeatures = env.MachineFeatures + candExtra
	// CtxFeatures is the width of the decision context: the global vector
	// and the pending job's row.
	CtxFeatures = env.GlobalFeatures + env.JobFeatures
	// ReplicaChoices are the replica deltas -5..5.
	ReplicaChoices = 11
)

// PolicyConfig sizes the policy network and its action ranges.
type PolicyConfig struct {
	// Candidates bounds the machines scored per decision: every machine
	// that admits the job when there are at most this many, else this many
	// drawn as the langevin governor draws them (half from the field's
	// cold list, half uniform), so a decision costs O(Candidates)
	// whatever the cluster size.
	Candidates int     `json:"candidates"`
	Hidden     int     `json:"hidden"`
	DampingMin float64 `json:"damping_min"` // damping range of the Beta head
	DampingMax float64 `json:"damping_max"`
	// ReplicaZeroBias is the initial logit of "no replica change", so an
	// untrained policy does not churn services.
	ReplicaZeroBias float64 `json:"replica_zero_bias"`
	// Replicas enables the replica-delta head; off, the policy never
	// changes a service's replicas. The simulator applies a delta at every
	// decision for any replica of the service, so deltas compound, and
	// under a slowdown objective extra replicas only add work: an early
	// run's head drifted to adding replicas and its greedy policy added
	// 5,767 of them in two hours. Off by default.
	Replicas bool `json:"replicas"`
	// AuxEntropy weighs the replica, affinity and damping heads' entropy
	// in the entropy the learner's bonus rewards (the placement head's
	// counts fully).
	AuxEntropy float64 `json:"aux_entropy"`
	// Features names the featurisation: "" (the TEG cluster's, for the
	// time-stepped simulation) or FeaturesSaturation (the FGD saturation
	// experiment's; see appendSaturation).
	Features string `json:"features,omitempty"`
	// Encoder names the candidate encoder: "" (an MLP on each candidate's
	// row) or EncoderGNN (temporal and graph layers on the decision's
	// candidate graph, see graph.go).
	Encoder string `json:"encoder,omitempty"`
	// Activation names the MLP encoder's and the heads' nonlinearity: ""
	// (tanh, CleanRL's choice for PPO) or "relu". Distilled students use
	// ReLU: a width-8 student spent most of its decision in tanh, which
	// costs a float64 exp per element, while ReLU is a compare.
	Activation string `json:"activation,omitempty"`
}

// ActivationReLU is PolicyConfig.Activation for ReLU networks.
const ActivationReLU = "relu"

// act is the configured nonlinearity.
func (c *PolicyConfig) act() nn.Activation {
	if c.Activation == ActivationReLU {
		return nn.ActReLU
	}
	return nn.ActTanh
}

// FeaturesSaturation is PolicyConfig.Features for the saturation preset.
const FeaturesSaturation = "saturate"

// DefaultPolicyConfig: 16 candidates (the langevin governor's d), width
// 32, damping in [0, 2], no entropy bonus on the auxiliary heads.
func DefaultPolicyConfig() PolicyConfig {
	return PolicyConfig{Candidates: DefaultCandidates, Hidden: DefaultHidden, DampingMin: DefaultDampingMin, DampingMax: DefaultDampingMax, ReplicaZeroBias: DefaultReplicaZeroBias}
}

func (c *PolicyConfig) validate() error {
	if c.Features != "" && c.Features != FeaturesSaturation {
		return fmt.Errorf("policy config: features %q, want \"\" or %q", c.Features, FeaturesSaturation)
	}
	if c.Encoder != "" && c.Encoder != EncoderGNN {
		return fmt.Errorf("policy config: unknown encoder %q (want \"\" or %q)", c.Encoder, EncoderGNN)
	}
	if c.Encoder == EncoderGNN && c.Features != "" {
		return fmt.Errorf("policy config: the %s encoder needs the cluster features, not %q", c.Encoder, c.Features)
	}
	if c.Activation != "" && c.Activation != ActivationReLU {
		return fmt.Errorf("policy config: unknown activation %q (want \"\" for tanh or %q)", c.Activation, ActivationReLU)
	}
	if c.Activation != "" && c.Encoder != "" {
		return fmt.Errorf("policy config: activation %q needs the MLP encoder (the %s encoder uses tanh)", c.Activation, c.Encoder)
	}
	if c.Candidates < 1 || c.Candidates > 4096 || c.Hidden < 1 || c.Hidden > 4096 {
		return fmt.Errorf("policy config: candidates %d, hidden %d out of range [1, 4096]", c.Candidates, c.Hidden)
	}
	if !(c.AuxEntropy >= 0) || math.IsInf(c.AuxEntropy, 0) {
		return fmt.Errorf("policy config: aux entropy weight %g, want >= 0", c.AuxEntropy)
	}
	if !(c.DampingMax > c.DampingMin) || c.DampingMin < 0 || math.IsInf(c.DampingMax, 0) {
		return fmt.Errorf("policy config: damping range [%g, %g] invalid", c.DampingMin, c.DampingMax)
	}
	return nil
}

// Policy is the learned scheduler's network: a candidate encoder scores
// each candidate machine against the decision context (masked softmax over
// the candidates that the safety layer admits), and heads on the pooled
// candidates and the context give the replica delta (categorical over
// -5..5), the affinity weight (Beta on [0, 1]), the damping (Beta on the
// configured range) and the state value.
type Policy struct {
	Cfg PolicyConfig
	ps  *nn.Params[float32]

	cand, ctx, score, value *nn.MLP[float32]
	rep, aff, damp          *nn.Linear[float32]
	enc                     *gnnEncoder // in place of cand with EncoderGNN

	// Inference scratch (Act).
	tp   *nn.Tape[float32]
	one  Samples
	feat Featurizer
	idx  [1]int
}

// NewPolicy builds a policy with orthogonal initialisation from seed.
func NewPolicy(cfg PolicyConfig, seed uint64) (*Policy, error) {
	return newPolicy(cfg, seed, true)
}

// paramCount is the number of parameters NewPolicy makes for cfg, known
// before making them: a policy file's tensors are checked against it
// before a network of the size its metadata claims is built.
func (c *PolicyConfig) paramCount() int {
	h := c.Hidden
	mlp := func(sizes ...int) int {
		n := 0
		for i := 1; i < len(sizes); i++ {
			n += sizes[i-1]*sizes[i] + sizes[i]
		}
		return n
	}
	enc := mlp(CandFeatures, h, h)
	if c.Encoder == EncoderGNN {
		enc = gnnParams(h)
	}
	return enc + mlp(CtxFeatures, h) + 2*mlp(2*h, h, 1) + mlp(2*h, ReplicaChoices) + 2*mlp(2*h, 2)
}

// newPolicy is NewPolicy; without init the weights are left as the
// layers make them (a loaded file overwrites them: its orthogonal
// initialisation, a QR decomposition per layer, would be wasted).
func newPolicy(cfg PolicyConfig, seed uint64, init bool) (*Policy, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x706f6c2d696e6974)) // "pol-init"
	ps := nn.NewParams[float32]()
	h := cfg.Hidden
	p := &Policy{Cfg: cfg, ps: ps, tp: nn.NewTape[float32]()}
	if cfg.Encoder == EncoderGNN {
		p.enc = newGNNEncoder(ps, h, rng)
	} else {
		p.cand = nn.NewMLP(ps, "cand", []int{CandFeatures, h, h}, cfg.act(), rng)
	}
	p.ctx = nn.NewMLP(ps, "ctx", []int{CtxFeatures, h}, cfg.act(), rng)
	p.score = nn.NewMLP(ps, "score", []int{2 * h, h, 1}, cfg.act(), rng)
	p.value = nn.NewMLP(ps, "value", []int{2 * h, h, 1}, cfg.act(), rng)
	p.rep = nn.NewLinear(ps, "replica", 2*h, ReplicaChoices, rng)
	p.aff = nn.NewLinear(ps, "affinity", 2*h, 2, rng)
	p.damp = nn.NewLinear(ps, "damping", 2*h, 2, rng)
	if init {
		if p.cand != nil {
			orthoInit(p.cand, math.Sqrt2, rng)
		}
		if p.enc != nil {
			p.enc.init(rng)
		}
		orthoInit(p.ctx, math.Sqrt2, rng)
		orthoInit(p.score, 0.01, rng)
		orthoInit(p.value, 1, rng)
		for _, l := range []*nn.Linear[float32]{p.rep, p.aff, p.damp} {
			nn.Orthogonal(l.W, 0.01, rng)
			clear(l.B.Data)
		}
		p.rep.B.Data[ReplicaChoices/2] = float32(cfg.ReplicaZeroBias)
	}
	p.one.Configure(cfg)
	p.feat.Force = -1
	p.feat.Saturation = cfg.Features == FeaturesSaturation
	return p, nil
}

// Params implements Model's parameter access.
func (p *Policy) Params() *nn.Params[float32] { return p.ps }

// heads are one forward pass's outputs for B decisions.
type heads struct {
	node         *nn.Tensor[float32] // [B × K] candidate logits
	mask         []bool              // [B × K]
	rep          *nn.Tensor[float32] // [B × 11]
	affA, affB   *nn.Tensor[float32] // [B]
	dampA, dampB *nn.Tensor[float32] // [B]
	value        *nn.Tensor[float32] // [B]
}

// forward runs the network on samples idx of s; without value the value
// head is skipped (heads.value is nil).
func (p *Policy) forward(tp *nn.Tape[float32], s *Samples, idx []int, value bool) heads {
	B, K := len(idx), s.K
	xc, xg, mask, seg, rows := s.gather(idx)
	act := p.Cfg.act()
	hg := tp.Activate(p.ctx.Forward(tp, xg), act) // [B × H]
	var hc *nn.Tensor[float32]                    // [B·K × H]
	if p.enc != nil {
		hc = p.enc.forward(tp, xc, hg, s.gatherGraph(idx))
	} else {
		hc = tp.Activate(p.cand.Forward(tp, xc), act)
	}
	joint := tp.Concat(hc, tp.GatherRows(hg, rows), 1) // [B·K × 2H]
	node := tp.Reshape(p.score.Forward(tp, joint), B, K)
	pool := tp.Slice(tp.SegmentMean(hc, seg, B+1), 0, 0, B) // padded rows go to segment B
	z := tp.Concat(pool, hg, 1)                             // [B × 2H]
	ab := func(l *nn.Linear[float32]) (*nn.Tensor[float32], *nn.Tensor[float32]) {
		x := tp.Add(tp.Softplus(l.Forward(tp, z)), s.ones(B))
		return tp.Reshape(tp.Slice(x, 1, 0, 1), B), tp.Reshape(tp.Slice(x, 1, 1, 2), B)
	}
	out := heads{node: node, mask: mask, rep: p.rep.Forward(tp, z)}
	if value {
		out.value = tp.Reshape(p.value.Forward(tp, z), B)
	}
	out.affA, out.affB = ab(p.aff)
	out.dampA, out.dampB = ab(p.damp)
	return out
}

// Heads are the policy's outputs for a batch of B samples, recorded on a
// tape: candidate logits [B × K] with their mask (padding excluded),
// replica logits [B × 11], the Beta parameters of affinity and damping
// [B] each, and the value [B]. Distillation matches a student's to a
// teacher's.
type Heads struct {
	Node                     *nn.Tensor[float32]
	Mask                     []bool
	Replica                  *nn.Tensor[float32]
	AffA, AffB, DampA, DampB *nn.Tensor[float32]
	Value                    *nn.Tensor[float32]
}

// Forward runs the network on samples idx of s.
func (p *Policy) Forward(tp *nn.Tape[float32], s *Samples, idx []int) Heads {
	o := p.forward(tp, s, idx, true)
	return Heads{Node: o.node, Mask: o.mask, Replica: o.rep, AffA: o.affA, AffB: o.affB, DampA: o.dampA, DampB: o.dampB, Value: o.value}
}

// evaluate returns, for the samples idx of s, the joint log-probability of
// the stored hybrid action (the replica and affinity terms only for
// services, the only jobs they act on), its entropy and the value.
func (p *Policy) evaluate(tp *nn.Tape[float32], s *Samples, idx []int) (logp, entropy, value *nn.Tensor[float32]) {
	return p.logProb(tp, p.forward(tp, s, idx, true), s, idx, true)
}

// logProb is evaluate on the heads o; without ent it records no entropy
// operations (a decision needs only the log-probability) and entropy is
// nil. The entropy terms stay interleaved with the log-probability's in
// the order they always had on the tape: the backward pass sums the
// gradients in that order, so training gives the same bits as before.
func (p *Policy) logProb(tp *nn.Tape[float32], o heads, s *Samples, idx []int, ent bool) (logp, entropy, value *nn.Tensor[float32]) {
	choice, rep, aff, damp, svc := s.actions(idx)
	lp := tp.Add(tp.CategoricalLogProb(o.node, o.mask, choice), tp.BetaLogProb(o.dampA, o.dampB, damp))
	// The entropy the learner's bonus rewards: the placement head's, plus
	// AuxEntropy times the other heads'. A full bonus on the replica head
	// (11 classes) and the Beta heads (whose entropy peaks at the uniform
	// distribution) pushes an untrained policy towards churning replicas
	// and random damping, which costs more than exploration gains.
	var e, sent *nn.Tensor[float32]
	if ent {
		e = tp.Add(tp.CategoricalEntropy(o.node, o.mask), tp.Scale(tp.BetaEntropy(o.dampA, o.dampB), p.Cfg.AuxEntropy))
	}
	slp := tp.BetaLogProb(o.affA, o.affB, aff)
	if ent {
		sent = tp.Scale(tp.BetaEntropy(o.affA, o.affB), p.Cfg.AuxEntropy)
	}
	if p.Cfg.Replicas {
		slp = tp.Add(slp, tp.CategoricalLogProb(o.rep, nil, rep))
		if ent {
			sent = tp.Add(sent, tp.Scale(tp.CategoricalEntropy(o.rep, nil), p.Cfg.AuxEntropy))
		}
	}
	lp = tp.Add(lp, tp.Mul(slp, svc))
	if ent {
		e = tp.Add(e, tp.Mul(sent, svc))
	}
	return lp, e, o.value
}

// Featurize appends d's sample to s (see Featurizer.Append); false when no
// machine admits the job. A policy keeps one featurizer: its observation
// buffers make the refreshes of consecutive decisions incremental.
func (p *Policy) Featurize(d Decision, s *Samples) bool { return p.feat.Append(d, s) }

// Act decides for one decision: it featurises d, then samples the hybrid
// action (see Sample). ok is false when no machine admits the job (the
// action is then Wait and nothing is to be learned).
func (p *Policy) Act(d Decision, rng *rand.Rand, greedy bool) (a env.Action, logp, value float32, ok bool) {
	s := &p.one
	s.Reset()
	if !p.Featurize(d, s) {
		return env.Wait, 0, 0, false
	}
	a, logp, value = p.Sample(s, 0, rng, greedy)
	return p.feat.placeGPU(a), logp, value, true
}

// Decide is Act in the evaluation mode without the log-probability and
// the value: the same action, for callers that use only the action (a
// serving decision), so neither the value head nor the heads'
// log-probabilities are computed. ok is false when no machine admits the
// job.
func (p *Policy) Decide(d Decision) (a env.Action, ok bool) {
	s := &p.one
	s.Reset()
	if !p.Featurize(d, s) {
		return env.Wait, false
	}
	p.tp.Reset()
	p.idx[0] = 0
	p.choose(p.forward(p.tp, s, p.idx[:], false), s, 0, nil, true)
	return p.feat.placeGPU(p.action(s, 0)), true
}

// Sample draws the hybrid action for sample i of s, stores it there and
// returns the simulator action, the joint log-probability and the value.
// Greedy takes the most likely node and replica delta and the Beta means
// (the evaluation mode).
func (p *Policy) Sample(s *Samples, i int, rng *rand.Rand, greedy bool) (a env.Action, logp, value float32) {
	tp := p.tp
	tp.Reset()
	p.idx[0] = i
	idx := p.idx[:]
	o := p.forward(tp, s, idx, true)
	p.choose(o, s, i, rng, greedy)
	lp, _, v := p.logProb(tp, o, s, idx, false)
	return p.action(s, i), lp.Data[0], v.Data[0]
}

// choose draws (or, greedy, takes the mode of) the hybrid action from the
// heads o of sample i alone and stores it in s.
func (p *Policy) choose(o heads, s *Samples, i int, rng *rand.Rand, greedy bool) {
	K := s.K
	n := int(s.Valid[i])
	logits := o.node.Data[:K]
	var choice int
	if greedy {
		choice = nn.Argmax(logits[:n])
	} else {
		choice = sampleLogits(rng, logits[:n])
	}
	rep := ReplicaChoices / 2 // no change
	switch {
	case !p.Cfg.Replicas:
	case greedy:
		rep = nn.Argmax(o.rep.Data)
	default:
		rep = sampleLogits(rng, o.rep.Data)
	}
	beta := func(a, b float32) float32 {
		if greedy {
			return min(1-1e-6, max(1e-6, a/(a+b)))
		}
		return float32(nn.SampleBeta(rng, float64(a), float64(b)))
	}
	aff := beta(o.affA.Data[0], o.affB.Data[0])
	damp := beta(o.dampA.Data[0], o.dampB.Data[0])
	s.SetAction(i, choice, rep, aff, damp)
}

// action turns sample i's stored action into the simulator's.
func (p *Policy) action(s *Samples, i int) env.Action {
	a := env.Place(int(s.Nodes[i*s.K+int(s.Choice[i])]), -1)
	a.Damping = float32(p.Cfg.DampingMin + float64(s.Damp[i])*(p.Cfg.DampingMax-p.Cfg.DampingMin))
	if s.Service[i] != 0 {
		a.ReplicaDelta = int(s.Replica[i]) - ReplicaChoices/2
		a.Affinity = s.Aff[i]
	}
	return a
}

// sampleLogits draws an index with probability softmax(x).
func sampleLogits(rng *rand.Rand, x []float32) int {
	m := x[nn.Argmax(x)]
	var sum float64
	for _, v := range x {
		sum += math.Exp(float64(v - m))
	}
	u := rng.Float64() * sum
	for i, v := range x {
		if u -= math.Exp(float64(v - m)); u < 0 {
			return i
		}
	}
	return len(x) - 1
}
