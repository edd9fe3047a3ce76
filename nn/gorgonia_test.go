package nn

// Gorgonia is used only in tests, as an independent oracle for gradients
// and as the baseline of BenchmarkTrainStep.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ppoBatch is a fixed PPO minibatch for the oracle comparison.
type ppoBatch struct {
	x       []float64 // [n, in]
	actions []int
	oldLogp []float64
	adv     []float64
}

const ppoClip = 0.2

// oursPPO computes the clipped surrogate loss
// -mean(min(r·A, clip(r, 1-ε, 1+ε)·A)), r = exp(logp - oldLogp),
// for a tanh MLP policy on our tape and returns the loss and the tape.
func oursPPO(tp *Tape[float64], mlp *MLP[float64], b ppoBatch, n, in int) *Tensor[float64] {
	x := NewTensor(b.x, n, in)
	old := NewTensor(b.oldLogp, n)
	adv := NewTensor(b.adv, n)
	logits := mlp.Forward(tp, x)
	logp := tp.CategoricalLogProb(logits, nil, b.actions)
	ratio := tp.Exp(tp.Sub(logp, old))
	s1 := tp.Mul(ratio, adv)
	s2 := tp.Mul(tp.Clip(ratio, 1-ppoClip, 1+ppoClip), adv)
	return tp.Scale(tp.MeanAll(tp.Minimum(s1, s2)), -1)
}

// gorgoniaPPO builds the same loss in gorgonia from the same weights and
// returns the loss and the gradients of each weight, in ps order.
func gorgoniaPPO(t *testing.T, ps *Params[float64], b ppoBatch, n, in, out int) (float64, [][]float64) {
	g := G.NewGraph()
	var weights G.Nodes
	for i := 0; i < ps.Len(); i++ {
		p := ps.At(i)
		back := slices.Clone(p.Data)
		var node *G.Node
		if len(p.Shape) == 2 {
			node = G.NewMatrix(g, tensor.Float64, G.WithShape(p.Shape...), G.WithName(ps.Name(i)),
				G.WithValue(tensor.New(tensor.WithShape(p.Shape...), tensor.WithBacking(back))))
		} else {
			node = G.NewVector(g, tensor.Float64, G.WithShape(p.Shape...), G.WithName(ps.Name(i)),
				G.WithValue(tensor.New(tensor.WithShape(p.Shape...), tensor.WithBacking(back))))
		}
		weights = append(weights, node)
	}
	constant := func(name string, data []float64, shape ...int) *G.Node {
		v := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(slices.Clone(data)))
		if len(shape) == 1 {
			return G.NewVector(g, tensor.Float64, G.WithShape(shape...), G.WithName(name), G.WithValue(v))
		}
		return G.NewMatrix(g, tensor.Float64, G.WithShape(shape...), G.WithName(name), G.WithValue(v))
	}
	onehot := make([]float64, n*out)
	for i, a := range b.actions {
		onehot[i*out+a] = 1
	}
	fill := func(v float64) []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = v
		}
		return d
	}
	x := constant("x", b.x, n, in)
	oh := constant("onehot", onehot, n, out)
	old := constant("old", b.oldLogp, n)
	adv := constant("adv", b.adv, n)
	lo := constant("lo", fill(1-ppoClip), n)
	hi := constant("hi", fill(1+ppoClip), n)

	h := x
	for l := 0; l < len(weights); l += 2 {
		h = G.Must(G.BroadcastAdd(G.Must(G.Mul(h, weights[l])), weights[l+1], nil, []byte{0}))
		if l+2 < len(weights) {
			h = G.Must(G.Tanh(h))
		}
	}
	lp := G.Must(G.LogSoftMax(h))
	logp := G.Must(G.Sum(G.Must(G.HadamardProd(lp, oh)), 1))
	ratio := G.Must(G.Exp(G.Must(G.Sub(logp, old))))
	s1 := G.Must(G.HadamardProd(ratio, adv))
	clipped := G.Must(G.MinBetween(G.Must(G.MaxBetween(ratio, lo)), hi))
	s2 := G.Must(G.HadamardProd(clipped, adv))
	loss := G.Must(G.Neg(G.Must(G.Mean(G.Must(G.MinBetween(s1, s2))))))
	if _, err := G.Grad(loss, weights...); err != nil {
		t.Fatalf("gorgonia Grad: %v", err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatalf("gorgonia RunAll: %v", err)
	}
	var grads [][]float64
	for _, w := range weights {
		gv, err := w.Grad()
		if err != nil {
			t.Fatalf("gorgonia grad of %s: %v", w.Name(), err)
		}
		grads = append(grads, slices.Clone(gv.Data().([]float64)))
	}
	return loss.Value().Data().(float64), grads
}

// TestGorgoniaOracle checks our loss and gradients for a PPO clipped
// surrogate over an 8-16-4 tanh MLP with a log-softmax policy head against
// gorgonia's in float64.
func TestGorgoniaOracle(t *testing.T) {
	const n, in, hid, out = 12, 8, 16, 4
	rng := rand.New(rand.NewPCG(7, 8))
	ps := NewParams[float64]()
	mlp := NewMLP(ps, "pi", []int{in, hid, out}, ActTanh, rng)
	for _, l := range mlp.Layers { // non-zero biases so their gradients are exercised
		copy(l.B.Data, randn(rng, len(l.B.Data)))
	}
	b := ppoBatch{x: randn(rng, n*in), actions: make([]int, n), adv: randn(rng, n)}
	for i := range b.actions {
		b.actions[i] = rng.IntN(out)
	}
	// Old log-probabilities scatter the ratio around 1 so that some samples
	// are clipped and some are not, away from the clip boundaries.
	tp := NewTape[float64]()
	cur := tp.CategoricalLogProb(mlp.Forward(tp, NewTensor(b.x, n, in)), nil, b.actions)
	clipped := 0
	for _, c := range cur.Data {
		for {
			r := math.Exp(rng.Float64()*0.8 - 0.4)
			if math.Abs(r-0.8) > 1e-3 && math.Abs(r-1.2) > 1e-3 {
				b.oldLogp = append(b.oldLogp, c-math.Log(r))
				if r < 0.8 || r > 1.2 {
					clipped++
				}
				break
			}
		}
	}
	if clipped == 0 || clipped == n {
		t.Fatalf("test data: %d of %d ratios clipped; want a mix", clipped, n)
	}
	tp.Reset()
	ps.ZeroGrad()
	loss := oursPPO(tp, mlp, b, n, in)
	tp.Backward(loss)

	gLoss, gGrads := gorgoniaPPO(t, ps, b, n, in, out)
	if rel := math.Abs(loss.Item()-gLoss) / max(math.Abs(gLoss), 1e-12); rel > 1e-6 {
		t.Errorf("loss: ours %.15g gorgonia %.15g (rel %.3g)", loss.Item(), gLoss, rel)
	}
	for i := 0; i < ps.Len(); i++ {
		ours := ps.At(i).Grad
		var maxAbs, maxDiff float64
		for j := range ours {
			maxAbs = max(maxAbs, math.Abs(gGrads[i][j]))
			maxDiff = max(maxDiff, math.Abs(ours[j]-gGrads[i][j]))
		}
		if maxAbs == 0 {
			t.Errorf("%s: gorgonia gradient is all zero", ps.Name(i))
		}
		if rel := maxDiff / maxAbs; rel > 1e-6 {
			t.Errorf("%s: gradients differ: max diff %.3g, max |g| %.3g", ps.Name(i), maxDiff, maxAbs)
		}
	}
}

// gorgoniaTrainer is the gorgonia side of BenchmarkTrainStep: an MLP with
// ReLU, MSE loss and Adam, compiled once and run per step.
type gorgoniaTrainer struct {
	m      G.VM
	solver G.Solver
	params G.Nodes
}

func newGorgoniaTrainer(b *testing.B, sizes []int, batch int, rng *rand.Rand) *gorgoniaTrainer {
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(batch, sizes[0]), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithShape(batch, sizes[0]), tensor.WithBacking(randf32(rng, batch*sizes[0])))))
	y := G.NewMatrix(g, tensor.Float32, G.WithShape(batch, sizes[len(sizes)-1]), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithShape(batch, sizes[len(sizes)-1]), tensor.WithBacking(randf32(rng, batch*sizes[len(sizes)-1])))))
	var params G.Nodes
	h := x
	for i := 0; i+1 < len(sizes); i++ {
		w := G.NewMatrix(g, tensor.Float32, G.WithShape(sizes[i], sizes[i+1]), G.WithName(fmt.Sprint("w", i)), G.WithInit(G.GlorotU(1)))
		bias := G.NewVector(g, tensor.Float32, G.WithShape(sizes[i+1]), G.WithName(fmt.Sprint("b", i)), G.WithInit(G.Zeroes()))
		params = append(params, w, bias)
		h = G.Must(G.BroadcastAdd(G.Must(G.Mul(h, w)), bias, nil, []byte{0}))
		if i+2 < len(sizes) {
			h = G.Must(G.Rectify(h))
		}
	}
	loss := G.Must(G.Mean(G.Must(G.Square(G.Must(G.Sub(h, y))))))
	if _, err := G.Grad(loss, params...); err != nil {
		b.Fatal(err)
	}
	return &gorgoniaTrainer{
		m:      G.NewTapeMachine(g, G.BindDualValues(params...)),
		solver: G.NewAdamSolver(G.WithLearnRate(1e-3)),
		params: params,
	}
}

func (gt *gorgoniaTrainer) step(b *testing.B) {
	if err := gt.m.RunAll(); err != nil {
		b.Fatal(err)
	}
	if err := gt.solver.Step(G.NodesToValueGrads(gt.params)); err != nil {
		b.Fatal(err)
	}
	gt.m.Reset()
}

func randf32(rng *rand.Rand, n int) []float32 {
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(rng.NormFloat64())
	}
	return d
}
