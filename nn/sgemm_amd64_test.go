//go:build amd64 && !purego

package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// TestSpMMSegmentMaxLanes: SpMMSegmentMax's backward pass gives the same
// bits with the AVX2 gradient routing (masks of the argmax, masked
// multiply-adds) as with the scalar one, after the same forward pass, on
// widths with and without a tail, weights, ties, repeated neighbours,
// empty segments, and messages that are NaN, ±0 or ±∞.
func TestSpMMSegmentMaxLanes(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2/FMA on this CPU")
	}
	defer func(h bool) { haveAVX2 = h }(haveAVX2)
	rng := rand.New(rand.NewPCG(21, 22))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, d := range []int{7, 8, 20, 64, 70} {
		for rep := 0; rep < 8; rep++ {
			rows, n, nseg := 5+rng.IntN(30), 1+rng.IntN(8), 1+rng.IntN(6)
			ptr, idx := randCSR(rng, rows, n)
			seg := make([]int, rows)
			for i := range seg {
				seg[i] = rng.IntN(nseg)
			}
			ptr, idx = appendRowCopy(ptr, idx, 0) // a tie
			seg = append(seg, seg[0])
			var w []float32
			if rep%2 == 1 {
				for range idx {
					w = append(w, float32(rng.NormFloat64()))
				}
			}
			xs := make([]float32, n*d)
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
				if rep >= 4 && rng.IntN(10) == 0 {
					xs[i] = special[rng.IntN(len(special))]
				}
			}
			r := make([]float32, nseg*d)
			for i := range r {
				r[i] = float32(rng.NormFloat64())
			}
			run := func(avx bool) (out, grad []float32) {
				haveAVX2 = true // the same forward pass for both
				x := NewTensor(slices.Clone(xs), n, d)
				x.RequiresGrad, x.Grad = true, make([]float32, len(xs))
				tp := NewTape[float32]()
				y := tp.SpMMSegmentMax(ptr, idx, w, x, seg, nseg)
				loss := tp.SumAll(tp.Mul(y, NewTensor(r, nseg, d)))
				haveAVX2 = avx
				tp.Backward(loss)
				return slices.Clone(y.Data), slices.Clone(x.Grad)
			}
			wantOut, wantGrad := run(false)
			gotOut, gotGrad := run(true)
			same := func(a, b []float32) bool {
				for i := range a {
					if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
						return false
					}
				}
				return true
			}
			if !same(gotOut, wantOut) {
				t.Fatalf("d=%d rep %d: values %v, scalar %v", d, rep, gotOut, wantOut)
			}
			if !same(gotGrad, wantGrad) {
				t.Fatalf("d=%d rep %d: gradient %v, scalar %v", d, rep, gotGrad, wantGrad)
			}
		}
	}
}

// TestSpMMRowKernels: SpMM's forward and backward passes with the
// register-blocked kernels (spmmRowAVX, spmmRangeZ, spmmScatterAVX,
// spmmScatterRowsZ) give the bits of
// the per-edge axpy they replace, on widths below, at and between the
// kernels' 8 and 64 columns, with and without weights, repeated and
// absent neighbours, and values that are NaN, ±0 or ±∞.
func TestSpMMRowKernels(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2/FMA on this CPU")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	same := func(a, b []float32) bool {
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
				return false
			}
		}
		return true
	}
	for _, d := range []int{3, 8, 13, 64, 72, 128, 136, 200} {
		for rep := 0; rep < 8; rep++ {
			rows, n := 1+rng.IntN(30), 1+rng.IntN(8)
			ptr, idx := randCSR(rng, rows, n)
			var w []float32
			if rep%2 == 1 {
				w = randf32(rng, len(idx))
			}
			xs := randf32(rng, n*d)
			gs := randf32(rng, rows*d)
			if rep >= 4 {
				for i := range xs {
					if rng.IntN(8) == 0 {
						xs[i] = special[rng.IntN(len(special))]
					}
				}
				for i := range gs {
					if rng.IntN(8) == 0 {
						gs[i] = special[rng.IntN(len(special))]
					}
				}
			}
			// The reference: one axpy per edge, as before the kernels.
			wantOut := make([]float32, rows*d)
			wantGrad := make([]float32, n*d)
			for i := 0; i < rows; i++ {
				for e := ptr[i]; e < ptr[i+1]; e++ {
					a := float32(1)
					if w != nil {
						a = w[e]
					}
					axpy(wantOut[i*d:(i+1)*d], a, xs[idx[e]*d:(idx[e]+1)*d])
					axpy(wantGrad[idx[e]*d:(idx[e]+1)*d], a, gs[i*d:(i+1)*d])
				}
			}
			x := NewParam[float32](n, d)
			copy(x.Data, xs)
			tp := NewTape[float32]()
			y := tp.SpMM(ptr, idx, w, x)
			tp.Backward(tp.SumAll(tp.Mul(y, NewTensor(gs, rows, d))))
			if !same(y.Data, wantOut) {
				t.Fatalf("d=%d rep %d: values %v, per-edge axpy %v", d, rep, y.Data, wantOut)
			}
			if !same(x.Grad, wantGrad) {
				t.Fatalf("d=%d rep %d: gradient %v, per-edge axpy %v", d, rep, x.Grad, wantGrad)
			}
		}
	}
}

// TestSgemmZ: products with the AVX-512 kernel give the bits of the AVX2
// kernel alone, on every transpose case, beta 0 and 1, depths across the
// 256-deep blocks, and widths with and without whole pairs of panels.
func TestSgemmZ(t *testing.T) {
	if !haveSgemmZ {
		t.Skip("no AVX-512 on this CPU")
	}
	defer func(h bool) { haveSgemmZ = h }(haveSgemmZ)
	rng := rand.New(rand.NewPCG(41, 42))
	for _, s := range []struct{ m, n, k int }{{6, 32, 1}, {12, 64, 64}, {13, 48, 300}, {31, 100, 7}, {64, 33, 513}, {7, 16, 20}, {13, 64, 300}, {29, 96, 600}, {5, 32, 40}, {14400, 16, 18}, {37, 16, 300}, {25, 48, 70}, {64, 64, 600}, {4, 96, 30}, {16, 64, 9}} {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, beta := range []float32{0, 1} {
					ar, ac := s.m, s.k
					if tA {
						ar, ac = s.k, s.m
					}
					br, bc := s.k, s.n
					if tB {
						br, bc = s.n, s.k
					}
					lda, ldb, ldc := ac+1, bc+2, s.n+3
					a, b, c0 := randSlice(rng, ar*lda), randSlice(rng, br*ldb), randSlice(rng, s.m*ldc)
					run := func(z bool) []float32 {
						haveSgemmZ = z
						c := slices.Clone(c0)
						var sc sgemmScratch
						sc.sgemm(tA, tB, s.m, s.n, s.k, a, lda, b, ldb, beta, c, ldc)
						return c
					}
					want, got := run(false), run(true)
					for i := range want {
						if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
							t.Fatalf("m=%d n=%d k=%d tA=%v tB=%v beta=%v: c[%d] = %v with AVX-512, %v without",
								s.m, s.n, s.k, tA, tB, beta, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestAddLanes: addVec and addPair give the bits of their scalar loops,
// in place and not, on lengths below, at and between the kernels' 8 and
// 32 lanes, with NaN, ±0 and ±∞ among the values.
func TestAddLanes(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2/FMA on this CPU")
	}
	defer func(h bool) { haveAVX2 = h }(haveAVX2)
	rng := rand.New(rand.NewPCG(51, 52))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	vec := func(n int) []float32 {
		v := randf32(rng, n)
		for i := range v {
			if rng.IntN(6) == 0 {
				v[i] = special[rng.IntN(len(special))]
			}
		}
		return v
	}
	same := func(a, b []float32) bool {
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
				return false
			}
		}
		return true
	}
	for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 64, 77, 200} {
		a, b, c := vec(n), vec(n), vec(n)
		run := func(avx bool) (sum, inPlace, pair []float32) {
			haveAVX2 = avx
			sum = make([]float32, n)
			addVec(sum, a, b)
			inPlace = slices.Clone(a)
			addTo(inPlace, b)
			pair = slices.Clone(a)
			addPair(pair, b, c)
			return
		}
		ws, wi, wp := run(false)
		gs, gi, gp := run(true)
		if !same(gs, ws) || !same(gi, wi) || !same(gp, wp) {
			t.Fatalf("n=%d: AVX %v %v %v, scalar %v %v %v", n, gs, gi, gp, ws, wi, wp)
		}
		for i := range ws {
			if want := a[i] + b[i]; !same(ws[i:i+1], []float32{want}) {
				t.Fatalf("n=%d: sum[%d] = %v, want %v", n, i, ws[i], want)
			}
		}
	}
}

// TestSpMMMaxRunZ: SpMMSegmentMax's fused AVX-512 path (spmmMaxArgZ: runs
// of rows in one segment, messages kept in registers) gives the maximum,
// the argmax and the gradient bits of the row-by-row path (each message
// stored, then maxArgZ/maxArgAVX or maxAVX), on 64-column multiples, with
// weights or none, segments sorted (a graph layer's) or not, runs across
// the 256-row check blocks, empty rows and segments, ties between distinct
// source rows, NaN, ±0 and ±∞, and with and without a gradient (no argmax).
func TestSpMMMaxRunZ(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	defer func(h bool) { haveAVX512 = h }(haveAVX512)
	rng := rand.New(rand.NewPCG(23, 24))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, d := range []int{64, 128, 192} {
		for rep := 0; rep < 16; rep++ {
			rows, n, nseg := 300+rng.IntN(400), 2+rng.IntN(30), 1+rng.IntN(80)
			ptr, idx := randCSR(rng, rows, n)
			seg := make([]int, rows)
			for i := range seg {
				seg[i] = rng.IntN(nseg)
			}
			if rep%4 < 2 {
				slices.Sort(seg) // destinations' runs, as a CSR graph gives
			}
			var w []float32
			if rep%2 == 1 {
				for range idx {
					w = append(w, float32(rng.NormFloat64()))
				}
			}
			xs := make([]float32, n*d)
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
				if rep >= 8 && rng.IntN(10) == 0 {
					xs[i] = special[rng.IntN(len(special))]
				}
			}
			copy(xs[d:2*d], xs[:d]) // rows 0 and 1 equal: ties from distinct sources
			r := make([]float32, nseg*d)
			for i := range r {
				r[i] = float32(rng.NormFloat64())
			}
			run := func(fused, grad bool) (out, g []float32, arg []int32) {
				haveAVX512 = fused
				x := NewTensor(slices.Clone(xs), n, d)
				x.RequiresGrad, x.Grad = grad, make([]float32, len(xs))
				tp := NewTape[float32]()
				y := tp.SpMMSegmentMax(ptr, idx, w, x, seg, nseg)
				if grad {
					arg = slices.Clone(tp.nodes[len(tp.nodes)-1].arg)
				}
				if grad {
					tp.Backward(tp.SumAll(tp.Mul(y, NewTensor(r, nseg, d))))
				}
				return slices.Clone(y.Data), slices.Clone(x.Grad), arg
			}
			for _, grad := range []bool{true, false} {
				wantOut, wantGrad, wantArg := run(false, grad)
				gotOut, gotGrad, gotArg := run(true, grad)
				if !sameBits(gotOut, wantOut) {
					t.Fatalf("d=%d rep %d grad %v: values differ from the row-by-row path", d, rep, grad)
				}
				if !slices.Equal(gotArg, wantArg) {
					t.Fatalf("d=%d rep %d grad %v: argmax differs from the row-by-row path", d, rep, grad)
				}
				if !sameBits(gotGrad, wantGrad) {
					t.Fatalf("d=%d rep %d grad %v: gradient differs from the row-by-row path", d, rep, grad)
				}
			}
		}
	}
}

// sameBits reports whether a and b hold the same float32 bits, any NaN
// matching any NaN.
func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}

// TestColSumZ: a bias's gradient summed by colSumZ has the bits of one
// addTo per row, on widths of 16-column multiples with and without a
// 64-column block, any number of rows, and NaN, ±0 and ±∞ among the values.
func TestColSumZ(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	defer func(h bool) { haveAVX512 = h }(haveAVX512)
	rng := rand.New(rand.NewPCG(41, 42))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, d := range []int{16, 48, 64, 80, 128, 144} {
		for _, rows := range []int{0, 1, 2, 7, 300} {
			g := randf32(rng, rows*d)
			for i := range g {
				if rows < 300 && rng.IntN(8) == 0 {
					g[i] = special[rng.IntN(len(special))]
				}
			}
			start := randf32(rng, d)
			want, got := slices.Clone(start), slices.Clone(start)
			haveAVX512 = false
			addRows(want, g)
			haveAVX512 = true
			addRows(got, g)
			if !sameBits(got, want) {
				t.Fatalf("d=%d rows=%d: %v, per-row adds %v", d, rows, got, want)
			}
		}
	}
}

// TestCheckRowsZ: checkRows's eight-lane tests accept exactly the sparse
// matrices its loops accept, and a rejected one panics with the loops'
// message: valid matrices of up to 700 rows, and each with one entry
// corrupted (an index at, beyond or below the row range, a row pointer
// that decreases, or one beyond the indices), anywhere in it.
func TestCheckRowsZ(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	defer func(h bool) { haveAVX512 = h }(haveAVX512)
	rng := rand.New(rand.NewPCG(51, 52))
	check := func(z bool, ptr, idx []int, nrow int) (msg string) {
		haveAVX512 = z
		defer func() {
			if r := recover(); r != nil {
				msg = fmt.Sprint(r)
			}
		}()
		for i := 0; i+1 < len(ptr); i += csrChunk {
			checkRows("op", ptr, idx, i, min(i+csrChunk, len(ptr)-1), nrow)
		}
		return ""
	}
	for rep := 0; rep < 400; rep++ {
		rows, nrow := 1+rng.IntN(700), 1+rng.IntN(50)
		ptr, idx := randCSR(rng, rows, nrow)
		corrupt := "none"
		if rep%5 != 0 && len(idx) > 0 {
			switch rep % 4 {
			case 0:
				idx[max(0, len(idx)-1-rng.IntN(min(len(idx), 2+rep%16)))] = nrow + rng.IntN(3) // often in a tail
				corrupt = "index beyond"
			case 1:
				idx[rng.IntN(len(idx))] = -1 - rng.IntN(3)
				corrupt = "negative index"
			case 2:
				i := 1 + rng.IntN(rows)
				if rng.IntN(2) == 0 { // among the last rows: a block's tail
					i = max(1, rows-rng.IntN(8))
				}
				ptr[i] = ptr[i-1] - 1 - rng.IntN(2)
				corrupt = "decreasing pointer"
			case 3:
				ptr[1+rng.IntN(rows)] = len(idx) + 1 + rng.IntN(5)
				corrupt = "pointer beyond"
			}
		}
		want, got := check(false, ptr, idx, nrow), check(true, ptr, idx, nrow)
		if got != want {
			t.Fatalf("rep %d (%s): eight-lane check %q, loops %q", rep, corrupt, got, want)
		}
		if corrupt != "none" && want == "" {
			t.Fatalf("rep %d (%s): accepted", rep, corrupt)
		}
	}
}

// TestEdgeMaxZ checks EdgeMax's AVX-512 kernels (edgeMaxZ, edgeRouteZ)
// against SpMMSegmentMax's over the stacked rows, with NaN, ±0 and ±∞
// among the rows, weights and features: the same bits (any NaN for a
// NaN), argmax and gradients; and the same without AVX-512 (the Go loops
// of both).
func TestEdgeMaxZ(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	defer func(h bool) { haveAVX512 = h }(haveAVX512)
	rng := rand.New(rand.NewPCG(35, 36))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, c := range []int{64, 128, 192} {
		for rep := 0; rep < 16; rep++ {
			ec := newEdgeCase[float32](rng, 2+rng.IntN(30), c, rep%4, 1+rng.IntN(80), 300+rng.IntN(400), rep%8 < 6)
			if rep >= 8 {
				for _, s := range [][]float32{ec.x, ec.w, ec.feat} {
					for i := range s {
						if rng.IntN(10) == 0 {
							s[i] = special[rng.IntN(len(special))]
						}
					}
				}
			}
			copy(ec.x[c:2*c], ec.x[:c]) // rows 0 and 1 equal: ties from distinct sources
			r := make([]float32, ec.nseg*c)
			for i := range r {
				r[i] = float32(rng.NormFloat64())
			}
			for _, z := range []bool{true, false} {
				haveAVX512 = z
				wantOut, wantArg, wantGX, wantGW := ec.run(true, r)
				gotOut, gotArg, gotGX, gotGW := ec.run(false, r)
				name := fmt.Sprintf("c=%d rep %d (%d features) AVX-512 %v", c, rep, ec.nf, z)
				if !sameBits(gotOut, wantOut) {
					t.Fatalf("%s: values differ from SpMMSegmentMax's", name)
				}
				if !slices.Equal(gotArg, wantArg) {
					t.Fatalf("%s: argmax differs from SpMMSegmentMax's", name)
				}
				if !sameBits(gotGX, wantGX) || !sameBits(gotGW, wantGW) {
					t.Fatalf("%s: gradients differ from SpMMSegmentMax's", name)
				}
			}
		}
	}
}

// TestAdamZ: Adam and AdamW steps with the AVX-512 kernel give the bits
// of the scalar loop, over several steps, on sizes with and without a
// tail of fewer than 16, with NaN, ±0, ±∞, subnormal and huge values among
// the parameters and gradients.
func TestAdamZ(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	defer func(h bool) { haveAVX512 = h }(haveAVX512)
	rng := rand.New(rand.NewPCG(51, 52))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.SmallestNonzeroFloat32, -3e-41, math.MaxFloat32, -1e30, 1e-20}
	for _, wd := range []float64{0, 0.01} {
		for _, size := range []int{1, 15, 16, 17, 64, 333} {
			data := make([]float32, size)
			grads := make([][]float32, 4)
			for i := range data {
				data[i] = float32(rng.NormFloat64())
			}
			for s := range grads {
				grads[s] = make([]float32, size)
				for i := range grads[s] {
					grads[s][i] = float32(rng.NormFloat64()) * float32(math.Pow(10, float64(rng.IntN(9)-4)))
					if rng.IntN(12) == 0 {
						grads[s][i] = special[rng.IntN(len(special))]
					}
				}
			}
			if size > 3 {
				data[3] = special[rng.IntN(len(special))]
			}
			run := func(z bool) (d, m, v []float32) {
				haveAVX512 = z
				ps := NewParams[float32]()
				p := ps.Add("p", NewParam[float32](size))
				copy(p.Data, data)
				o := NewAdamW(ps, 3e-3, wd)
				for _, g := range grads {
					copy(p.Grad, g)
					o.Step()
				}
				ms, vs, _ := o.State()
				return p.Data, ms[0], vs[0]
			}
			wd0, wm, wv := run(false)
			gd, gm, gv := run(true)
			for _, c := range []struct {
				name      string
				want, got []float32
			}{{"parameter", wd0, gd}, {"first moment", wm, gm}, {"second moment", wv, gv}} {
				for i := range c.want {
					w, g := c.want[i], c.got[i]
					if math.Float32bits(w) != math.Float32bits(g) && !(w != w && g != g) {
						t.Fatalf("weight decay %v, size %d: %s[%d] = %v with AVX-512, %v without", wd, size, c.name, i, g, w)
					}
				}
			}
		}
	}
}

// TestTanhZ: tanhZ gives float32(math.Tanh(float64(x))) bit for bit. With
// -short (or the race detector) on every 251st float32 bit pattern, the
// values around the branch points (0.625, ½·log(2¹²⁷)), the exponent steps
// of math.Exp and special values; otherwise on all 2³² patterns.
func TestTanhZ(t *testing.T) {
	if !haveTanhZ {
		t.Skip("no AVX-512 on this CPU, or a build that fuses multiply-adds")
	}
	step := uint64(251)
	if !testing.Short() && !raceOn {
		step = 1
	}
	var mu sync.Mutex
	var bad []string
	check := func(xs []float32) {
		y := make([]float32, len(xs))
		tanhZ(&y[0], &xs[0], len(xs), &tanhConsts[0])
		for i, x := range xs {
			want := float32(math.Tanh(float64(x)))
			if math.Float32bits(y[i]) != math.Float32bits(want) && !(y[i] != y[i] && want != want) {
				mu.Lock()
				if len(bad) < 10 {
					bad = append(bad, fmt.Sprintf("tanh(%v) (bits %#x) = %v, math.Tanh %v", x, math.Float32bits(x), y[i], want))
				}
				mu.Unlock()
			}
		}
	}
	// The neighbourhoods of the branch points and of math.Exp's exponent
	// steps (2|x|·log2(e) at half-integers), 4096 patterns either side.
	near := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1e-30, -20}
	centres := []float64{tanhConsts[6], tanhConsts[7]} // 0.625, ½·log(2¹²⁷)
	for k := 1; k <= 128; k++ {
		centres = append(centres, (float64(k)-0.5)*math.Ln2/2)
	}
	for _, c := range centres {
		b := math.Float32bits(float32(c))
		for d := uint32(0); d < 8192; d++ {
			near = append(near, math.Float32frombits(b-4096+d), -math.Float32frombits(b-4096+d))
		}
	}
	check(near[:len(near)&^7])
	const chunk = 1 << 16
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			xs := make([]float32, 0, chunk)
			for b := uint64(w) * step; b < 1<<32; b += uint64(workers) * step {
				xs = append(xs, math.Float32frombits(uint32(b)))
				if len(xs) == chunk {
					check(xs)
					xs = xs[:0]
				}
			}
			if len(xs) >= 8 {
				check(xs[:len(xs)&^7])
			}
		}(w)
	}
	wg.Wait()
	for _, b := range bad {
		t.Error(b)
	}
}

// BenchmarkFMAPeak measures the core's float32 arithmetic ceiling: FMAs
// from registers to registers, 384 FLOP a round, no memory access. No
// product can run faster, so GFLOP/s here, against a product's, is that
// product's efficiency, and FLOPs over it the least time a model's
// products can take on one core (docs/PERFORMANCE.md).
func BenchmarkFMAPeak(b *testing.B) {
	if !haveAVX512 {
		b.Skip("no AVX-512")
	}
	const rounds = 1 << 16
	for i := 0; i < b.N; i++ {
		fmaPeakZ(rounds)
	}
	b.ReportMetric(float64(b.N)*rounds*12*16*2/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
