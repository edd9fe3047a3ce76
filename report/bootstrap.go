package report

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// DefaultResamples is the number of bootstrap resamples of tegrl ab.
const DefaultResamples = 10000

// bootstrapStream is the PCG stream of the bootstrap's generator ("tegrl-bs").
const bootstrapStream = 0x746567726c2d6273

// BootstrapMeanCI returns the percentile bootstrap confidence interval, at
// confidence level (0.95 for 95%), of the mean of xs: it draws resamples
// resamples of len(xs) values with replacement, takes each one's mean, and
// returns the order statistics of those means at (1-level)/2 and
// (1+level)/2 by the nearest-rank rule (the k-th smallest of B means with
// k = ceil(q·B), at least 1). For a paired A/B comparison xs holds the
// per-seed differences B - A, so one resample draws seeds.
//
// The generator is PCG seeded with seed alone and restarted on every call:
// the same seed, length and resamples draw the same indices, so every metric
// of one comparison is resampled over the same seed sets and the interval
// depends on nothing but the arguments. With one value the interval is
// that value; with none it is NaN, NaN.
func BootstrapMeanCI(xs []float64, resamples int, level float64, seed uint64) (lo, hi float64, err error) {
	if resamples < 1 {
		return 0, 0, fmt.Errorf("bootstrap: %d resamples, want at least 1", resamples)
	}
	if !(level > 0 && level < 1) {
		return 0, 0, fmt.Errorf("bootstrap: confidence level %v, want a number in (0, 1)", level)
	}
	n := len(xs)
	switch n {
	case 0:
		return math.NaN(), math.NaN(), nil
	case 1:
		return xs[0], xs[0], nil
	}
	rng := rand.New(rand.NewPCG(seed, bootstrapStream))
	means := make([]float64, resamples)
	for b := range means {
		sum := 0.0
		for range n {
			sum += xs[rng.IntN(n)]
		}
		means[b] = sum / float64(n)
	}
	slices.Sort(means)
	return nearestRank(means, (1-level)/2), nearestRank(means, (1+level)/2), nil
}

// nearestRank returns the q-quantile of sorted ys: the k-th smallest with
// k = ceil(q·len), clamped to [1, len]. q·len is taken 1e-9 (relative)
// low first, so that the rounding of (1-0.95)/2 = 0.025000000000000022 does
// not turn the 250th of 10,000 into the 251st.
func nearestRank(ys []float64, q float64) float64 {
	x := q * float64(len(ys))
	k := int(math.Ceil(x - 1e-9*max(1, x)))
	return ys[max(0, min(k, len(ys))-1)]
}
