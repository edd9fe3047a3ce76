package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
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
