package nn

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

func near(t *testing.T, what string, got []float64, want ...float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-12*max(1, math.Abs(want[i])) || math.IsNaN(got[i]) {
			t.Errorf("%s: got %v, want %v", what, got, want)
			return
		}
	}
}

func TestForwardValues(t *testing.T) {
	testForwardValues(t)
	defer func(old int) { transposeMin = old }(transposeMin)
	transposeMin = 0
	testForwardValues(t)
}

func testForwardValues(t *testing.T) {
	tp := NewTape[float64]()
	a := tn([]float64{1, 2, 3, 4}, 2, 2)
	b := tn([]float64{5, 6, 7, 8}, 2, 2)
	near(t, "MatMul", tp.MatMul(a, b, false, false).Data, 19, 22, 43, 50)
	near(t, "MatMul tA", tp.MatMul(a, b, true, false).Data, 26, 30, 38, 44)
	near(t, "MatMul tB", tp.MatMul(a, b, false, true).Data, 17, 23, 39, 53)
	near(t, "MatMul tA tB", tp.MatMul(a, b, true, true).Data, 23, 31, 34, 46)
	near(t, "AddBias", tp.AddBias(a, tn([]float64{10, 20}, 2)).Data, 11, 22, 13, 24)
	near(t, "Minimum", tp.Minimum(a, tn([]float64{0, 5, 3, -1}, 2, 2)).Data, 0, 2, 3, -1)
	near(t, "Clip", tp.Clip(a, 1.5, 3.5).Data, 1.5, 2, 3, 3.5)
	x := tn([]float64{-1, 0, 1, 2}, 4)
	near(t, "ReLU", tp.ReLU(x).Data, 0, 0, 1, 2)
	near(t, "Sigmoid", tp.Sigmoid(x).Data, 1/(1+math.E), 0.5, 1/(1+1/math.E), 1/(1+math.Exp(-2)))
	near(t, "Tanh", tp.Tanh(x).Data, math.Tanh(-1), 0, math.Tanh(1), math.Tanh(2))
	near(t, "SiLU", tp.SiLU(x).Data, -1/(1+math.E), 0, 1/(1+1/math.E), 2/(1+math.Exp(-2)))
	near(t, "GELU", tp.GELU(tn([]float64{0, 1}, 2)).Data, 0, 0.5*(1+math.Tanh(math.Sqrt(2/math.Pi)*1.044715)))
	m := tn([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	near(t, "Sum0", tp.Sum(m, 0).Data, 5, 7, 9)
	near(t, "Sum1", tp.Sum(m, 1).Data, 6, 15)
	near(t, "Mean0", tp.Mean(m, 0).Data, 2.5, 3.5, 4.5)
	near(t, "Mean1", tp.Mean(m, 1).Data, 2, 5)
	near(t, "SumAll", tp.SumAll(m).Data, 21)
	near(t, "MeanAll", tp.MeanAll(m).Data, 3.5)
	near(t, "Concat0", tp.Concat(a, b, 0).Data, 1, 2, 3, 4, 5, 6, 7, 8)
	near(t, "Concat1", tp.Concat(a, b, 1).Data, 1, 2, 5, 6, 3, 4, 7, 8)
	near(t, "Slice0", tp.Slice(m, 0, 1, 2).Data, 4, 5, 6)
	near(t, "Slice1", tp.Slice(m, 1, 1, 3).Data, 2, 3, 5, 6)
	near(t, "GatherRows", tp.GatherRows(m, []int{1, 1, 0}).Data, 4, 5, 6, 4, 5, 6, 1, 2, 3)
	rows := tn([]float64{1, 10, 2, 20, 3, 30, 4, -40}, 4, 2)
	seg := []int{0, 2, 0, 2}
	near(t, "SegmentSum", tp.SegmentSum(rows, seg, 4).Data, 4, 40, 0, 0, 6, -20, 0, 0)
	near(t, "SegmentMean", tp.SegmentMean(rows, seg, 4).Data, 2, 20, 0, 0, 3, -10, 0, 0)
	near(t, "SegmentMax", tp.SegmentMax(rows, seg, 4).Data, 3, 30, 0, 0, 4, 20, 0, 0)
	neg := tn([]float64{-3, -1, -2}, 3, 1)
	near(t, "SegmentMax negative", tp.SegmentMax(neg, []int{1, 1, 1}, 2).Data, 0, -1)

	l3 := math.Log(3)
	sm := tn([]float64{0, l3, 1, 2, 3, 7, 8, 9}, 4, 2)
	_ = sm
	p := tn([]float64{0, l3}, 1, 2)
	near(t, "Softmax", tp.Softmax(p, nil).Data, 0.25, 0.75)
	near(t, "LogSoftmax", tp.LogSoftmax(p, nil).Data, math.Log(0.25), math.Log(0.75))
	q := tn([]float64{1, 2, 3, 5, 5, 5}, 2, 3)
	mask := []bool{true, false, true, false, false, false}
	e2 := math.Exp(2)
	near(t, "Softmax masked", tp.Softmax(q, mask).Data, 1/(1+e2), 0, e2/(1+e2), 0, 0, 0)
	near(t, "LogSoftmax masked", tp.LogSoftmax(q, mask).Data, -math.Log1p(e2), 0, 2-math.Log1p(e2), 0, 0, 0)
	near(t, "CrossEntropy", tp.CrossEntropy(p, nil, []int{1}).Data, -math.Log(0.75))
	near(t, "CategoricalLogProb", tp.CategoricalLogProb(q, []bool{true, false, true, true, true, true}, []int{2, 0}).Data,
		2-math.Log1p(e2), math.Log(1.0/3))
	u := tn([]float64{0.3, 0.3, 0.3, 0.3, 7, 1, 7, -2}, 2, 4)
	near(t, "CategoricalEntropy", tp.CategoricalEntropy(u, []bool{true, true, true, true, true, false, true, false}).Data,
		math.Log(4), math.Log(2))

	conv := tn([]float64{1, 2, 3}, 1, 3, 1)
	w := tn([]float64{1, 10}, 2, 1)
	near(t, "Conv1D valid", tp.Conv1D(conv, w, 2, false).Data, 21, 32)
	near(t, "Conv1D same", tp.Conv1D(conv, w, 2, true).Data, 21, 32, 3)
	w3 := tn([]float64{1, 10, 100}, 3, 1)
	near(t, "Conv1D same k=3", tp.Conv1D(conv, w3, 3, true).Data, 210, 321, 32)
	s := math.Sqrt(1.5)
	near(t, "LayerNorm", tp.LayerNorm(tn([]float64{1, 2, 3}, 1, 3), tn([]float64{1, 2, 1}, 3), tn([]float64{0, 0, 1}, 3), 0).Data, -s, 0, s+1)
	near(t, "MSE", tp.MSE(tn([]float64{1, 2}, 2), tn([]float64{3, 2}, 2)).Data, 2)

	one := tn([]float64{1, 2}, 2)
	two := tn([]float64{1, 2}, 2)
	near(t, "BetaLogProb", tp.BetaLogProb(one, two, tn([]float64{0.3, 0.5}, 2)).Data, 0, math.Log(1.5))
	near(t, "BetaEntropy", tp.BetaEntropy(one, two).Data, 0, 5.0/3-math.Log(6))
	near(t, "GaussianLogProb", tp.GaussianLogProb(tn([]float64{0, 1}, 2), tn([]float64{0, math.Log(2)}, 2), tn([]float64{0, 3}, 2)).Data,
		-0.5*math.Log(2*math.Pi), -0.5-math.Log(2)-0.5*math.Log(2*math.Pi))
	near(t, "GaussianEntropy", tp.GaussianEntropy(tn([]float64{0}, 1)).Data, 0.5+0.5*math.Log(2*math.Pi))
}

func TestSpecialFunctions(t *testing.T) {
	const gamma = 0.5772156649015329
	near(t, "Digamma", []float64{Digamma(1), Digamma(0.5), Digamma(10), Digamma(-0.5)},
		-gamma, -gamma-2*math.Ln2, 2.251752589066721, 0.03648997397857652)
	near(t, "Trigamma", []float64{Trigamma(1), Trigamma(0.5), Trigamma(20)},
		math.Pi*math.Pi/6, math.Pi*math.Pi/2, 0.05127082293520312)
	for _, x := range []float64{0.1, 0.7, 3, 9.5, 30} {
		h := 1e-5
		if d := (Lgamma(x+h) - Lgamma(x-h)) / (2 * h); math.Abs(d-Digamma(x)) > 1e-7*max(1, math.Abs(d)) {
			t.Errorf("Digamma(%v) = %v, numeric %v", x, Digamma(x), d)
		}
		if d := (Digamma(x+h) - Digamma(x-h)) / (2 * h); math.Abs(d-Trigamma(x)) > 1e-6*max(1, math.Abs(d)) {
			t.Errorf("Trigamma(%v) = %v, numeric %v", x, Trigamma(x), d)
		}
	}
	if !math.IsNaN(Digamma(0)) || !math.IsNaN(Trigamma(-2)) || !math.IsNaN(Digamma(math.NaN())) {
		t.Error("poles and NaN should give NaN")
	}
}

// TestMaskNoNaN checks that masked and fully masked rows produce no NaN in
// values or gradients, even with extreme logits.
func TestMaskNoNaN(t *testing.T) {
	tp := NewTape[float32]()
	x := NewParam[float32](2, 3)
	copy(x.Data, []float32{1e30, -1e30, 3, 1, 2, 3})
	mask := []bool{false, true, true, false, false, false}
	ent := tp.CategoricalEntropy(x, mask)
	sm := tp.Softmax(x, mask)
	ls := tp.LogSoftmax(x, mask)
	loss := tp.Add(tp.SumAll(ent), tp.Add(tp.SumAll(tp.Mul(sm, ls)), tp.SumAll(ls)))
	tp.Backward(loss)
	for _, v := range append(append(append(append([]float32{}, ent.Data...), sm.Data...), ls.Data...), x.Grad...) {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("non-finite value: ent %v sm %v ls %v grad %v", ent.Data, sm.Data, ls.Data, x.Grad)
		}
	}
}

// TestFloat32MatchesFloat64 runs the same network in both precisions.
func TestFloat32MatchesFloat64(t *testing.T) {
	ps64 := NewParams[float64]()
	mlp64 := NewMLP(ps64, "m", []int{5, 7, 3}, ActSiLU, rand.New(rand.NewPCG(5, 5)))
	ps32 := NewParams[float32]()
	mlp32 := NewMLP(ps32, "m", []int{5, 7, 3}, ActSiLU, rand.New(rand.NewPCG(5, 5)))
	x := randn(rand.New(rand.NewPCG(6, 6)), 4*5)
	x32 := make([]float32, len(x))
	for i, v := range x {
		x32[i] = float32(v)
	}
	tp64, tp32 := NewTape[float64](), NewTape[float32]()
	l64 := tp64.CrossEntropy(mlp64.Forward(tp64, NewTensor(x, 4, 5)), nil, []int{0, 1, 2, 0})
	l32 := tp32.CrossEntropy(mlp32.Forward(tp32, NewTensor(x32, 4, 5)), nil, []int{0, 1, 2, 0})
	tp64.Backward(l64)
	tp32.Backward(l32)
	if math.Abs(l64.Item()-l32.Item()) > 1e-5 {
		t.Errorf("loss %v vs %v", l64.Item(), l32.Item())
	}
	for i := 0; i < ps64.Len(); i++ {
		for j, g := range ps64.At(i).Grad {
			if math.Abs(g-float64(ps32.At(i).Grad[j])) > 1e-5 {
				t.Fatalf("%s[%d]: grad %v vs %v", ps64.Name(i), j, g, ps32.At(i).Grad[j])
			}
		}
	}
}

func TestAdam(t *testing.T) {
	for _, c := range []struct {
		wd, want float64
	}{{0, 0.9}, {0.1, 0.89}} {
		ps := NewParams[float64]()
		p := ps.New("p", 1)
		p.Data[0], p.Grad[0] = 1, 0.5
		o := NewAdamW(ps, 0.1, c.wd)
		o.Step()
		if math.Abs(p.Data[0]-c.want) > 1e-6 {
			t.Errorf("wd=%v: after one step p = %v, want %v", c.wd, p.Data[0], c.want)
		}
	}
	// Adam minimises a quadratic.
	ps := NewParams[float64]()
	p := ps.New("p", 2)
	copy(p.Data, []float64{3, -2})
	o := NewAdam(ps, 0.1)
	tp := NewTape[float64]()
	for i := 0; i < 300; i++ {
		tp.Reset()
		ps.ZeroGrad()
		tp.Backward(tp.SumAll(tp.Square(p)))
		o.Step()
	}
	if math.Abs(p.Data[0]) > 1e-2 || math.Abs(p.Data[1]) > 1e-2 || o.Steps() != 300 {
		t.Errorf("Adam did not converge: %v after %d steps", p.Data, o.Steps())
	}
}

func TestClipAndSchedules(t *testing.T) {
	ps := NewParams[float32]()
	a, b := ps.New("a", 1), ps.New("b", 1)
	a.Grad[0], b.Grad[0] = 3, 4
	if n := ps.ClipGradNorm(1); n != 5 || math.Abs(float64(a.Grad[0])-0.6) > 1e-6 || math.Abs(float64(b.Grad[0])-0.8) > 1e-6 {
		t.Errorf("ClipGradNorm: norm %v grads %v %v", n, a.Grad, b.Grad)
	}
	if n := ps.ClipGradNorm(10); math.Abs(n-1) > 1e-6 || math.Abs(float64(a.Grad[0])-0.6) > 1e-6 {
		t.Errorf("ClipGradNorm below the limit changed gradients: %v %v", n, a.Grad)
	}
	near(t, "ConstantLR", []float64{ConstantLR(0.1)(0), ConstantLR(0.1)(99)}, 0.1, 0.1)
	lin := LinearLR(1, 0, 10)
	near(t, "LinearLR", []float64{lin(0), lin(5), lin(10), lin(20)}, 1, 0.5, 0, 0)
	cos := CosineLR(1, 0.1, 10)
	near(t, "CosineLR", []float64{cos(0), cos(5), cos(10), cos(11)}, 1, 0.55, 0.1, 0.1)
}

func TestInitialisers(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, shape := range [][2]int{{3, 7}, {7, 3}, {5, 5}} {
		w := Zeros[float64](shape[0], shape[1])
		Orthogonal(w, 2, rng)
		r, c := shape[0], shape[1]
		// The shorter side's vectors are orthogonal with norm gain.
		n, l := min(r, c), max(r, c)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				var d float64
				for k := 0; k < l; k++ {
					if r <= c {
						d += w.Data[i*c+k] * w.Data[j*c+k]
					} else {
						d += w.Data[k*c+i] * w.Data[k*c+j]
					}
				}
				want := 0.0
				if i == j {
					want = 4
				}
				if math.Abs(d-want) > 1e-9 {
					t.Fatalf("Orthogonal %v: <v%d, v%d> = %v", shape, i, j, d)
				}
			}
		}
	}
	w := Zeros[float32](100, 50)
	XavierUniform(w, 100, 50, 1, rng)
	bound := math.Sqrt(6.0 / 150)
	var ss float64
	for _, v := range w.Data {
		if math.Abs(float64(v)) > bound {
			t.Fatalf("Xavier value %v beyond %v", v, bound)
		}
		ss += float64(v * v)
	}
	if v := ss / 5000; math.Abs(v-bound*bound/3) > 0.1*bound*bound/3 {
		t.Errorf("Xavier variance %v, want about %v", v, bound*bound/3)
	}
	KaimingNormal(w, 100, rng)
	ss = 0
	for _, v := range w.Data {
		ss += float64(v * v)
	}
	if v := ss / 5000; math.Abs(v-0.02) > 0.002 {
		t.Errorf("Kaiming variance %v, want about 0.02", v)
	}
}

// TestDeterminism trains twice from the same seed and compares the saved
// bytes; a different seed must give different bytes.
func TestDeterminism(t *testing.T) {
	run := func(seed uint64) []byte {
		rng := rand.New(rand.NewPCG(seed, 1))
		ps := NewParams[float32]()
		mlp := NewMLP(ps, "m", []int{6, 16, 3}, ActTanh, rng)
		ln := NewLayerNorm(ps, "ln", 3)
		opt := NewAdamW(ps, 1e-2, 1e-2)
		x := NewTensor(randf32(rng, 32*6), 32, 6)
		targets := make([]int, 32)
		for i := range targets {
			targets[i] = rng.IntN(3)
		}
		tp := NewTape[float32]()
		sched := CosineLR(1e-2, 1e-3, 5)
		for step := 0; step < 5; step++ {
			tp.Reset()
			ps.ZeroGrad()
			loss := tp.CrossEntropy(ln.Forward(tp, mlp.Forward(tp, x)), nil, targets)
			tp.Backward(loss)
			ps.ClipGradNorm(0.5)
			opt.LR = sched(step)
			opt.Step()
		}
		var buf bytes.Buffer
		if err := ps.WriteSafetensors(&buf, nil); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	a, b, c := run(1), run(1), run(2)
	if !bytes.Equal(a, b) {
		t.Error("same seed gave different parameters")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds gave the same parameters")
	}
}

func TestPanics(t *testing.T) {
	tp := NewTape[float64]()
	a := Zeros[float64](2, 3)
	for name, f := range map[string]func(){
		"matmul shapes":  func() { tp.MatMul(a, a, false, false) },
		"add shapes":     func() { tp.Add(a, Zeros[float64](3, 2)) },
		"gather range":   func() { tp.GatherRows(a, []int{2}) },
		"segment range":  func() { tp.SegmentSum(a, []int{0, 5}, 2) },
		"segment count":  func() { tp.SegmentSum(a, []int{0}, 2) },
		"masked target":  func() { tp.CrossEntropy(a, []bool{true, false, true, true, true, true}, []int{1, 0}) },
		"mask length":    func() { tp.Softmax(a, []bool{true}) },
		"backward shape": func() { tp.Backward(a) },
		"slice range":    func() { tp.Slice(a, 1, 2, 4) },
		"conv weights":   func() { tp.Conv1D(Zeros[float64](1, 4, 2), Zeros[float64](3, 1), 2, false) },
		"terms none":     func() { tp.SumTerms(ActIdentity, nil) },
		"stack none":     func() { tp.StackTerms() },
		"stack columns":  func() { tp.StackTerms(Term[float64]{X: a}, Term[float64]{X: Zeros[float64](2, 2)}) },
		"stack inner":    func() { tp.StackTerms(Term[float64]{X: a, W: Zeros[float64](2, 3)}) },
		"terms shapes":   func() { tp.SumTerms(ActIdentity, nil, Term[float64]{X: a}, Term[float64]{X: Zeros[float64](3, 2)}) },
		"terms inner":    func() { tp.SumTerms(ActIdentity, nil, Term[float64]{X: a, W: Zeros[float64](2, 3)}) },
		"terms bias":     func() { tp.SumTerms(ActIdentity, Zeros[float64](2), Term[float64]{X: a}) },
		"sparse product": func() { tp.SumTerms(ActIdentity, nil, Term[float64]{X: a, W: Zeros[float64](3, 3), Ptr: []int{0, 0}}) },
		"sparse stacked": func() { tp.StackTerms(Term[float64]{X: a, Ptr: []int{0, 1}, Idx: []int{0}}) },
		"sparse rows": func() {
			tp.SumTerms(ActIdentity, nil, Term[float64]{X: a}, Term[float64]{X: a, Ptr: []int{0, 1}, Idx: []int{0}})
		},
		"sparse index":   func() { tp.SumTerms(ActIdentity, nil, Term[float64]{X: a, Ptr: []int{0, 1, 1}, Idx: []int{2}}) },
		"sparse pointer": func() { tp.SumTerms(ActIdentity, nil, Term[float64]{X: a, Ptr: []int{0, 2}, Idx: []int{0}}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestFillRows: every row, for row counts around the powers of two that
// fillRows doubles through and the chunk it then repeats.
func TestFillRows(t *testing.T) {
	row := []float32{1, -2, 3}
	for _, m := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, fillChunk/3 - 1, fillChunk / 3, fillChunk/3 + 1, 3 * fillChunk} {
		dst := make([]float32, m*len(row))
		for i := range dst {
			dst[i] = 99
		}
		fillRows(dst, row)
		for i, v := range dst {
			if v != row[i%len(row)] {
				t.Fatalf("%d rows: dst[%d] = %v, want %v", m, i, v, row[i%len(row)])
			}
		}
	}
}

// TestSumTermsBits: in float32, SumTerms gives the bits of the sum it
// replaces, done in its order: Affine of the first product, then each
// other term added to the running sum (a product's chain of multiply-adds
// computed on its own, then added, one depth block of sgemm at a time),
// then the ReLU. Shapes with partial
// tiles and several depth blocks, plain terms before the first product, a
// repeated term, no bias, the ReLU fused into a product or an addition,
// and NaN, ±0 and ±∞ among the inputs.
func TestSumTermsBits(t *testing.T) {
	if !haveSgemmKernel {
		t.Skip("the expected bits are the packed kernel's; no kernel in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(71, 72))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	for _, s := range []struct{ m, n, k1, k2 int }{{4, 3, 2, 5}, {12, 64, 64, 64}, {37, 70, 16, 300}, {100, 64, 64, 12}} {
		for rep := 0; rep < 8; rep++ {
			withBias, relu, plainLast, specials := rep&1 == 1, rep&2 == 2, rep&4 == 4, rep >= 6
			f := func(r, c int) *Tensor[float32] {
				v := randf32(rng, r*c)
				if specials {
					for i := range v {
						if rng.IntN(40) == 0 {
							v[i] = special[rng.IntN(len(special))]
						}
					}
				}
				return NewTensor(v, r, c)
			}
			plain, x1, w1, x2, w2 := f(s.m, s.n), f(s.m, s.k1), f(s.k1, s.n), f(s.m, s.k2), f(s.k2, s.n)
			var bias *Tensor[float32]
			if withBias {
				bias = f(1, s.n)
				bias.Shape = []int{s.n}
			}
			act := ActIdentity
			if relu {
				act = ActReLU
			}
			tp := NewTape[float32]()
			terms := []Term[float32]{{X: plain}, {X: x1, W: w1}, {X: x2, W: w2}, {X: plain}}
			if !plainLast {
				terms = terms[:3]
			}
			got := tp.SumTerms(act, bias, terms...)
			var want *Tensor[float32]
			if withBias {
				want = tp.Affine(x1, w1, bias)
			} else {
				want = tp.MatMul(x1, w1, false, false)
			}
			want = tp.Add(want, plain)
			// A product onto the sum adds it one 256-deep block at a time.
			for p0 := 0; p0 < s.k2; p0 += sgemmKC {
				p1 := min(p0+sgemmKC, s.k2)
				want = tp.Add(want, tp.MatMul(tp.Slice(x2, 1, p0, p1), tp.Slice(w2, 0, p0, p1), false, false))
			}
			if plainLast {
				want = tp.Add(want, plain)
			}
			if relu {
				want = tp.ReLU(want)
			}
			for i := range want.Data {
				if !same(got.Data[i], want.Data[i]) {
					t.Fatalf("%+v rep %d: element %d = %v, the sum in order %v", s, rep, i, got.Data[i], want.Data[i])
				}
			}
		}
	}
}

// TestStackTermsBits: in float32, StackTerms gives the bits of the
// products and rows it stacks, computed on their own and concatenated.
func TestStackTermsBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	f := func(r, c int) *Tensor[float32] { return NewTensor(randf32(rng, r*c), r, c) }
	for _, s := range []struct{ m1, m2, k, n int }{{4, 3, 2, 5}, {37, 12, 64, 64}, {100, 64, 300, 70}} {
		x1, x2, w, plain := f(s.m1, s.k), f(s.m2, s.k), f(s.k, s.n), f(3, s.n)
		tp := NewTape[float32]()
		got := tp.StackTerms(Term[float32]{X: x1, W: w}, Term[float32]{X: plain}, Term[float32]{X: x2, W: w})
		want := tp.Concat(tp.MatMul(x1, w, false, false), tp.Concat(plain, tp.MatMul(x2, w, false, false), 0), 0)
		if !slices.Equal(got.Shape, want.Shape) {
			t.Fatalf("%+v: shape %v, want %v", s, got.Shape, want.Shape)
		}
		for i := range want.Data {
			if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
				t.Fatalf("%+v: element %d = %v, stacked products %v", s, i, got.Data[i], want.Data[i])
			}
		}
	}
}

// TestSumTermsReLUGradBits: in float32, the gradients through SumTerms
// with its fused ReLU (the mask applied to the result's gradient in
// place, from the output) are the bits of those through SumTerms followed
// by ReLU, for every input, the bias included.
func TestSumTermsReLUGradBits(t *testing.T) {
	const m, k, n = 37, 20, 70
	run := func(fused bool) [][]float32 {
		r := rand.New(rand.NewPCG(93, 94))
		p := func(rows, cols int) *Tensor[float32] {
			x := NewParam[float32](rows, cols)
			copy(x.Data, randf32(r, rows*cols))
			return x
		}
		x, w, plain, bias := p(m, k), p(k, n), p(m, n), NewParam[float32](n)
		copy(bias.Data, randf32(r, n))
		tp := NewTape[float32]()
		terms := []Term[float32]{{X: x, W: w}, {X: plain}}
		var y *Tensor[float32]
		if fused {
			y = tp.SumTerms(ActReLU, bias, terms...)
		} else {
			y = tp.ReLU(tp.SumTerms(ActIdentity, bias, terms...))
		}
		tp.Backward(tp.SumAll(tp.Mul(y, NewTensor(randf32(r, m*n), m, n))))
		return [][]float32{y.Data, x.Grad, w.Grad, plain.Grad, bias.Grad}
	}
	want, got := run(false), run(true)
	for i := range want {
		for j := range want[i] {
			if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
				t.Fatalf("tensor %d element %d: fused %v, SumTerms then ReLU %v", i, j, got[i][j], want[i][j])
			}
		}
	}
}

// TestConv1DActBits: in float32, Conv1DAct with a bias and a fused ReLU
// gives the bits of Conv1D, AddBias and ReLU, forward and backward.
func TestConv1DActBits(t *testing.T) {
	if !haveSgemmKernel {
		t.Skip("the expected bits are the packed kernel's; no kernel in this build or on this CPU")
	}
	run := func(fused bool) [][]float32 {
		r := rand.New(rand.NewPCG(95, 96))
		x, w, b := NewParam[float32](40, 12, 6), NewParam[float32](18, 16), NewParam[float32](16)
		for _, p := range []*Tensor[float32]{x, w, b} {
			copy(p.Data, randf32(r, len(p.Data)))
		}
		tp := NewTape[float32]()
		var y *Tensor[float32]
		if fused {
			y = tp.Conv1DAct(x, w, b, 3, true, ActReLU)
		} else {
			y = tp.ReLU(tp.AddBias(tp.Conv1D(x, w, 3, true), b))
		}
		tp.Backward(tp.SumAll(tp.Mul(y, NewTensor(randf32(r, len(y.Data)), y.Shape...))))
		return [][]float32{y.Data, x.Grad, w.Grad, b.Grad}
	}
	want, got := run(false), run(true)
	for i := range want {
		for j := range want[i] {
			if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
				t.Fatalf("tensor %d element %d: fused %v, separate %v", i, j, got[i][j], want[i][j])
			}
		}
	}
}

// TestConv1DInPlace: Conv1DAct reading its rows in place (with the rows at
// the sequences' ends recomputed from copies) gives the bits of the path
// through a column buffer, forward and backward, for kernels of 1, 3 and
// 5 steps, sequences as long as the kernel and longer, with and without
// a bias and a ReLU, and NaN, ±0 and ±∞ among the inputs; cases it does
// not take (even k, valid convolutions) are unchanged.
func TestConv1DInPlace(t *testing.T) {
	if !haveSgemmKernel {
		t.Skip("no packed kernel in this build or on this CPU")
	}
	defer func(v bool) { convInPlace = v }(convInPlace)
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	cases := []struct {
		n, tin, cin, cout, k int
		same, bias           bool
		act                  Activation
	}{
		{40, 12, 6, 16, 3, true, true, ActReLU},
		{40, 12, 6, 16, 3, true, false, ActIdentity},
		{3, 3, 2, 5, 3, true, true, ActReLU},
		{7, 5, 3, 33, 5, true, true, ActTanh},
		{50, 9, 4, 8, 1, true, true, ActReLU},
		{20, 8, 3, 16, 2, true, true, ActReLU},
		{20, 8, 3, 16, 3, false, true, ActReLU},
	}
	for ci, c := range cases {
		run := func(inPlace, specials, rows bool) [][]float32 {
			convInPlace = inPlace
			r := rand.New(rand.NewPCG(97, uint64(ci)))
			x, w, b := NewParam[float32](c.n, c.tin, c.cin), NewParam[float32](c.k*c.cin, c.cout), NewParam[float32](c.cout)
			for _, p := range []*Tensor[float32]{x, w, b} {
				copy(p.Data, randf32(r, len(p.Data)))
			}
			if specials {
				for i := range x.Data {
					if r.IntN(10) == 0 {
						x.Data[i] = special[r.IntN(len(special))]
					}
				}
			}
			var bias *Tensor[float32]
			if c.bias {
				bias = b
			}
			tp := NewTape[float32]()
			var y *Tensor[float32]
			if rows {
				y = tp.Conv1DRows(x, w, bias, c.k, c.same, c.act)
				if tout := len(y.Data) / c.cout; len(y.Shape) != 2 || y.Shape[0] != tout || tout%c.n != 0 {
					t.Fatalf("case %d: Conv1DRows gives shape %v, want [N·Tout, %d]", ci, y.Shape, c.cout)
				}
			} else {
				y = tp.Conv1DAct(x, w, bias, c.k, c.same, c.act)
			}
			tp.Backward(tp.SumAll(tp.Mul(y, NewTensor(randf32(r, len(y.Data)), y.Shape...))))
			return [][]float32{y.Data, x.Grad, w.Grad, b.Grad}
		}
		for _, specials := range []bool{false, true} {
			want := run(false, specials, false)
			for _, rows := range []bool{false, true} {
				got := run(true, specials, rows)
				for i := range want {
					if !slices.EqualFunc(got[i], want[i], func(a, b float32) bool {
						return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
					}) {
						t.Fatalf("case %d (specials %v, rows %v) tensor %d: in place %v, column buffer %v", ci, specials, rows, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestSumTermsSparseBits: in float32, a sparse term added by SumTerms row
// by row gives the bits of the same SpMM stored as a tensor and added as a
// plain term, forward and backward (the gradients of the sparse rows and
// of the product's operands), on 64-column rows (the AVX-512 row
// kernels) and 20-column ones, with and without a bias, weights and a
// fused ReLU, the sparse term first, last or alone, and NaN, ±0 and ±∞
// among the values.
func TestSumTermsSparseBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	for _, n := range []int{20, 64} {
		for rep := 0; rep < 32; rep++ {
			m, ns, k := 300+rng.IntN(300), 1+rng.IntN(40), 8
			withBias, relu, weighted, specials := rep&1 == 1, rep&2 == 2, rep&4 == 4, rep&8 == 8
			layout := rep / 16 // 0: product then sparse; 1: sparse alone, then sparse first
			f := func(r, c int) *Tensor[float32] {
				v := randf32(rng, r*c)
				if specials {
					for i := range v {
						if rng.IntN(40) == 0 {
							v[i] = special[rng.IntN(len(special))]
						}
					}
				}
				x := NewTensor(v, r, c)
				x.RequiresGrad = true
				return x
			}
			ptr, idx := randCSR(rng, m, ns)
			var w []float32
			if weighted {
				w = randf32(rng, len(idx))
			}
			xs, x1, w1 := f(ns, n), f(m, k), f(k, n)
			var bias *Tensor[float32]
			if withBias {
				bias = f(1, n)
				bias.Shape = []int{n}
			}
			act := ActIdentity
			if relu {
				act = ActReLU
			}
			r := randf32(rng, m*n)
			run := func(sparse bool) [][]float32 {
				for _, x := range []*Tensor[float32]{xs, x1, w1, bias} {
					if x != nil {
						x.Grad = make([]float32, len(x.Data))
					}
				}
				tp := NewTape[float32]()
				term := func() Term[float32] { // each a SpMM of its own in the plain sum
					if !sparse {
						return Term[float32]{X: tp.SpMM(ptr, idx, w, xs)}
					}
					return Term[float32]{X: xs, Ptr: ptr, Idx: idx, Weights: w}
				}
				terms := []Term[float32]{{X: x1, W: w1}, term()}
				if layout == 1 {
					terms = []Term[float32]{term(), {X: x1, W: w1}, term()}
					if rep%4 == 0 {
						terms = terms[:1]
					}
				}
				y := tp.SumTerms(act, bias, terms...)
				tp.Backward(tp.SumAll(tp.Mul(y, NewTensor(r, m, n))))
				out := [][]float32{slices.Clone(y.Data), slices.Clone(xs.Grad), slices.Clone(x1.Grad), slices.Clone(w1.Grad)}
				if bias != nil {
					out = append(out, slices.Clone(bias.Grad))
				}
				return out
			}
			want, got := run(false), run(true)
			if w2 := run(false); !slices.EqualFunc(w2[1], want[1], same) {
				t.Logf("plain path not deterministic at rep %d", rep)
			}
			for i := range want {
				if !slices.EqualFunc(got[i], want[i], same) {
					for j := range got[i] {
						if !same(got[i][j], want[i][j]) {
							t.Logf("element %d: %v (%x), plain %v (%x)", j, got[i][j], math.Float32bits(got[i][j]), want[i][j], math.Float32bits(want[i][j]))
							break
						}
					}
					t.Fatalf("n=%d rep %d: tensor %d differs from SpMM added as a plain term", n, rep, i)
				}
			}
		}
	}
}

// TestSumAllExact: SumAll's interleaved float64 sums give the exact sum
// of values it can hold, at lengths around its four lanes, and its
// gradient is the scale everywhere, whether SumAll is the input's only
// consumer (the gradient is written) or not (added).
func TestSumAllExact(t *testing.T) {
	for n := 0; n <= 9; n++ {
		x := NewParam[float32](n)
		for i := range x.Data {
			x.Data[i] = float32(i + 1)
		}
		tp := NewTape[float32]()
		s := tp.SumAll(x)
		if want := float32(n * (n + 1) / 2); s.Data[0] != want {
			t.Errorf("n=%d: sum %v, want %v", n, s.Data[0], want)
		}
		if n == 0 {
			continue
		}
		// y = x·1 is the tape's: its gradient starts unwritten.
		tp.Reset()
		tp.Backward(tp.Scale(tp.SumAll(tp.Scale(x, 1)), 3))
		for i, g := range x.Grad {
			if g != 3 {
				t.Fatalf("n=%d: gradient[%d] = %v, want 3 (written)", n, i, g)
			}
		}
		tp.Reset()
		clear(x.Grad)
		// y also feeds y⊙y, whose gradient 2y reaches y first.
		y := tp.Scale(x, 1)
		tp.Backward(tp.Add(tp.SumAll(y), tp.SumAll(tp.Mul(y, y))))
		for i, g := range x.Grad {
			if want := 1 + 2*x.Data[i]; g != want {
				t.Fatalf("n=%d: gradient[%d] = %v, want %v (added)", n, i, g, want)
			}
		}
	}
}

// TestBackwardLeavesLeafLoss: a loss that no operation produced (a
// parameter, or a tape input) gets the gradient 1 from both backward
// passes, with or without a buffer beforehand.
func TestBackwardLeavesLeafLoss(t *testing.T) {
	for _, leaves := range []bool{false, true} {
		tp := NewTape[float64]()
		w := NewTensor([]float64{2}, 1)
		w.RequiresGrad = true
		if leaves {
			tp.BackwardLeaves(w)
		} else {
			tp.Backward(w)
		}
		if len(w.Grad) != 1 || w.Grad[0] != 1 {
			t.Errorf("leaves=%v: gradient %v, want [1]", leaves, w.Grad)
		}
	}
}

// TestTapeMulAdds: a tape counts its products' multiply-adds, forward and
// backward, in both precisions and on every path a product takes (the
// packed kernel, the BLAS, a convolution's rows read in place), and Reset
// starts the count again.
func TestTapeMulAdds(t *testing.T) {
	t.Run("float32", func(t *testing.T) { testTapeMulAdds[float32](t) })
	t.Run("float64", func(t *testing.T) { testTapeMulAdds[float64](t) })
}

func testTapeMulAdds[T Float](t *testing.T) {
	tp := NewTape[T]()
	check := func(step string, want int64) {
		t.Helper()
		if got := tp.MulAdds(); got != want {
			t.Fatalf("%s: %d multiply-adds counted, want %d", step, got, want)
		}
	}
	for _, s := range []struct{ m, k, n int }{{3, 4, 5}, {300, 64, 64}} {
		tp.Reset()
		check("after Reset", 0)
		a, b := NewParam[T](s.m, s.k), NewParam[T](s.k, s.n)
		y := tp.MatMul(a, b, false, false)
		mn := int64(s.m * s.k * s.n)
		check("MatMul", mn)
		x2, w2 := NewParam[T](s.m, 2), NewParam[T](2, s.n)
		z := tp.SumTerms(ActReLU, nil, Term[T]{X: y}, Term[T]{X: x2, W: w2})
		check("SumTerms", mn+int64(s.m*2*s.n))
		tp.Backward(tp.SumAll(z))
		// each product's backward pass: one for each operand's gradient
		check("Backward", 3*mn+3*int64(s.m*2*s.n))
	}
	for _, n := range []int{2, 200} {
		tp.Reset()
		x, w := NewParam[T](n, 12, 3), NewParam[T](3*3, 4)
		tp.Conv1D(x, w, 3, true)
		rows := n * 12
		if inner := rows - 2; unsafe.Sizeof(x.Data[0]) == 4 && convInPlace && useSgemm(inner, 4, 9) {
			// Read in place, the product runs over every row but the first
			// and last, then the 2n rows that reach into a padding again.
			rows = inner + 2*n
		}
		check("Conv1D", int64(rows*4*9))
	}
}
