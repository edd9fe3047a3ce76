package nn

import (
	"math"
	"testing"
)

// TestSoftplusValues: exact values, and no overflow far from zero.
func TestSoftplusValues(t *testing.T) {
	tp := NewTape[float64]()
	y := tp.Softplus(NewTensor([]float64{0, 1, -1, 800, -800}, 5))
	want := []float64{math.Ln2, math.Log1p(math.E), math.Log1p(1 / math.E), 800, 0}
	for i, w := range want {
		if math.Abs(y.Data[i]-w) > 1e-15*max(1, math.Abs(w)) {
			t.Fatalf("softplus[%d] = %v, want %v", i, y.Data[i], w)
		}
	}
}

// TestResize: a tensor resized within its capacity keeps its memory and
// allocates nothing; beyond it, it grows.
func TestResize(t *testing.T) {
	x := Zeros[float32](4, 8)
	p := &x.Data[0]
	if a := testing.AllocsPerRun(10, func() { x.Resize(3, 5) }); a != 0 || &x.Data[0] != p || len(x.Data) != 15 || x.Shape[0] != 3 || x.Shape[1] != 5 {
		t.Fatalf("resize within capacity: %v allocs, shape %v, len %d", a, x.Shape, len(x.Data))
	}
	x.Resize(10, 10)
	if len(x.Data) != 100 || x.Size() != 100 {
		t.Fatalf("grown: len %d", len(x.Data))
	}
}
