package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSampleBetaMoments: sample means and variances match a/(a+b) and
// ab/((a+b)²(a+b+1)) within 4 standard errors, for shapes below and above
// one; same seed, same draws.
func TestSampleBetaMoments(t *testing.T) {
	for _, c := range [][2]float64{{0.5, 0.5}, {1.7, 1.7}, {2, 5}, {8, 1.2}} {
		a, b := c[0], c[1]
		rng := rand.New(rand.NewPCG(1, 2))
		const n = 20000
		var s, ss float64
		for i := 0; i < n; i++ {
			x := SampleBeta(rng, a, b)
			if !(x > 0 && x < 1) {
				t.Fatalf("Beta(%v,%v) sample %v outside (0,1)", a, b, x)
			}
			s += x
			ss += x * x
		}
		mean := s / n
		vr := ss/n - mean*mean
		wm := a / (a + b)
		wv := a * b / ((a + b) * (a + b) * (a + b + 1))
		if math.Abs(mean-wm) > 4*math.Sqrt(wv/n) {
			t.Errorf("Beta(%v,%v): mean %.4f, want %.4f", a, b, mean, wm)
		}
		if math.Abs(vr-wv) > 0.05*wv {
			t.Errorf("Beta(%v,%v): variance %.5f, want %.5f", a, b, vr, wv)
		}
	}
	r1, r2 := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100; i++ {
		if SampleBeta(r1, 0.7, 2) != SampleBeta(r2, 0.7, 2) {
			t.Fatal("same seed, different draws")
		}
	}
}

func TestArgmax(t *testing.T) {
	for _, c := range []struct {
		x    []float32
		want int
	}{{nil, 0}, {[]float32{3}, 0}, {[]float32{1, 5, 2}, 1}, {[]float32{4, 4, 1}, 0}, {[]float32{-2, -1, -1}, 1}} {
		if got := Argmax(c.x); got != c.want {
			t.Errorf("Argmax(%v) = %d, want %d", c.x, got, c.want)
		}
	}
}
