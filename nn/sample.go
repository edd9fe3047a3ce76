package nn

import (
	"math"
	"math/rand/v2"
)

// SampleGamma draws from Gamma(shape, 1) with Marsaglia and Tsang's method
// (2000); shape < 1 uses the boost Gamma(a) = Gamma(a+1)·U^(1/a). shape
// must be > 0.
func SampleGamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return SampleGamma(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// SampleBeta draws from Beta(a, b) as X/(X+Y) with X ~ Gamma(a), Y ~
// Gamma(b), clamped into [eps, 1-eps] with eps = 1e-6 so that its
// log-density stays finite in float32.
func SampleBeta(rng *rand.Rand, a, b float64) float64 {
	x := SampleGamma(rng, a)
	y := SampleGamma(rng, b)
	const eps = 1e-6
	if x+y == 0 {
		return 0.5
	}
	return min(1-eps, max(eps, x/(x+y)))
}

// Argmax returns the index of the largest element of x (the first on
// ties; 0 for an empty x): the mode of a categorical given its logits.
func Argmax[T Float](x []T) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
