package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// randCSR returns a row pointer and indices for rows rows over n source
// rows, with empty rows (every third) and repeated indices.
func randCSR(rng *rand.Rand, rows, n int) (ptr, idx []int) {
	ptr = make([]int, rows+1)
	for i := 0; i < rows; i++ {
		deg := 0
		if i%3 != 1 {
			deg = 1 + rng.IntN(4)
		}
		for range deg {
			idx = append(idx, rng.IntN(n))
		}
		if deg >= 2 {
			idx[len(idx)-1] = idx[len(idx)-2] // a repeated neighbour
		}
		ptr[i+1] = len(idx)
	}
	return ptr, idx
}

func TestSpMMGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for rep := 0; rep < 4; rep++ {
		rows, n, d := 2+rng.IntN(6), 1+rng.IntN(5), 1+rng.IntN(4)
		ptr, idx := randCSR(rng, rows, n)
		w := randn(rng, len(idx))
		for _, weighted := range []bool{false, true} {
			ww := w
			if !weighted {
				ww = nil
			}
			shape := []int{n, d}
			if rep%2 == 1 {
				shape = []int{n, 2, d} // rows below the first dimension
			}
			checkGrad(t, rng, gradCase{
				name: fmt.Sprintf("SpMM/%d/weighted=%v", rep, weighted),
				in:   []*Tensor[float64]{tn(randn(rng, shapeSize(shape)), shape...)},
				f: func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
					return tp.SpMM(ptr, idx, ww, in[0])
				},
			})
		}
	}
}

// TestSpMMMatchesGatherSegment checks SpMM against the unfused composition
// GatherRows → (scale) → SegmentSum it replaces.
func TestSpMMMatchesGatherSegment(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	rows, n, d := 9, 5, 3
	ptr, idx := randCSR(rng, rows, n)
	seg := make([]int, len(idx))
	for i := 0; i < rows; i++ {
		for e := ptr[i]; e < ptr[i+1]; e++ {
			seg[e] = i
		}
	}
	x := tn(randn(rng, n*d), n, d)
	tp := NewTape[float64]()
	got := tp.SpMM(ptr, idx, nil, x)
	want := tp.SegmentSum(tp.GatherRows(x, idx), seg, rows)
	mean := tp.SegmentMean(tp.GatherRows(x, idx), seg, rows)
	inv := make([]float64, len(idx))
	for i := 0; i < rows; i++ {
		for e := ptr[i]; e < ptr[i+1]; e++ {
			inv[e] = 1 / float64(ptr[i+1]-ptr[i])
		}
	}
	gotMean := tp.SpMM(ptr, idx, inv, x)
	for i := range want.Data {
		if math.Abs(got.Data[i]-want.Data[i]) > 1e-12 || math.Abs(gotMean.Data[i]-mean.Data[i]) > 1e-12 {
			t.Fatalf("element %d: SpMM %v, %v; gather+segment %v, %v", i, got.Data[i], gotMean.Data[i], want.Data[i], mean.Data[i])
		}
	}
	if got.Shape[0] != rows || got.Shape[1] != d {
		t.Fatalf("shape %v, want [%d %d]", got.Shape, rows, d)
	}
}

func TestSpMMPanics(t *testing.T) {
	x := Zeros[float64](3, 2)
	for name, f := range map[string]func(tp *Tape[float64]){
		"empty ptr":     func(tp *Tape[float64]) { tp.SpMM(nil, nil, nil, x) },
		"short ptr":     func(tp *Tape[float64]) { tp.SpMM([]int{0, 1}, []int{0, 1}, nil, x) },
		"decreasing":    func(tp *Tape[float64]) { tp.SpMM([]int{0, 2, 1, 2}, []int{0, 1}, nil, x) },
		"index range":   func(tp *Tape[float64]) { tp.SpMM([]int{0, 1}, []int{3}, nil, x) },
		"weight length": func(tp *Tape[float64]) { tp.SpMM([]int{0, 1}, []int{0}, []float64{1, 2}, x) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f(NewTape[float64]())
		}()
	}
}

func TestSpMMAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	ptr, idx := randCSR(rng, 50, 40)
	w := make([]float32, len(idx))
	x := NewParam[float32](40, 8)
	tp := NewTape[float32]()
	step := func() {
		tp.Reset()
		tp.Backward(tp.SumAll(tp.SpMM(ptr, idx, w, x)))
	}
	step()
	if a := testing.AllocsPerRun(20, step); a != 0 {
		t.Errorf("%v allocs per step, want 0", a)
	}
}

// TestSpMMSegmentMax checks the fused operation against the composition
// SegmentMax(SpMM(...)) it replaces, on graphs with empty segments and with
// tied messages (repeated edges): the same values bit for bit, and the
// same gradients, bit for bit in float64; in float32 the composition's
// backward adds with AVX fused multiply-adds where the fused operation
// rounds the product first, so gradients agree to a few ulps.
func TestSpMMSegmentMax(t *testing.T) {
	testSpMMSegmentMax[float64](t)
	testSpMMSegmentMax[float32](t)
}

func testSpMMSegmentMax[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for rep := 0; rep < 6; rep++ {
		rows, n, d, nseg := 3+rng.IntN(12), 1+rng.IntN(5), 1+rng.IntN(20), 1+rng.IntN(5)
		ptr, idx := randCSR(rng, rows, n)
		seg := make([]int, rows)
		for i := range seg {
			seg[i] = rng.IntN(nseg)
		}
		if rows >= 4 { // a tie: row 3 repeats row 0 in the same segment
			ptr, idx = appendRowCopy(ptr, idx, 0)
			seg = append(seg, seg[0])
		}
		var w []T
		if rep%2 == 1 {
			for range idx {
				w = append(w, T(rng.NormFloat64()))
			}
		}
		x := NewTensor(make([]T, n*d), n, d)
		for i := range x.Data {
			x.Data[i] = T(rng.NormFloat64())
		}
		r := make([]T, nseg*d)
		for i := range r {
			r[i] = T(rng.NormFloat64())
		}
		run := func(fused bool) (out, grad []T) {
			x.RequiresGrad, x.Grad = true, make([]T, len(x.Data))
			tp := NewTape[T]()
			var y *Tensor[T]
			if fused {
				y = tp.SpMMSegmentMax(ptr, idx, w, x, seg, nseg)
			} else {
				y = tp.SegmentMax(tp.SpMM(ptr, idx, w, x), seg, nseg)
			}
			tp.Backward(tp.SumAll(tp.Mul(y, NewTensor(r, nseg, d))))
			return slices.Clone(y.Data), slices.Clone(x.Grad)
		}
		wantOut, wantGrad := run(false)
		gotOut, gotGrad := run(true)
		if !slices.Equal(gotOut, wantOut) {
			t.Fatalf("rep %d: values %v, composition %v", rep, gotOut, wantOut)
		}
		tol := 0.0
		if unsafe.Sizeof(T(0)) == 4 {
			tol = 1e-6
		}
		for i := range gotGrad {
			if d := math.Abs(float64(gotGrad[i] - wantGrad[i])); d > tol*math.Abs(float64(wantGrad[i])) {
				t.Fatalf("rep %d: gradient %v, composition %v", rep, gotGrad, wantGrad)
			}
		}
	}
}

// appendRowCopy appends a copy of row r of a CSR matrix as a new last row.
func appendRowCopy(ptr, idx []int, r int) ([]int, []int) {
	idx = append(idx, idx[ptr[r]:ptr[r+1]]...)
	return append(ptr, len(idx)), idx
}

func TestSpMMSegmentMaxGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for rep := 0; rep < 4; rep++ {
		rows, n, d, nseg := 2+rng.IntN(8), 1+rng.IntN(5), 1+rng.IntN(4), 1+rng.IntN(4)
		ptr, idx := randCSR(rng, rows, n)
		seg := make([]int, rows)
		for i := range seg {
			seg[i] = rng.IntN(nseg+1) % nseg
		}
		w := randn(rng, len(idx))
		checkGrad(t, rng, gradCase{
			name: fmt.Sprintf("SpMMSegmentMax/%d", rep),
			in:   []*Tensor[float64]{tn(randn(rng, n*d), n, d)},
			f: func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
				return tp.SpMMSegmentMax(ptr, idx, w, in[0], seg, nseg)
			},
		})
	}
}

// TestSpMMNoSourceRows: a product over a source with no rows (a relation
// from a node type the graph lacks, such as GPUs on a CPU-only cluster)
// gives zero rows and a backward pass that touches nothing, at widths the
// AVX2 kernels take and at others.
func TestSpMMNoSourceRows(t *testing.T) {
	for _, d := range []int{5, 64} {
		x := NewParam[float32](0, d)
		tp := NewTape[float32]()
		y := tp.SpMM([]int{0, 0, 0, 0}, nil, nil, x)
		if len(y.Data) != 3*d {
			t.Fatalf("d=%d: %d values, want %d", d, len(y.Data), 3*d)
		}
		for i, v := range y.Data {
			if v != 0 {
				t.Fatalf("d=%d: y[%d] = %v, want 0", d, i, v)
			}
		}
		tp.Backward(tp.SumAll(y))
	}
}

// edgeCase is a random input of EdgeMax: edges with repeated sources and
// repeated edges (ties), destinations without edges, and, when sorted,
// destinations' runs as a CSR graph gives them.
type edgeCase[T Float] struct {
	n, c, nf, nseg int
	src, dst       []int
	x, w           []T
	feat           []T
}

func newEdgeCase[T Float](rng *rand.Rand, n, c, nf, nseg, edges int, sorted bool) edgeCase[T] {
	ec := edgeCase[T]{n: n, c: c, nf: nf, nseg: nseg}
	for range edges {
		ec.src = append(ec.src, rng.IntN(n))
		ec.dst = append(ec.dst, rng.IntN(max(nseg-1, 1))) // the last destination has no edge
	}
	if edges >= 2 { // a tie: the last edge repeats the first
		ec.src[edges-1], ec.dst[edges-1] = ec.src[0], ec.dst[0]
	}
	if sorted {
		slices.Sort(ec.dst)
	}
	rnd := func(k int) []T {
		s := make([]T, k)
		for i := range s {
			s[i] = T(rng.NormFloat64())
		}
		return s
	}
	ec.x, ec.w, ec.feat = rnd(n*c), rnd(nf*c), rnd(edges*nf)
	if edges >= 2 && nf > 0 {
		copy(ec.feat[(edges-1)*nf:], ec.feat[:nf])
	}
	return ec
}

// rows returns the sparse rows [x_src 1; w_f feat_f] over the stacked rows
// [x; w] whose SpMMSegmentMax EdgeMax computes.
func (ec edgeCase[T]) rows() (ptr, idx []int, wt []T) {
	ptr = []int{0}
	for e, s := range ec.src {
		idx, wt = append(idx, s), append(wt, 1)
		for f := 0; f < ec.nf; f++ {
			idx, wt = append(idx, ec.n+f), append(wt, ec.feat[e*ec.nf+f])
		}
		ptr = append(ptr, len(idx))
	}
	return ptr, idx, wt
}

// run returns EdgeMax's values, argmax and the gradients of x and w for
// sum(out ⊙ r), or, with stacked, those of SpMMSegmentMax over the
// stacked rows.
func (ec edgeCase[T]) run(stacked bool, r []T) (out []T, arg []int32, gx, gw []T) {
	x, w := NewTensor(slices.Clone(ec.x), ec.n, ec.c), NewTensor(slices.Clone(ec.w), ec.nf, ec.c)
	for _, p := range []*Tensor[T]{x, w} {
		p.RequiresGrad, p.Grad = true, make([]T, len(p.Data))
	}
	tp := NewTape[T]()
	var y *Tensor[T]
	if stacked {
		ptr, idx, wt := ec.rows()
		y = tp.SpMMSegmentMax(ptr, idx, wt, tp.Concat(x, w, 0), ec.dst, ec.nseg)
	} else {
		var feat *Tensor[T]
		if ec.nf > 0 {
			feat = NewTensor(ec.feat, len(ec.src), ec.nf)
		}
		y = tp.EdgeMax(x, ec.src, feat, w, ec.dst, ec.nseg)
	}
	for i := len(tp.nodes) - 1; i >= 0; i-- {
		if tp.nodes[i].out == y {
			arg = slices.Clone(tp.nodes[i].arg)
		}
	}
	tp.Backward(tp.SumAll(tp.Mul(y, NewTensor(r, ec.nseg, ec.c))))
	return slices.Clone(y.Data), arg, x.Grad, w.Grad
}

// TestEdgeMax checks EdgeMax against SpMMSegmentMax over the stacked rows
// [x; w], the operation it replaces: the same values, argmax and
// gradients, bit for bit, with zero to four features, in both float types
// (in float32 at widths the AVX-512 kernels take and at others).
func TestEdgeMax(t *testing.T) {
	testEdgeMax[float64](t)
	testEdgeMax[float32](t)
}

func testEdgeMax[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for rep := 0; rep < 20; rep++ {
		c := []int{1, 5, 64, 128}[rep%4]
		ec := newEdgeCase[T](rng, 1+rng.IntN(6), c, rep%5, 2+rng.IntN(5), rng.IntN(20), rep%3 != 0)
		r := make([]T, ec.nseg*c)
		for i := range r {
			r[i] = T(rng.NormFloat64())
		}
		wantOut, wantArg, wantGX, wantGW := ec.run(true, r)
		gotOut, gotArg, gotGX, gotGW := ec.run(false, r)
		name := fmt.Sprintf("rep %d (%d edges, width %d, %d features)", rep, len(ec.src), c, ec.nf)
		if !slices.Equal(gotOut, wantOut) {
			t.Fatalf("%s: values %v, SpMMSegmentMax %v", name, gotOut, wantOut)
		}
		if !slices.Equal(gotArg, wantArg) {
			t.Fatalf("%s: argmax %v, SpMMSegmentMax %v", name, gotArg, wantArg)
		}
		if !slices.Equal(gotGX, wantGX) || !slices.Equal(gotGW, wantGW) {
			t.Fatalf("%s: gradients %v %v, SpMMSegmentMax %v %v", name, gotGX, gotGW, wantGX, wantGW)
		}
	}
}

func TestEdgeMaxGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for rep := 0; rep < 6; rep++ {
		ec := newEdgeCase[float64](rng, 1+rng.IntN(5), 1+rng.IntN(4), rep%4, 2+rng.IntN(4), 1+rng.IntN(10), rep%2 == 0)
		var feat *Tensor[float64]
		if ec.nf > 0 {
			feat = tn(ec.feat, len(ec.src), ec.nf)
		}
		checkGrad(t, rng, gradCase{
			name: fmt.Sprintf("EdgeMax/%d", rep),
			in:   []*Tensor[float64]{tn(ec.x, ec.n, ec.c), tn(ec.w, ec.nf, ec.c)},
			f: func(tp *Tape[float64], in []*Tensor[float64]) *Tensor[float64] {
				return tp.EdgeMax(in[0], ec.src, feat, in[1], ec.dst, ec.nseg)
			},
		})
	}
}

// TestEdgeMaxRejects: inputs that do not fit panic with a message naming
// what is wrong.
func TestEdgeMaxRejects(t *testing.T) {
	x, w := NewTensor(make([]float32, 3*4), 3, 4), NewTensor(make([]float32, 2*4), 2, 4)
	feat := NewTensor(make([]float32, 2*2), 2, 2)
	grad := NewParam[float32](2, 2)
	for _, c := range []struct {
		name, want string
		f          func(tp *Tape[float32])
	}{
		{"source out of range", "source 3 at position 1", func(tp *Tape[float32]) { tp.EdgeMax(x, []int{0, 3}, feat, w, []int{0, 0}, 2) }},
		{"negative destination", "destination -1 at position 0", func(tp *Tape[float32]) { tp.EdgeMax(x, []int{0, 1}, feat, w, []int{-1, 0}, 2) }},
		{"destination out of range", "destination 2 at position 1", func(tp *Tape[float32]) { tp.EdgeMax(x, []int{0, 1}, feat, w, []int{0, 2}, 2) }},
		{"lengths", "1 destinations for 2 sources", func(tp *Tape[float32]) { tp.EdgeMax(x, []int{0, 1}, feat, w, []int{0}, 2) }},
		{"feature shape", "features [2 2] for 1 edges", func(tp *Tape[float32]) { tp.EdgeMax(x, []int{0}, feat, w, []int{0}, 2) }},
		{"no features", "features [] for 2 edges", func(tp *Tape[float32]) { tp.EdgeMax(x, []int{0, 1}, nil, w, []int{0, 0}, 2) }},
		{"widths", "differ in width", func(tp *Tape[float32]) {
			tp.EdgeMax(x, []int{0, 1}, feat, NewTensor(make([]float32, 6), 2, 3), []int{0, 0}, 2)
		}},
		{"feature gradient", "edge features take no gradient", func(tp *Tape[float32]) { tp.EdgeMax(x, []int{0, 1}, grad, w, []int{0, 0}, 2) }},
	} {
		msg := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			c.f(NewTape[float32]())
			return ""
		}()
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: panic %q, want it to mention %q", c.name, msg, c.want)
		}
	}
}

// TestSegmentMaxRoutes checks SegmentMax's gradient against its
// definition: each output's gradient goes to the first row of its segment
// whose value equals the maximum, none for a NaN maximum or an empty
// segment; rows hold ties, ±0, ±∞ and NaN, at widths the AVX kernels take
// and others, in both float types.
func TestSegmentMaxRoutes(t *testing.T) {
	testSegmentMaxRoutes[float32](t)
	testSegmentMaxRoutes[float64](t)
}

func testSegmentMaxRoutes[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	special := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1, 1}
	for rep := 0; rep < 30; rep++ {
		rows, d, nseg := 1+rng.IntN(40), []int{1, 7, 16, 64, 70}[rep%5], 1+rng.IntN(6)
		x := NewParam[T](rows, d)
		for i := range x.Data {
			x.Data[i] = T(special[rng.IntN(len(special))])
			if rng.IntN(3) == 0 {
				x.Data[i] = T(rng.IntN(3))
			}
		}
		seg := make([]int, rows)
		for i := range seg {
			seg[i] = rng.IntN(nseg)
		}
		g := make([]T, nseg*d)
		for i := range g {
			g[i] = T(1 + rng.IntN(7))
		}
		tp := NewTape[T]()
		y := tp.SegmentMax(x, seg, nseg)
		tp.Backward(tp.SumAll(tp.Mul(y, NewTensor(g, nseg, d))))
		want := make([]T, rows*d)
		for s := 0; s < nseg; s++ {
			for j := 0; j < d; j++ {
				o := y.Data[s*d+j]
				for i := range seg {
					if seg[i] == s && x.Data[i*d+j] == o {
						want[i*d+j] += g[s*d+j]
						break
					}
				}
			}
		}
		if !slices.Equal(x.Grad, want) {
			t.Fatalf("rep %d (%d rows, width %d): gradient %v, want %v", rep, rows, d, x.Grad, want)
		}
	}
}
