// Package distill distils a trained policy (the teacher) into a smaller
// student with the same inputs and hybrid action heads: the student learns
// the teacher's placement distribution at temperature T (KL, scaled by T²,
// Hinton et al. 2015), the means and concentrations of its Beta heads
// (moment matching) and its value, on decisions the teacher visits.
package distill

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/nn"
	"github.com/tegrl/tegrl/rl"
)

// Config configures a distillation.
type Config struct {
	Student     rl.PolicyConfig `json:"student"` // Candidates must be the teacher's
	Temperature float64         `json:"temperature"`
	Epochs      int             `json:"epochs"`
	Minibatch   int             `json:"minibatch"`
	LR          float64         `json:"lr"`
	VFCoef      float64         `json:"vf_coef"`
	Seed        uint64          `json:"seed"`
}

// DefaultConfig: a ReLU MLP student of the teacher's inputs and heads (a
// GNN teacher's student has no graph encoder), with the Distill
// constants of rl/presets.go.
func DefaultConfig(teacher rl.PolicyConfig) Config {
	s := teacher
	s.Hidden, s.Encoder, s.Activation = rl.DistillHidden, "", rl.ActivationReLU
	return Config{Student: s, Temperature: rl.DistillTemperature, Epochs: rl.DistillEpochs, Minibatch: rl.DistillMinibatch,
		LR: rl.DistillLR, VFCoef: rl.DistillVFCoef, Seed: 1}
}

// Collect runs the teacher, sampling as in training, on episodes of spec
// (seeds from seed on) until n decisions are gathered, and returns them;
// graph adds graph rows (for a GNN policy that did not act).
func Collect(ctx context.Context, teacher *rl.Policy, spec rl.EnvSpec, n int, seed uint64, graph bool) (*rl.Samples, error) {
	e, err := rl.NewClusterEnv(spec.Config())
	if err != nil {
		return nil, err
	}
	defer e.Close()
	s := new(rl.Samples)
	s.Configure(teacher.Cfg)
	s.WithGraph = s.WithGraph || graph
	rng := rand.New(rand.NewPCG(seed, 0x64697374696c6c))
	for ep := uint64(0); s.Len() < n; ep++ {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		d, err := e.Reset(seed + ep)
		if err != nil {
			return nil, err
		}
		for d.Obs != nil && s.Len() < n {
			a := env.Wait
			if teacher.Featurize(d, s) {
				a, _, _ = teacher.Sample(s, s.Len()-1, rng, false)
			}
			var done bool
			if d, _, done = e.Step(a); done {
				break
			}
		}
	}
	return s, nil
}

// labels are the teacher's outputs on the collected decisions.
type labels struct {
	probs                    []float32 // [S × K]: softmax(logits/T) over the valid candidates
	affM, affC, dampM, dampC []float32 // Beta mean and log concentration
	value                    []float32
}

const chunk = 256

func label(teacher *rl.Policy, s *rl.Samples, temp float64) labels {
	n, K := s.Len(), s.K
	l := labels{probs: make([]float32, n*K), affM: make([]float32, n), affC: make([]float32, n),
		dampM: make([]float32, n), dampC: make([]float32, n), value: make([]float32, n)}
	tp := nn.NewTape[float32]()
	idx := make([]int, 0, chunk)
	for start := 0; start < n; start += chunk {
		idx = idx[:0]
		for i := start; i < min(n, start+chunk); i++ {
			idx = append(idx, i)
		}
		tp.Reset()
		h := teacher.Forward(tp, s, idx)
		for b, i := range idx {
			v := int(s.Valid[i])
			row := h.Node.Data[b*K : b*K+v]
			m := row[0]
			for _, x := range row {
				m = max(m, x)
			}
			var z float64
			for _, x := range row {
				z += math.Exp(float64(x-m) / temp)
			}
			for k, x := range row {
				l.probs[i*K+k] = float32(math.Exp(float64(x-m)/temp) / z)
			}
			a, bb := float64(h.AffA.Data[b]), float64(h.AffB.Data[b])
			l.affM[i], l.affC[i] = float32(a/(a+bb)), float32(math.Log(a+bb))
			a, bb = float64(h.DampA.Data[b]), float64(h.DampB.Data[b])
			l.dampM[i], l.dampC[i] = float32(a/(a+bb)), float32(math.Log(a+bb))
			l.value[i] = h.Value.Data[b]
		}
	}
	return l
}

// Stats is one epoch's log line.
type Stats struct {
	Epoch     int     `json:"epoch"`
	KL        float64 `json:"kl_t2"`     // T²·KL(teacher ‖ student) of the placement head, mean
	Beta      float64 `json:"beta_loss"` // squared error of the Beta means and log concentrations
	Value     float64 `json:"value_loss"`
	Agreement float64 `json:"agreement"` // top-1 placement agreement with the teacher
}

// Train fits a new student to the teacher on s and returns it with one
// log line per epoch.
func Train(teacher *rl.Policy, s *rl.Samples, cfg Config) (*rl.Policy, []Stats, error) {
	if cfg.Student.Candidates != teacher.Cfg.Candidates {
		return nil, nil, fmt.Errorf("distill: the student scores %d candidates, the teacher %d", cfg.Student.Candidates, teacher.Cfg.Candidates)
	}
	if !(cfg.Temperature > 0) || cfg.Epochs < 1 || cfg.Minibatch < 1 || !(cfg.LR > 0) {
		return nil, nil, fmt.Errorf("distill: config %+v out of range", cfg)
	}
	n := s.Len()
	if n == 0 {
		return nil, nil, fmt.Errorf("distill: no decisions")
	}
	if err := s.Validate(); err != nil {
		return nil, nil, fmt.Errorf("distill: %w", err)
	}
	student, err := rl.NewPolicy(cfg.Student, cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	out, err := fit(teacher, student, s, cfg)
	return student, out, err
}

// fit trains student on s towards teacher's outputs for cfg.Epochs.
func fit(teacher, student *rl.Policy, s *rl.Samples, cfg Config) ([]Stats, error) {
	n, K := s.Len(), s.K
	lab := label(teacher, s, cfg.Temperature)
	opt := nn.NewAdam(student.Params(), cfg.LR)
	tp := nn.NewTape[float32]()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x73747564656e74))
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	pT, amT, acT, dmT, dcT, vT := nn.Zeros[float32](0), nn.Zeros[float32](0), nn.Zeros[float32](0), nn.Zeros[float32](0), nn.Zeros[float32](0), nn.Zeros[float32](0)
	t2 := cfg.Temperature * cfg.Temperature
	var out []Stats
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		st := Stats{Epoch: epoch}
		batches := 0
		for start := 0; start < n; start += cfg.Minibatch {
			mb := perm[start:min(n, start+cfg.Minibatch)]
			B := len(mb)
			pT.Resize(B, K)
			amT.Resize(B)
			acT.Resize(B)
			dmT.Resize(B)
			dcT.Resize(B)
			vT.Resize(B)
			for b, i := range mb {
				copy(pT.Data[b*K:(b+1)*K], lab.probs[i*K:(i+1)*K])
				amT.Data[b], acT.Data[b], dmT.Data[b], dcT.Data[b], vT.Data[b] = lab.affM[i], lab.affC[i], lab.dampM[i], lab.dampC[i], lab.value[i]
			}
			tp.Reset()
			student.Params().ZeroGrad()
			h := student.Forward(tp, s, mb)
			// Cross-entropy with the teacher's softened distribution: the
			// KL up to the teacher's entropy, a constant.
			ls := tp.LogSoftmax(tp.Scale(h.Node, 1/cfg.Temperature), h.Mask)
			kl := tp.Scale(tp.SumAll(tp.Mul(ls, pT)), -t2/float64(B))
			moments := func(a, b *nn.Tensor[float32], m, c *nn.Tensor[float32]) *nn.Tensor[float32] {
				mean := tp.Sigmoid(tp.Sub(tp.Log(a), tp.Log(b))) // a/(a+b)
				conc := tp.Log(tp.Add(a, b))
				return tp.Add(tp.MSE(mean, m), tp.MSE(conc, c))
			}
			beta := tp.Add(moments(h.DampA, h.DampB, dmT, dcT), moments(h.AffA, h.AffB, amT, acT))
			vl := tp.MSE(h.Value, vT)
			loss := tp.Add(tp.Add(kl, beta), tp.Scale(vl, cfg.VFCoef))
			tp.BackwardLeaves(loss)
			if norm := student.Params().ClipGradNorm(40); !math.IsNaN(norm) && !math.IsInf(norm, 0) {
				opt.Step()
			}
			st.KL += kl.Item()
			st.Beta += beta.Item()
			st.Value += vl.Item()
			batches++
		}
		st.KL /= float64(batches)
		st.Beta /= float64(batches)
		st.Value /= float64(batches)
		st.Agreement = Agreement(teacher, student, s)
		out = append(out, st)
	}
	return out, nil
}

// Agreement is the share of decisions in s where the student's most likely
// machine is the teacher's.
func Agreement(teacher, student *rl.Policy, s *rl.Samples) float64 {
	n, K := s.Len(), s.K
	tp, sp := nn.NewTape[float32](), nn.NewTape[float32]()
	agree := 0
	idx := make([]int, 0, chunk)
	for start := 0; start < n; start += chunk {
		idx = idx[:0]
		for i := start; i < min(n, start+chunk); i++ {
			idx = append(idx, i)
		}
		tp.Reset()
		sp.Reset()
		th, sh := teacher.Forward(tp, s, idx), student.Forward(sp, s, idx)
		for b, i := range idx {
			v := int(s.Valid[i])
			if nn.Argmax(th.Node.Data[b*K:b*K+v]) == nn.Argmax(sh.Node.Data[b*K:b*K+v]) {
				agree++
			}
		}
	}
	return float64(agree) / float64(n)
}
