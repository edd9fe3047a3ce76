package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestSgemm compares the packed kernel with a float64 triple loop on shapes
// around its tile sizes (6×16, depth blocks of 256), every transpose case,
// row strides wider than the rows, beta 0, 1 and 0.5, and the parallel path.
func TestSgemm(t *testing.T) {
	if !haveSgemmKernel {
		t.Skip("no AVX2/FMA kernel in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(7, 7))
	type shape struct{ m, n, k int }
	shapes := []shape{{4, 4, 4}, {6, 16, 1}, {5, 15, 7}, {7, 17, 33}, {12, 32, 64}, {13, 33, 255},
		{6, 16, 256}, {11, 20, 257}, {37, 5, 600}, {64, 64, 64}, {100, 70, 90}, {301, 64, 64}}
	for _, s := range shapes {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, beta := range []float32{0, 1, 0.5} {
					name := fmt.Sprintf("m=%d/n=%d/k=%d/tA=%v/tB=%v/beta=%v", s.m, s.n, s.k, tA, tB, beta)
					checkSgemm(t, rng, name, s.m, s.n, s.k, tA, tB, beta)
				}
			}
		}
	}
}

func checkSgemm(t *testing.T, rng *rand.Rand, name string, m, n, k int, tA, tB bool, beta float32) {
	t.Helper()
	var s sgemmScratch
	checkProduct(t, rng, name, m, n, k, tA, tB, beta, func(a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
		s.sgemm(tA, tB, m, n, k, a, lda, b, ldb, beta, c, ldc)
	})
}

// checkProduct runs mul, which must compute c = op(a)·op(b) + beta·c, on
// random operands with strides wider than their rows, and checks c against
// the float64 triple loop.
func checkProduct(t *testing.T, rng *rand.Rand, name string, m, n, k int, tA, tB bool, beta float32,
	mul func(a []float32, lda int, b []float32, ldb int, c []float32, ldc int)) {
	t.Helper()
	ar, ac := m, k
	if tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB {
		br, bc = n, k
	}
	lda, ldb, ldc := ac+3, bc+1, n+5 // strides wider than the rows
	a := randSlice(rng, ar*lda)
	b := randSlice(rng, br*ldb)
	c := randSlice(rng, m*ldc)
	want := make([]float64, len(c))
	for i := range c {
		want[i] = float64(c[i])
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var sum float64
			for p := 0; p < k; p++ {
				var av, bv float32
				if tA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if tB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				sum += float64(av) * float64(bv)
			}
			want[i*ldc+j] = sum + float64(beta)*float64(c[i*ldc+j])
		}
	}
	mul(a, lda, b, ldb, c, ldc)
	tol := 1e-5 * math.Sqrt(float64(k))
	for i := range c {
		if d := math.Abs(float64(c[i]) - want[i]); d > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s: c[%d] = %v, want %v (the padding beyond column n must stay as it was)", name, i, c[i], want[i])
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64())
	}
	return s
}

// TestGemmFewRows: float32 products of 1-3 rows and more columns than
// gonum's Sgemm multiplies in one goroutine go to the kernel, one row of C
// at a time as a column of Cᵀ: right in every layout, and without
// allocating (gonum's goroutines did).
func TestGemmFewRows(t *testing.T) {
	if !haveSgemmKernel {
		t.Skip("no AVX2/FMA kernel in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(8, 8))
	var s sgemmScratch
	for _, m := range []int{1, 2, 3} {
		for _, n := range []int{gonumSerialCols + 1, 386} {
			for _, k := range []int{1, 17, 64} {
				for _, tA := range []bool{false, true} {
					for _, tB := range []bool{false, true} {
						for _, beta := range []float32{0, 1, 0.5} {
							name := fmt.Sprintf("m=%d/n=%d/k=%d/tA=%v/tB=%v/beta=%v", m, n, k, tA, tB, beta)
							var allocs float64
							checkProduct(t, rng, name, m, n, k, tA, tB, beta, func(a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
								c0 := slices.Clone(c)
								allocs = testing.AllocsPerRun(1, func() { // runs twice: from c0 each time
									copy(c, c0)
									gemm(&s, tA, tB, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
								})
							})
							if allocs != 0 {
								t.Fatalf("%s: %v allocations", name, allocs)
							}
						}
					}
				}
			}
		}
	}
}

// TestSgemmParallel runs products above sgemmParallelMin, whose rows are
// split between goroutines, against the float64 triple loop, and checks
// which shapes split.
func TestSgemmParallel(t *testing.T) {
	if !haveSgemmKernel {
		t.Skip("no AVX2/FMA kernel in this build or on this CPU")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, s := range []struct{ m, n, k, workers int }{
		{1031, 130, 300, 2}, {613, 64, 1000, 2}, {32768, 64, 64, 2},
		{1200, 64, 64, 1},  // the GNN encoder's products at 1,200 machines
		{64, 64, 16384, 1}, // a weight gradient: 64 rows
		{300, 512, 512, 1}, // above sgemmParallelMin, but under twice sgemmParallelRows rows
		{8191, 64, 64, 1},  // just under sgemmParallelMin
	} {
		if got := sgemmWorkers(s.m, s.n, s.k); got != s.workers {
			t.Errorf("m=%d n=%d k=%d: %d goroutines, want %d", s.m, s.n, s.k, got, s.workers)
		}
	}
	rng := rand.New(rand.NewPCG(8, 8))
	checkSgemm(t, rng, "parallel", 1031, 130, 300, false, true, 1)
	checkSgemm(t, rng, "parallel-tA", 613, 64, 1000, true, false, 0)
}

// TestAxpy checks axpy, whose float32 form runs the AVX kernel on multiples
// of eight and scalar code on the rest, against a plain loop.
func TestAxpy(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for n := 0; n <= 70; n++ {
		x, y := randSlice(rng, n+1), randSlice(rng, n+1)
		want := slices.Clone(y)
		for i := 0; i < n; i++ {
			want[i] += 0.75 * x[i]
		}
		axpy(y[:n], 0.75, x[:n])
		for i := range y {
			if math.Abs(float64(y[i]-want[i])) > 1e-6*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("n=%d: y[%d] = %v, want %v (element %d is past the end)", n, i, y[i], want[i], n)
			}
		}
	}
}

// TestReLUGrad32 checks the branch-free float32 ReLU gradient against its
// definition (g where x > 0, else 0), signed zeros and infinities included,
// and through a tape's backward pass.
func TestReLUGrad32(t *testing.T) {
	x := []float32{1, -1, 0, float32(math.Copysign(0, -1)), 1e-40, -1e-40, float32(math.Inf(1)), float32(math.Inf(-1)), 3.5, -2}
	g := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	dst := make([]float32, len(x))
	reluGrad32(dst, x, g)
	for i := range x {
		want := float32(0)
		if x[i] > 0 {
			want = g[i]
		}
		if dst[i] != want {
			t.Errorf("x %v: gradient %v, want %v", x[i], dst[i], want)
		}
	}
	tp := NewTape[float32]()
	xt := NewParam[float32](len(x))
	copy(xt.Data, x[:6])
	copy(xt.Data[6:], []float32{2, -3, 0.5, -0.5})
	// Through a tape-owned input, whose gradient buffer the ReLU writes first.
	tp.Backward(tp.SumAll(tp.Mul(tp.ReLU(tp.Scale(xt, 1)), NewTensor(g, len(g)))))
	for i, v := range xt.Data {
		want := float32(0)
		if v > 0 {
			want = g[i]
		}
		if xt.Grad[i] != want {
			t.Errorf("tape: x %v: gradient %v, want %v", v, xt.Grad[i], want)
		}
	}
}

// TestAddN checks AddN's values for one to six terms (both parities of its
// pairwise passes) against a plain sum; integers keep the sums exact.
func TestAddN(t *testing.T) {
	for n := 1; n <= 6; n++ {
		tp := NewTape[float32]()
		var xs []*Tensor[float32]
		want := make([]float32, 5)
		for k := 0; k < n; k++ {
			d := []float32{float32(k), 1, 2, float32(k * k), -1}
			for i := range want {
				want[i] += d[i]
			}
			xs = append(xs, NewTensor(d, 5))
		}
		if got := tp.AddN(xs...); !slices.Equal(got.Data, want) {
			t.Fatalf("%d terms: %v, want %v", n, got.Data, want)
		}
	}
}

// TestMax32 checks the float32 maximum of SegmentMax and ReLU (eight lanes
// at a time where the CPU has AVX2) against Go's max bit for bit: NaN in
// either operand gives NaN, +0 wins over −0, infinities and subnormals,
// at every length up to 40 (the lanes and the scalar tail).
func TestMax32(t *testing.T) {
	nan := float32(math.NaN())
	special := []float32{0, float32(math.Copysign(0, -1)), nan, float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -1e-40, 1, -1, 2.5}
	rng := rand.New(rand.NewPCG(4, 4))
	same := func(a, b float32) bool {
		return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
	}
	for n := 0; n <= 40; n++ {
		for trial := 0; trial < 50; trial++ {
			x, y := make([]float32, n), make([]float32, n)
			for i := range x {
				x[i], y[i] = special[rng.IntN(len(special))], special[rng.IntN(len(special))]
			}
			// Segment maxima: every row into one segment of width n.
			if n > 0 {
				out := slices.Clone(y)
				m := segMax[float32]{out: out, counts: make([]int, 1), stride: n}
				m.add(0, x)
				for i := range x {
					if want := max(y[i], x[i]); !same(out[i], want) {
						t.Fatalf("n=%d: max(%v, %v) = %v, want %v", n, y[i], x[i], out[i], want)
					}
				}
			}
			tp := NewTape[float32]()
			r := tp.ReLU(NewTensor(x, n))
			for i := range x {
				if want := max(x[i], 0); !same(r.Data[i], want) {
					t.Fatalf("n=%d: relu(%v) = %v, want %v", n, x[i], r.Data[i], want)
				}
			}
		}
	}
}

// TestReLUGrad32Lanes checks reluGrad32 at every length up to 40 (the
// eight-lane kernel and the tail) against its definition on the bits: the
// gradient passes where x, read as an int32, is positive (x > 0, and NaN
// with the sign clear), and is +0 elsewhere.
func TestReLUGrad32Lanes(t *testing.T) {
	negNaN := math.Float32frombits(0xffc00000)
	vals := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), negNaN, 1e-40, -1e-40, 1, -1, float32(math.Inf(1)), float32(math.Inf(-1))}
	rng := rand.New(rand.NewPCG(6, 6))
	for n := 0; n <= 40; n++ {
		x, g, dst := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], g[i] = vals[rng.IntN(len(vals))], float32(rng.NormFloat64())
		}
		reluGrad32(dst, x, g)
		for i := range x {
			want := float32(0)
			if int32(math.Float32bits(x[i])) > 0 {
				want = g[i]
			}
			if math.Float32bits(dst[i]) != math.Float32bits(want) {
				t.Fatalf("n=%d: x %v (bits %#x), g %v: %v, want %v", n, x[i], math.Float32bits(x[i]), g[i], dst[i], want)
			}
		}
	}
}

// TestSegMaxArg checks the argmax SpMMSegmentMax records for its backward
// pass (eight lanes at a time where the CPU has AVX2) against its
// definition: per column, the first row whose value equals the final
// maximum (NaN, ±0, ±∞, repeats and widths past the lanes included), and
// argCols's listing of a row's columns.
func TestSegMaxArg(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1, -1, 2}
	rng := rand.New(rand.NewPCG(7, 7))
	for width := 1; width <= 70; width++ {
		for trial := 0; trial < 10; trial++ {
			rows := 1 + rng.IntN(5)
			data := make([][]float32, rows)
			for e := range data {
				data[e] = make([]float32, width)
				for j := range data[e] {
					data[e][j] = vals[rng.IntN(len(vals))]
				}
			}
			out, arg := make([]float32, width), make([]int32, width)
			for j := range out {
				out[j] = float32(math.Inf(-1))
			}
			m := segMax[float32]{out: out, counts: make([]int, 1), stride: width}
			for e := range data {
				m.addArg(0, data[e], arg, e)
			}
			match := make([]int, width)
			for j := range out {
				want := data[0][j]
				for e := range data {
					want = max(want, data[e][j])
				}
				if math.Float32bits(out[j]) != math.Float32bits(want) && !(out[j] != out[j] && want != want) {
					t.Fatalf("width %d column %d: max %v, want %v", width, j, out[j], want)
				}
				if want != want {
					continue
				}
				first := -1
				for e := range data {
					if data[e][j] == want {
						first = e
						break
					}
				}
				if int(arg[j]) != first {
					t.Fatalf("width %d column %d: rows %v: argmax %d, want %d", width, j, column(data, j), arg[j], first)
				}
			}
			for e := range data {
				var want []int
				for j := range arg {
					if int(arg[j]) == e {
						want = append(want, j)
					}
				}
				if got := match[:argCols(match, arg, int32(e))]; !slices.Equal(got, want) {
					t.Fatalf("width %d: columns of row %d %v, want %v", width, e, got, want)
				}
			}
		}
	}
}

func column(data [][]float32, j int) []float32 {
	var c []float32
	for _, r := range data {
		c = append(c, r[j])
	}
	return c
}

// TestSgemmTransposedInPlace: a transposed A, read in place by the kernel
// (six adjacent columns, stepping by lda), or packed when lda is wide
// (the last shape), gives the bits of the same product from an explicitly
// transposed copy read as rows.
func TestSgemmTransposedInPlace(t *testing.T) {
	if !haveSgemmKernel {
		t.Skip("no AVX2/FMA kernel in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for _, sh := range []struct{ m, n, k int }{{6, 16, 1}, {13, 33, 255}, {64, 64, 600}, {20, 17, 40}, {520, 20, 30}} {
		m, n, k := sh.m, sh.n, sh.k
		lda := m + 2
		a := randSlice(rng, k*lda) // k×m, transposed
		at := make([]float32, m*k) // m×k
		for p := 0; p < k; p++ {
			for i := 0; i < m; i++ {
				at[i*k+p] = a[p*lda+i]
			}
		}
		b := randSlice(rng, k*n)
		got, want := make([]float32, m*n), make([]float32, m*n)
		var s sgemmScratch
		s.sgemm(true, false, m, n, k, a, lda, b, n, 0, got, n)
		s.sgemm(false, false, m, n, k, at, k, b, n, 0, want, n)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("m=%d n=%d k=%d: c[%d] = %v in place, %v from the copy", m, n, k, i, got[i], want[i])
			}
		}
	}
}

// TestSgemmBias: a product that adds a bias row as the kernels store
// (sgemmBias, Affine's path) gives the bits of a product with beta 1 onto
// rows filled with the bias, on shapes with partial tiles, several depth
// blocks and both transposes of A; with relu, those of max(·, 0) after it,
// also for NaN, ±0 and ±∞ among the inputs and on a product onto c.
func TestSgemmBias(t *testing.T) {
	if !haveSgemmKernel {
		t.Skip("no AVX2/FMA kernel in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b }
	for _, s := range []struct{ m, n, k int }{{4, 5, 3}, {6, 16, 1}, {12, 64, 64}, {13, 40, 300}, {31, 100, 7}, {64, 33, 513}, {64, 64, 70}, {4, 32, 10}, {36, 16, 18}} {
		for _, tA := range []bool{false, true} {
			for _, relu := range []bool{false, true} {
				ar, ac := s.m, s.k
				if tA {
					ar, ac = s.k, s.m
				}
				a, b, bias := randSlice(rng, ar*ac), randSlice(rng, s.k*s.n), randSlice(rng, s.n)
				if relu {
					for i := range a {
						if rng.IntN(50) == 0 {
							a[i] = special[rng.IntN(len(special))]
						}
					}
					bias[0] = float32(math.Copysign(0, -1))
				}
				var sc sgemmScratch
				want := make([]float32, s.m*s.n)
				fillRows(want, bias)
				sc.sgemm(tA, false, s.m, s.n, s.k, a, ac, b, s.n, 1, want, s.n)
				base := slices.Clone(want) // c for the product onto c below
				onto := slices.Clone(base)
				if relu {
					for i, v := range want {
						want[i] = max(v, 0)
					}
				}
				got := randSlice(rng, s.m*s.n) // every element is written
				sc.sgemmBias(tA, false, s.m, s.n, s.k, a, ac, b, s.n, 0, bias, relu, got, s.n)
				for i := range want {
					if !same(want[i], got[i]) {
						t.Fatalf("m=%d n=%d k=%d tA=%v relu=%v: c[%d] = %v with the bias in the kernel, %v from filled rows",
							s.m, s.n, s.k, tA, relu, i, got[i], want[i])
					}
				}
				if !relu {
					continue
				}
				// Onto c, beta 1, ReLU: the same as sgemm then max.
				sc.sgemm(tA, false, s.m, s.n, s.k, a, ac, b, s.n, 1, onto, s.n)
				got2 := slices.Clone(base)
				sc.sgemmBias(tA, false, s.m, s.n, s.k, a, ac, b, s.n, 1, nil, true, got2, s.n)
				for i := range onto {
					if w := max(onto[i], 0); !same(w, got2[i]) {
						t.Fatalf("m=%d n=%d k=%d tA=%v onto c: c[%d] = %v, want %v", s.m, s.n, s.k, tA, i, got2[i], w)
					}
				}
			}
		}
	}
}

// TestPackB checks B's packed panels against their definition,
// op(b)[p, j] at panel[(j/16)·kb·16 + p·16 + j%16] and zeros past n, for
// transposed and untransposed B, depths across the 16-row register
// transposes, partial panels, and (where AVX-512 runs) with and without
// it.
func TestPackB(t *testing.T) {
	if !haveSgemmKernel {
		t.Skip("B is packed for the assembly kernels alone; none in this build or on this CPU")
	}
	defer func(h bool) { haveSgemmZ = h }(haveSgemmZ)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, z := range []bool{false, haveSgemmZ} {
		haveSgemmZ = z
		for _, tB := range []bool{false, true} {
			for _, kb := range []int{1, 15, 16, 17, 33, 64, 100} {
				for _, n := range []int{7, 16, 20, 64} {
					p0 := 3
					k := p0 + kb + 2
					rows, cols := k, n
					if tB {
						rows, cols = n, k
					}
					ldb := cols + 5
					b := randSlice(rng, rows*ldb)
					panels := (n + sgemmNR - 1) / sgemmNR
					bp := make([]float32, panels*kb*sgemmNR)
					for i := range bp {
						bp[i] = float32(math.NaN())
					}
					packB(bp, tB, b, ldb, p0, kb, n)
					for j := range panels * sgemmNR {
						for p := range kb {
							want := float32(0)
							if j < n {
								if tB {
									want = b[j*ldb+p0+p]
								} else {
									want = b[(p0+p)*ldb+j]
								}
							}
							if got := bp[(j/sgemmNR)*kb*sgemmNR+p*sgemmNR+j%sgemmNR]; math.Float32bits(got) != math.Float32bits(want) {
								t.Fatalf("avx512=%v tB=%v kb=%d n=%d: op(b)[%d, %d] packed as %v, want %v", z, tB, kb, n, p, j, got, want)
							}
						}
					}
				}
			}
		}
	}
}
