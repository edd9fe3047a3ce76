package rl

import (
	"math"
	"math/rand/v2"

	"github.com/tegrl/tegrl/nn"
)

// MLPActorCritic is CleanRL's discrete-action agent: separate actor and
// critic MLPs with tanh hidden layers, orthogonal initialisation (gain √2,
// the actor's last layer 0.01, the critic's 1) and zero biases. It stores
// the observations and actions of a rollout so the learner can evaluate
// them by index.
type MLPActorCritic struct {
	ps            *nn.Params[float32]
	actor, critic *nn.MLP[float32]
	obsDim, nAct  int

	// Rollout storage, filled by Store.
	obs  []float32
	acts []int

	x    *nn.Tensor[float32] // minibatch observations
	aIdx []int
}

// NewMLPActorCritic builds the agent for obsDim inputs and nAct actions
// with the given hidden widths.
func NewMLPActorCritic(obsDim, nAct int, hidden []int, seed uint64) *MLPActorCritic {
	rng := rand.New(rand.NewPCG(seed, 0x6d6c702d696e6974)) // "mlp-init"
	ps := nn.NewParams[float32]()
	sizes := func(out int) []int { return append(append([]int{obsDim}, hidden...), out) }
	m := &MLPActorCritic{ps: ps, obsDim: obsDim, nAct: nAct,
		critic: nn.NewMLP(ps, "critic", sizes(1), nn.ActTanh, rng),
		actor:  nn.NewMLP(ps, "actor", sizes(nAct), nn.ActTanh, rng),
		x:      nn.Zeros[float32](0),
	}
	orthoInit(m.critic, 1, rng)
	orthoInit(m.actor, 0.01, rng)
	return m
}

// orthoInit gives every layer of m an orthogonal weight with gain √2 (the
// last layer: last) and a zero bias.
func orthoInit(m *nn.MLP[float32], last float64, rng *rand.Rand) {
	for i, l := range m.Layers {
		g := math.Sqrt2
		if i == len(m.Layers)-1 {
			g = last
		}
		nn.Orthogonal(l.W, g, rng)
		clear(l.B.Data)
	}
}

// Params implements Model.
func (m *MLPActorCritic) Params() *nn.Params[float32] { return m.ps }

// Reset forgets the stored rollout.
func (m *MLPActorCritic) Reset() { m.obs, m.acts = m.obs[:0], m.acts[:0] }

// Store appends one sample (observation and the action taken) and returns
// its index.
func (m *MLPActorCritic) Store(obs []float32, a int) int {
	m.obs = append(m.obs, obs...)
	m.acts = append(m.acts, a)
	return len(m.acts) - 1
}

// Act samples an action for each of the n observations in obs (row-major
// [n × obsDim]) and writes it with its log-probability and the value.
func (m *MLPActorCritic) Act(tp *nn.Tape[float32], obs []float32, rng *rand.Rand, acts []int, logp, value []float32) {
	tp.Reset()
	n := len(obs) / m.obsDim
	x := nn.NewTensor(obs, n, m.obsDim)
	logits := m.actor.Forward(tp, x)
	lp := tp.LogSoftmax(logits, nil)
	v := m.critic.Forward(tp, x)
	for i := 0; i < n; i++ {
		row := lp.Data[i*m.nAct : (i+1)*m.nAct]
		u := rng.Float64()
		a := m.nAct - 1
		for j, l := range row {
			if u -= math.Exp(float64(l)); u < 0 {
				a = j
				break
			}
		}
		acts[i], logp[i], value[i] = a, row[a], v.Data[i]
	}
}

// Evaluate implements Model.
func (m *MLPActorCritic) Evaluate(tp *nn.Tape[float32], idx []int) (logp, entropy, value *nn.Tensor[float32]) {
	k := len(idx)
	if cap(m.x.Data) < k*m.obsDim {
		m.x = nn.Zeros[float32](k, m.obsDim)
	} else {
		m.x = nn.NewTensor(m.x.Data[:k*m.obsDim], k, m.obsDim)
	}
	m.aIdx = m.aIdx[:0]
	for i, j := range idx {
		copy(m.x.Data[i*m.obsDim:(i+1)*m.obsDim], m.obs[j*m.obsDim:(j+1)*m.obsDim])
		m.aIdx = append(m.aIdx, m.acts[j])
	}
	logits := m.actor.Forward(tp, m.x)
	logp = tp.CategoricalLogProb(logits, nil, m.aIdx)
	entropy = tp.CategoricalEntropy(logits, nil)
	value = tp.Reshape(m.critic.Forward(tp, m.x), k)
	return logp, entropy, value
}
