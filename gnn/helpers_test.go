package gnn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tegrl/tegrl/nn"
)

const (
	fdStep = 1e-5
	fdTol  = 1e-6
)

// checkGrad compares the gradients Backward computes for
// loss = Σ f(tp) ⊙ R (R random, fixed) with central finite differences, for
// every element of every tensor in in. f must read in's Data afresh on
// each call (the check perturbs it in place).
func checkGrad(t *testing.T, name string, rng *rand.Rand, in []*nn.Tensor[float64], f func(tp *nn.Tape[float64]) *nn.Tensor[float64]) {
	t.Helper()
	for _, x := range in {
		x.RequiresGrad = true
		if len(x.Grad) != len(x.Data) {
			x.Grad = make([]float64, len(x.Data))
		}
		clear(x.Grad)
	}
	tp := nn.NewTape[float64]()
	out := f(tp)
	r := make([]float64, len(out.Data))
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	rt := nn.NewTensor(r, out.Shape...)
	tp.Backward(tp.SumAll(tp.Mul(out, rt)))
	eval := func() float64 {
		tp.Reset()
		o := f(tp)
		var s float64
		for i, v := range o.Data {
			s += v * r[i]
		}
		return s
	}
	worst, n := 0.0, 0
	for k, x := range in {
		for i := range x.Data {
			orig := x.Data[i]
			x.Data[i] = orig + fdStep
			lp := eval()
			x.Data[i] = orig - fdStep
			lm := eval()
			x.Data[i] = orig
			num := (lp - lm) / (2 * fdStep)
			ana := x.Grad[i]
			rel := math.Abs(num-ana) / max(math.Abs(num), math.Abs(ana), 1e-3)
			worst = max(worst, rel)
			n++
			if !(rel <= fdTol) {
				t.Errorf("%s: input %d element %d: analytic %.12g numeric %.12g (rel %.3g)", name, k, i, ana, num, rel)
				return
			}
		}
	}
	t.Logf("%s: %d partial derivatives, worst relative error %.2g", name, n, worst)
}

// params returns every tensor registered in ps.
func params[T nn.Float](ps *nn.Params[T]) []*nn.Tensor[T] {
	out := make([]*nn.Tensor[T], ps.Len())
	for i := range out {
		out[i] = ps.At(i)
	}
	return out
}

// randRelation returns a random CSR between ns sources and nd destinations
// with fd edge features: about a third of the destinations have no
// in-edges, and every destination with two or more has a repeated source.
func randRelation(rng *rand.Rand, ns, nd, fd int) CSR {
	var src, dst []int32
	var feat []float32
	for i := 0; i < nd; i++ {
		if ns == 0 || rng.IntN(3) == 0 {
			continue
		}
		deg := 1 + rng.IntN(4)
		for k := 0; k < deg; k++ {
			s := rng.IntN(ns)
			if k > 0 && k == deg-1 {
				s = int(src[len(src)-1]) // repeated neighbour
			}
			src, dst = append(src, int32(s)), append(dst, int32(i))
			for range fd {
				feat = append(feat, float32(rng.NormFloat64()))
			}
		}
	}
	var c CSR
	c.SetCOO(nd, src, dst, feat, fd)
	return c
}

// randGraph returns a small random heterogeneous graph with the given
// widths, with isolated nodes and repeated neighbours in every relation.
func randGraph(rng *rand.Rand, nodes [NumNodeTypes]int, d Dims) *Graph {
	g := &Graph{Nodes: nodes, FeatDim: d.Feat, HistoryLen: d.HistoryLen, HistoryChannels: d.HistoryChannels}
	for t := range g.Feat {
		g.Feat[t] = randF32(rng, nodes[t]*d.Feat[t])
	}
	g.History = randF32(rng, nodes[Machine]*d.HistoryLen*d.HistoryChannels)
	g.Global = randF32(rng, d.Global)
	for r := Relation(0); r < NumRelations; r++ {
		g.Adj[r] = randRelation(rng, nodes[r.Src()], nodes[r.Dst()], d.Edge[r])
	}
	return g
}

func randF32(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

// randTensor returns a [rows, cols] float64 tensor of standard normals.
func randTensor(rng *rand.Rand, shape ...int) *nn.Tensor[float64] {
	x := nn.Zeros[float64](shape...)
	for i := range x.Data {
		x.Data[i] = rng.NormFloat64()
	}
	return x
}
