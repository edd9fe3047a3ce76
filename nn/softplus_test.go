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
