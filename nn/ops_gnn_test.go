package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
