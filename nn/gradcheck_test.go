package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// gradCase describes one gradient check: f builds an output from the leaf
// tensors in on a tape; the check compares Backward's gradients of
// sum(out ⊙ R), R random, with central finite differences.
type gradCase struct {
	name string
	in   []*Tensor[float64]
	f    func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64]
}

const (
	fdStep = 1e-5
	fdTol  = 1e-6
)

func checkGrad(t *testing.T, rng *rand.Rand, c gradCase) {
	t.Helper()
	tp := NewTape[float64]()
	out := c.f(tp, c.in)
	r := NewTensor(randn(rng, len(out.Data)), out.Shape...)
	for _, x := range c.in {
		x.RequiresGrad = true
		x.Grad = make([]float64, len(x.Data))
	}
	tp.Reset()
	out = c.f(tp, c.in)
	loss := tp.SumAll(tp.Mul(out, r))
	tp.Backward(loss)
	eval := func() float64 {
		tp.Reset()
		o := c.f(tp, c.in)
		var s float64
		for i, v := range o.Data {
			s += v * r.Data[i]
		}
		return s
	}
	// Check the recorded loss equals the direct evaluation.
	if got, want := loss.Data[0], eval(); math.Abs(got-want) > 1e-12*max(1, math.Abs(want)) {
		t.Fatalf("%s: loss %v, direct %v", c.name, got, want)
	}
	worst := 0.0
	for k, x := range c.in {
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
			if !(rel <= fdTol) {
				t.Errorf("%s: input %d element %d: analytic %.12g numeric %.12g (rel %.3g)", c.name, k, i, ana, num, rel)
				return
			}
		}
	}
	t.Logf("%s: worst relative error %.2g", c.name, worst)
	checkLeaves(t, c, r)
}

// checkLeaves checks that BackwardLeaves gives the leaves the bits of
// Backward's gradients, twice on one tape (the second pass takes its
// intermediates' buffers from the free list the first left behind), and
// that no intermediate keeps a gradient.
func checkLeaves(t *testing.T, c gradCase, r *Tensor[float64]) {
	t.Helper()
	want := make([][]float64, len(c.in))
	for k, x := range c.in {
		want[k] = append([]float64(nil), x.Grad...)
	}
	tp := NewTape[float64]()
	for pass := range 2 {
		for _, x := range c.in {
			clear(x.Grad)
		}
		tp.Reset()
		tp.BackwardLeaves(tp.SumAll(tp.Mul(c.f(tp, c.in), r)))
		for k, x := range c.in {
			for i, g := range x.Grad {
				if math.Float64bits(g) != math.Float64bits(want[k][i]) {
					t.Fatalf("%s: BackwardLeaves pass %d: input %d element %d: %v, Backward gave %v", c.name, pass, k, i, g, want[k][i])
				}
			}
		}
		for i := range tp.nodes {
			if g := tp.nodes[i].out.Grad; len(g) != 0 {
				t.Fatalf("%s: BackwardLeaves left node %d's result a gradient of %d elements", c.name, i, len(g))
			}
		}
	}
}

func randn(rng *rand.Rand, n int) []float64 {
	d := make([]float64, n)
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return d
}

// randAway returns normal samples at least gap away from each point in avoid,
// so that kinks (relu at 0, clip bounds) are not straddled by the finite
// difference.
func randAway(rng *rand.Rand, n int, gap float64, avoid ...float64) []float64 {
	d := make([]float64, n)
	for i := range d {
	again:
		v := rng.NormFloat64()
		for _, a := range avoid {
			if math.Abs(v-a) < gap {
				goto again
			}
		}
		d[i] = v
	}
	return d
}

func randu(rng *rand.Rand, n int, lo, hi float64) []float64 {
	d := make([]float64, n)
	for i := range d {
		d[i] = lo + (hi-lo)*rng.Float64()
	}
	return d
}

func tn(d []float64, shape ...int) *Tensor[float64] { return NewTensor(d, shape...) }

func randMask(rng *rand.Rand, rows, cols int) []bool {
	m := make([]bool, rows*cols)
	for r := 0; r < rows; r++ {
		for j := 0; j < cols; j++ {
			m[r*cols+j] = rng.IntN(3) > 0
		}
		m[r*cols+rng.IntN(cols)] = true // at least one legal entry per row
	}
	return m
}

func dims(rng *rand.Rand) (int, int, int) { return 1 + rng.IntN(5), 1 + rng.IntN(5), 1 + rng.IntN(5) }

func TestGradients(t *testing.T) { testGradients(t) }

// TestGradientsTransposedGemm repeats the checks with every product
// rewritten to the A·Bᵀ form (see gemmScratch), which normally only
// happens for large shapes.
func TestGradientsTransposedGemm(t *testing.T) {
	defer func(old int) { transposeMin = old }(transposeMin)
	transposeMin = 0
	testGradients(t)
}

func testGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var cases []gradCase
	add := func(name string, f func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64], in ...*Tensor[float64]) {
		cases = append(cases, gradCase{name: name, in: in, f: f})
	}
	for rep := 0; rep < 3; rep++ {
		m, k, n := dims(rng)
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				as, bs := []int{m, k}, []int{k, n}
				if ta {
					as = []int{k, m}
				}
				if tb {
					bs = []int{n, k}
				}
				add(fmt.Sprintf("MatMul/%d/tA=%v/tB=%v", rep, ta, tb), func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
					return tp.MatMul(in[0], in[1], ta, tb)
				}, tn(randn(rng, m*k), as...), tn(randn(rng, k*n), bs...))
			}
		}
		add("Add", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Add(in[0], in[1]) },
			tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n))
		add("Sub", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Sub(in[0], in[1]) },
			tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n))
		add("Mul", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Mul(in[0], in[1]) },
			tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n))
		a := randn(rng, m*n)
		b := make([]float64, len(a))
		for i := range b {
			b[i] = a[i] + randAway(rng, 1, 1e-2, 0)[0]
		}
		add("Minimum", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Minimum(in[0], in[1]) },
			tn(a, m, n), tn(b, m, n))
		add("AddBias", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.AddBias(in[0], in[1]) },
			tn(randn(rng, m*k*n), m, k, n), tn(randn(rng, n), n))
		add("Affine", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Affine(in[0], in[1], in[2]) },
			tn(randn(rng, m*k), m, k), tn(randn(rng, k*n), k, n), tn(randn(rng, n), n))
		add("AddN/1", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.AddN(in[0]) },
			tn(randn(rng, m*n), m, n))
		add("AddN/2", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.AddN(in[0], in[1]) },
			tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n))
		add("AddN/4", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.AddN(in[0], in[1], in[2], in[3])
		}, tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n))
		// Five terms take two records; in[1] appears twice.
		add("AddN/5", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.AddN(in[0], in[1], in[2], in[1], in[3])
		}, tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n))
		// A plain term first, then two products of different depths (the
		// second sharing the first's W), and in[0] again.
		add("SumTerms/bias", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SumTerms(ActIdentity, in[5], Term[float64]{X: in[0]}, Term[float64]{X: in[1], W: in[2]},
				Term[float64]{X: in[3], W: in[4]}, Term[float64]{X: in[0]}, Term[float64]{X: in[3], W: in[4]})
		}, tn(randn(rng, m*n), m, n), tn(randn(rng, m*k), m, k), tn(randn(rng, k*n), k, n),
			tn(randn(rng, m*(k+2)), m, k+2), tn(randn(rng, (k+2)*n), k+2, n), tn(randn(rng, n), n))
		add("SumTerms/nobias", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SumTerms(ActIdentity, nil, Term[float64]{X: in[0]}, Term[float64]{X: in[1], W: in[2]})
		}, tn(randn(rng, m*n), m, n), tn(randn(rng, m*k), m, k), tn(randn(rng, k*n), k, n))
		add("SumTerms/plain", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SumTerms(ActIdentity, in[2], Term[float64]{X: in[0]}, Term[float64]{X: in[1]})
		}, tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n), tn(randn(rng, n), n))
		add("SumTerms/plain-nobias", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SumTerms(ActIdentity, nil, Term[float64]{X: in[0]}, Term[float64]{X: in[1]}, Term[float64]{X: in[0]})
		}, tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n))
		// Fused ReLU, the last term a product, a plain term, or the only
		// one; and an activation that is not fused.
		add("SumTerms/relu-product", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SumTerms(ActReLU, in[3], Term[float64]{X: in[0]}, Term[float64]{X: in[1], W: in[2]}, Term[float64]{X: in[1], W: in[2]})
		}, tn(randn(rng, m*n), m, n), tn(randn(rng, m*k), m, k), tn(randn(rng, k*n), k, n), tn(randn(rng, n), n))
		add("SumTerms/relu-plain", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SumTerms(ActReLU, nil, Term[float64]{X: in[1], W: in[2]}, Term[float64]{X: in[0]})
		}, tn(randn(rng, m*n), m, n), tn(randn(rng, m*k), m, k), tn(randn(rng, k*n), k, n))
		add("SumTerms/relu-one", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SumTerms(ActReLU, nil, Term[float64]{X: in[0]})
		}, tn(randAway(rng, m*n, 1e-3, 0), m, n))
		add("SumTerms/tanh", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SumTerms(ActTanh, in[2], Term[float64]{X: in[0], W: in[1]})
		}, tn(randn(rng, m*k), m, k), tn(randn(rng, k*n), k, n), tn(randn(rng, n), n))
		// Sparse terms: with a bias and a product, twice with the same
		// rows (and once without weights); the last term under a fused
		// ReLU; the only term.
		sp, si := randCSR(rng, m, 5)
		sw := randn(rng, len(si))
		add("SumTerms/sparse", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SumTerms(ActIdentity, in[3], Term[float64]{X: in[0], Ptr: sp, Idx: si, Weights: sw},
				Term[float64]{X: in[1], W: in[2]}, Term[float64]{X: in[0], Ptr: sp, Idx: si})
		}, tn(randn(rng, 5*n), 5, n), tn(randn(rng, m*k), m, k), tn(randn(rng, k*n), k, n), tn(randn(rng, n), n))
		add("SumTerms/sparse-relu", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SumTerms(ActReLU, nil, Term[float64]{X: in[1], W: in[2]}, Term[float64]{X: in[0], Ptr: sp, Idx: si, Weights: sw})
		}, tn(randn(rng, 5*n), 5, n), tn(randn(rng, m*k), m, k), tn(randn(rng, k*n), k, n))
		add("SumTerms/sparse-one", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SumTerms(ActIdentity, nil, Term[float64]{X: in[0], Ptr: sp, Idx: si, Weights: sw})
		}, tn(randn(rng, 5*n), 5, n))
		// Products and plain rows stacked; in[2] both a weight and
		// stacked rows, in[0] twice.
		add("StackTerms", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.StackTerms(Term[float64]{X: in[0], W: in[2]}, Term[float64]{X: in[1]}, Term[float64]{X: in[2]},
				Term[float64]{X: in[0], W: in[2]}, Term[float64]{X: in[3], W: in[4]})
		}, tn(randn(rng, m*n), m, n), tn(randn(rng, (m+1)*n), m+1, n), tn(randn(rng, n*n), n, n),
			tn(randn(rng, k*(k+1)), k, k+1), tn(randn(rng, (k+1)*n), k+1, n))
		add("Scale", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Scale(in[0], -2.5) },
			tn(randn(rng, m*n), m, n))
		add("Clip", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Clip(in[0], -0.5, 0.7) },
			tn(randAway(rng, m*n, 1e-3, -0.5, 0.7), m, n))
		add("ReLU", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.ReLU(in[0]) },
			tn(randAway(rng, m*n, 1e-3, 0), m, n))
		for name, f := range map[string]func(*Tape[float64], *Tensor[float64]) *Tensor[float64]{
			"Tanh": (*Tape[float64]).Tanh, "Sigmoid": (*Tape[float64]).Sigmoid, "SiLU": (*Tape[float64]).SiLU,
			"GELU": (*Tape[float64]).GELU, "Exp": (*Tape[float64]).Exp, "Square": (*Tape[float64]).Square,
			"Softplus": (*Tape[float64]).Softplus,
		} {
			add(name, func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return f(tp, in[0]) },
				tn(randn(rng, m*n), m, n))
		}
		add("Log", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Log(in[0]) },
			tn(randu(rng, m*n, 0.2, 3), m, n))
		add("SumAll", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.SumAll(in[0]) },
			tn(randn(rng, m*n), m, n))
		add("MeanAll", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.MeanAll(in[0]) },
			tn(randn(rng, m*n), m, n))
		for axis := 0; axis < 2; axis++ {
			add(fmt.Sprintf("Sum/axis=%d", axis), func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Sum(in[0], axis) },
				tn(randn(rng, m*n), m, n))
			add(fmt.Sprintf("Mean/axis=%d", axis), func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Mean(in[0], axis) },
				tn(randn(rng, m*n), m, n))
		}
		add("Reshape", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Reshape(in[0], n, m) },
			tn(randn(rng, m*n), m, n))
		add("Concat/axis=0", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Concat(in[0], in[1], 0) },
			tn(randn(rng, m*n), m, n), tn(randn(rng, k*n), k, n))
		add("Concat/axis=1", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Concat(in[0], in[1], 1) },
			tn(randn(rng, m*n), m, n), tn(randn(rng, m*k), m, k))
		add("Slice/axis=0", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Slice(in[0], 0, 1, m+1) },
			tn(randn(rng, (m+2)*n), m+2, n))
		add("Slice/axis=1", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Slice(in[0], 1, 1, n+1) },
			tn(randn(rng, m*(n+2)), m, n+2))
		idx := make([]int, 2*m+1)
		for i := range idx {
			idx[i] = rng.IntN(m) // repeats guaranteed
		}
		add("GatherRows", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.GatherRows(in[0], idx) },
			tn(randn(rng, m*k*n), m, k, n))
		// Segments: nseg > rows guarantees empty segments, rows repeat segments.
		rows := 2*m + 2
		nseg := rows + 2
		seg := make([]int, rows)
		for i := range seg {
			seg[i] = rng.IntN(nseg / 3)
		}
		seg[0] = nseg - 1
		add("SegmentSum", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SegmentSum(in[0], seg, nseg)
		},
			tn(randn(rng, rows*n), rows, n))
		add("SegmentMean", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SegmentMean(in[0], seg, nseg)
		},
			tn(randn(rng, rows*k*n), rows, k, n))
		add("SegmentMax", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.SegmentMax(in[0], seg, nseg)
		},
			tn(randn(rng, rows*n), rows, n))
		c := n + 1
		mask := randMask(rng, m, c)
		for _, mk := range [][]bool{nil, mask} {
			label := fmt.Sprintf("masked=%v", mk != nil)
			add("Softmax/"+label, func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.Softmax(in[0], mk) },
				tn(randn(rng, m*c), m, c))
			add("LogSoftmax/"+label, func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.LogSoftmax(in[0], mk) },
				tn(randn(rng, m*c), m, c))
			targets := make([]int, m)
			for r := range targets {
				for {
					targets[r] = rng.IntN(c)
					if mk == nil || mk[r*c+targets[r]] {
						break
					}
				}
			}
			add("CrossEntropy/"+label, func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
				return tp.CrossEntropy(in[0], mk, targets)
			}, tn(randn(rng, m*c), m, c))
			add("CategoricalLogProb/"+label, func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
				return tp.CategoricalLogProb(in[0], mk, targets)
			}, tn(randn(rng, m*c), m, c))
			add("CategoricalEntropy/"+label, func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
				return tp.CategoricalEntropy(in[0], mk)
			}, tn(randn(rng, m*c), m, c))
		}
		add("MSE", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.MSE(in[0], in[1]) },
			tn(randn(rng, m*n), m, n), tn(randn(rng, m*n), m, n))
		add("BetaLogProb", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.BetaLogProb(in[0], in[1], in[2])
		},
			tn(randu(rng, m*n, 0.3, 6), m, n), tn(randu(rng, m*n, 0.3, 6), m, n), tn(randu(rng, m*n, 0.05, 0.95), m, n))
		add("BetaEntropy", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.BetaEntropy(in[0], in[1]) },
			tn(randu(rng, m*n, 0.3, 15), m, n), tn(randu(rng, m*n, 0.3, 15), m, n))
		add("GaussianLogProb", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.GaussianLogProb(in[0], in[1], in[2])
		},
			tn(randn(rng, m*n), m, n), tn(randu(rng, m*n, -1, 1), m, n), tn(randn(rng, m*n), m, n))
		add("GaussianLogProb/sharedStd", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.GaussianLogProb(in[0], in[1], in[2])
		}, tn(randn(rng, m*n), m, n), tn(randu(rng, n, -1, 1), n), tn(randn(rng, m*n), m, n))
		add("GaussianEntropy", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] { return tp.GaussianEntropy(in[0]) },
			tn(randn(rng, n), n))
		for _, same := range []bool{false, true} {
			kk := 1 + rng.IntN(4)
			tlen := kk + rng.IntN(4)
			cin, cout := 1+rng.IntN(3), 1+rng.IntN(3)
			add(fmt.Sprintf("Conv1D/k=%d/same=%v", kk, same), func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
				return tp.Conv1D(in[0], in[1], kk, same)
			}, tn(randn(rng, m*tlen*cin), m, tlen, cin), tn(randn(rng, kk*cin*cout), kk*cin, cout))
			for _, act := range []Activation{ActReLU, ActTanh} {
				add(fmt.Sprintf("Conv1DAct/k=%d/same=%v/act=%d", kk, same, act), func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
					return tp.Conv1DAct(in[0], in[1], in[2], kk, same, act)
				}, tn(randn(rng, m*tlen*cin), m, tlen, cin), tn(randn(rng, kk*cin*cout), kk*cin, cout), tn(randn(rng, cout), cout))
			}
		}
		add("LayerNorm", func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
			return tp.LayerNorm(in[0], in[1], in[2], 1e-5)
		},
			tn(randn(rng, m*k*(n+1)), m, k, n+1), tn(randn(rng, n+1), n+1), tn(randn(rng, n+1), n+1))
	}
	for _, c := range cases {
		checkGrad(t, rng, c)
	}
}

// TestGradientsComposite checks a chain of operations where gradients of
// intermediate tape tensors accumulate from several consumers.
func TestGradientsComposite(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w1, b1 := tn(randn(rng, 6*5), 6, 5), tn(randn(rng, 5), 5)
	x := tn(randn(rng, 4*6), 4, 6)
	checkGrad(t, rng, gradCase{name: "composite", in: []*Tensor[float64]{w1, b1, x}, f: func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
		h := tp.Tanh(tp.AddBias(tp.MatMul(in[2], in[0], false, false), in[1]))
		h2 := tp.Mul(h, h)
		return tp.Add(tp.LogSoftmax(h2, nil), tp.Softmax(h, nil))
	}})
}
