package gnn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tegrl/tegrl/nn"
)

// handGraph is the 5-node graph of the hand-computed tests. Node features
// (2 per node):
//
//	x0 = (1, 0)   x1 = (0, 1)   x2 = (2, 1)   x3 = (1, −1)   x4 = (0, 0)
//
// Edges j → i with one feature e_ij:
//
//	into 0: 1 (e = 0.5), 2 (e = −1)
//	into 1: 0 (e = 0), 2 (e = 1), 2 again (e = −0.5)   (a repeated neighbour)
//	into 2: 3 (e = 0.25)
//	into 3: none                                       (an isolated node)
//	into 4: 0 (e = 2)
func handGraph() (*nn.Tensor[float64], *Edges[float64]) {
	x := nn.NewTensor([]float64{1, 0, 0, 1, 2, 1, 1, -1, 0, 0}, 5, 2)
	var c CSR
	c.SetCOO(5,
		[]int32{1, 2, 0, 2, 2, 3, 0},
		[]int32{0, 0, 1, 1, 1, 2, 4},
		[]float32{0.5, -1, 0, 1, -0.5, 0.25, 2}, 1)
	e := new(Edges[float64])
	e.Load(&c, 5)
	return x, e
}

func assertValues(t *testing.T, name string, got []float64, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Errorf("%s: node %d: %v, computed by hand %v", name, i, got[i], want[i])
		}
	}
}

// TestSAGEByHand: W_root = (1, 2)ᵀ, W_neigh = (3, −1)ᵀ, b = 0.5, so
// h_i' = x_i·(1, 2) + mean_j x_j·(3, −1) + 0.5:
//
//	h0' = (1 + 0)   + mean(x1, x2) = (1, 1)       → 3 − 1 = 2    + 0.5 = 3.5
//	h1' = (0 + 2)   + mean(x0, x2, x2) = (5/3, 2/3) → 5 − 2/3    + 0.5 = 41/6
//	h2' = (2 + 2)   + mean(x3) = (1, −1)          → 3 + 1 = 4    + 0.5 = 8.5
//	h3' = (1 − 2)   + no neighbours               → 0            + 0.5 = −0.5
//	h4' = (0 + 0)   + mean(x0) = (1, 0)           → 3            + 0.5 = 3.5
func TestSAGEByHand(t *testing.T) {
	x, e := handGraph()
	ps := nn.NewParams[float64]()
	l := NewSAGE(ps, "sage", 2, 2, 1, rand.New(rand.NewPCG(1, 1)))
	copy(l.Root.Data, []float64{1, 2})
	copy(l.Neigh.Data, []float64{3, -1})
	l.Bias.Data[0] = 0.5
	tp := nn.NewTape[float64]()
	assertValues(t, "SAGE", l.Forward(tp, x, x, e).Data, []float64{3.5, 41.0 / 6, 8.5, -0.5, 3.5})
}

// TestEdgeConvByHand: one linear layer with weights on [x_i, x_j − x_i, e]
// of (1, 0 | 0, 1 | 2) and bias 0.25, so the message of edge j → i is
//
//	m_ij = x_i[0] + (x_j[1] − x_i[1]) + 2·e_ij + 0.25
//
//	into 0 (x0 = (1, 0)): from 1: 1 + (1 − 0) + 1 + 0.25 = 3.25
//	                      from 2: 1 + (1 − 0) − 2 + 0.25 = 0.25
//	into 1 (x1 = (0, 1)): from 0: 0 + (0 − 1) + 0 + 0.25 = −0.75
//	                      from 2: 0 + (1 − 1) + 2 + 0.25 = 2.25
//	                      from 2: 0 + (1 − 1) − 1 + 0.25 = −0.75
//	into 2 (x2 = (2, 1)): from 3: 2 + (−1 − 1) + 0.5 + 0.25 = 0.75
//	into 3: no messages: 0
//	into 4 (x4 = (0, 0)): from 0: 0 + (0 − 0) + 4 + 0.25 = 4.25
//
// max: 3.25, 2.25, 0.75, 0, 4.25
// mean: (3.25 + 0.25)/2 = 1.75, (−0.75 + 2.25 − 0.75)/3 = 0.25, 0.75, 0, 4.25
func TestEdgeConvByHand(t *testing.T) {
	x, e := handGraph()
	for _, c := range []struct {
		agg  Aggregation
		want []float64
	}{
		{AggMax, []float64{3.25, 2.25, 0.75, 0, 4.25}},
		{AggMean, []float64{1.75, 0.25, 0.75, 0, 4.25}},
	} {
		ps := nn.NewParams[float64]()
		l := NewEdgeConv(ps, "edge", 2, 1, []int{1}, nn.ActReLU, c.agg, rand.New(rand.NewPCG(1, 1)))
		copy(l.MLP.Layers[0].W.Data, []float64{1, 0, 0, 1, 2})
		l.MLP.Layers[0].B.Data[0] = 0.25
		tp := nn.NewTape[float64]()
		assertValues(t, "EdgeConv/"+c.agg.String(), l.Forward(tp, x, x, e).Data, c.want)
	}
}

// TestTemporalByHand: a kernel that copies channel 0 of the current step
// (centre tap) and no activation make the encoder the decay-weighted mean
// of channel 0: with history x_t = t (t = 0…11, oldest first), the output is
// Σ_t w_t·t with w_t = exp(−0.1·(11 − t))/Σ_s exp(−0.1·(11 − s)).
func TestTemporalByHand(t *testing.T) {
	w := DecayWeights(12, 0.1)
	var sum, want float64
	for i, v := range w {
		sum += v
		want += v * float64(i)
	}
	if math.Abs(sum-1) > 1e-15 || math.Abs(w[11]/w[0]-math.Exp(1.1)) > 1e-12 {
		t.Fatalf("DecayWeights: sum %v, newest/oldest %v, want 1 and e^1.1", sum, w[11]/w[0])
	}
	ps := nn.NewParams[float64]()
	l := NewTemporal(ps, "t", 2, 1, 0.1, nn.ActIdentity, rand.New(rand.NewPCG(1, 1)))
	clear(l.Kernel.Data)
	l.Kernel.Data[2] = 1 // row kk·channels + c = 1·2 + 0: centre tap, channel 0
	h := nn.Zeros[float64](1, 12, 2)
	for i := 0; i < 12; i++ {
		h.Data[2*i], h.Data[2*i+1] = float64(i), 100
	}
	tp := nn.NewTape[float64]()
	assertValues(t, "Temporal", l.Forward(tp, h).Data, []float64{want})
}
