package report

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestBootstrapHandComputed: for the differences {0, 0, 0, 1} a resample's
// mean is K/4 with K ~ Binomial(4, 1/4): P(K=0) = 0.316, P(K<=2) = 0.949,
// P(K<=3) = 0.996. So the 2.5% quantile of the bootstrap means is 0 and the
// 97.5% quantile is 3/4; 10,000 resamples put the empirical CDF within
// 0.005 (3 standard errors) of those, far from 0.025 and 0.975, so every
// seed gives exactly [0, 0.75].
func TestBootstrapHandComputed(t *testing.T) {
	for seed := range uint64(8) {
		lo, hi, err := BootstrapMeanCI([]float64{0, 0, 0, 1}, DefaultResamples, 0.95, seed)
		if err != nil {
			t.Fatal(err)
		}
		if lo != 0 || hi != 0.75 {
			t.Errorf("seed %d: CI [%v, %v], want [0, 0.75]", seed, lo, hi)
		}
	}
	// Two differences: means d1 (1/4), (d1+d2)/2 (1/2), d2 (1/4).
	lo, hi, _ := BootstrapMeanCI([]float64{-1, 3}, DefaultResamples, 0.95, 42)
	if lo != -1 || hi != 3 {
		t.Errorf("{-1, 3}: CI [%v, %v], want [-1, 3]", lo, hi)
	}
	// At 40%: the 30% and 70% quantiles are the midpoint 1.
	lo, hi, _ = BootstrapMeanCI([]float64{-1, 3}, DefaultResamples, 0.4, 42)
	if lo != 1 || hi != 1 {
		t.Errorf("{-1, 3} at 40%%: CI [%v, %v], want [1, 1]", lo, hi)
	}
}

// TestBootstrapBruteForce compares the Monte Carlo interval with the exact
// bootstrap distribution, enumerated over all n^n equally likely resamples:
// each bound must lie between the exact quantiles at 1.5% and 3.5% (lower)
// or 96.5% and 98.5% (upper), over 6 standard errors of slack.
func TestBootstrapBruteForce(t *testing.T) {
	xs := []float64{-3.5, 0.25, 1, 2, 7.75, 12}
	n := len(xs)
	var exact []float64
	idx := make([]int, n)
	for {
		sum := 0.0
		for _, i := range idx {
			sum += xs[i]
		}
		exact = append(exact, sum/float64(n))
		k := 0
		for k < n && idx[k] == n-1 {
			idx[k] = 0
			k++
		}
		if k == n {
			break
		}
		idx[k]++
	}
	slices.Sort(exact)
	if len(exact) != 46656 {
		t.Fatalf("%d resamples enumerated, want 6^6", len(exact))
	}
	for seed := range uint64(5) {
		lo, hi, err := BootstrapMeanCI(xs, DefaultResamples, 0.95, seed)
		if err != nil {
			t.Fatal(err)
		}
		if lo < nearestRank(exact, 0.015) || lo > nearestRank(exact, 0.035) {
			t.Errorf("seed %d: lower bound %v outside the exact 1.5%%-3.5%% quantiles [%v, %v]", seed, lo, nearestRank(exact, 0.015), nearestRank(exact, 0.035))
		}
		if hi < nearestRank(exact, 0.965) || hi > nearestRank(exact, 0.985) {
			t.Errorf("seed %d: upper bound %v outside the exact 96.5%%-98.5%% quantiles [%v, %v]", seed, hi, nearestRank(exact, 0.965), nearestRank(exact, 0.985))
		}
	}
}

// TestBootstrapContainsMean: the interval holds the sample mean, on data
// sets of several shapes and sizes.
func TestBootstrapContainsMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 60 {
		n := 2 + trial%19
		xs := make([]float64, n)
		for i := range xs {
			switch trial % 3 {
			case 0:
				xs[i] = rng.NormFloat64()
			case 1:
				xs[i] = rng.ExpFloat64() * 100 // skewed
			default:
				xs[i] = float64(rng.IntN(3)) // ties
			}
		}
		lo, hi, err := BootstrapMeanCI(xs, 2000, 0.95, uint64(trial))
		if err != nil {
			t.Fatal(err)
		}
		if m := mean(xs); !(lo <= m && m <= hi) {
			t.Errorf("trial %d: mean %v outside CI [%v, %v] of %v", trial, m, lo, hi, xs)
		}
	}
}

func TestBootstrapDeterministicAndEdges(t *testing.T) {
	xs := []float64{1.5, -2, 3.25, 0.5, 9, -4}
	lo1, hi1, _ := BootstrapMeanCI(xs, 500, 0.9, 7)
	lo2, hi2, _ := BootstrapMeanCI(xs, 500, 0.9, 7)
	if lo1 != lo2 || hi1 != hi2 {
		t.Errorf("same seed, different intervals: [%v, %v] and [%v, %v]", lo1, hi1, lo2, hi2)
	}
	lo3, hi3, _ := BootstrapMeanCI(xs, 500, 0.9, 8)
	if lo1 == lo3 && hi1 == hi3 {
		t.Errorf("seeds 7 and 8 gave the same interval [%v, %v]", lo1, hi1)
	}
	if lo, hi, err := BootstrapMeanCI([]float64{2.5}, 100, 0.95, 1); err != nil || lo != 2.5 || hi != 2.5 {
		t.Errorf("one value: [%v, %v], %v; want [2.5, 2.5]", lo, hi, err)
	}
	if lo, hi, err := BootstrapMeanCI(nil, 100, 0.95, 1); err != nil || !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("no value: [%v, %v], %v; want NaN", lo, hi, err)
	}
	for _, tc := range []struct {
		b     int
		level float64
		want  string
	}{{0, 0.95, "0 resamples"}, {100, 1, "level 1"}, {100, 0, "level 0"}, {100, math.NaN(), "level NaN"}} {
		if _, _, err := BootstrapMeanCI(xs, tc.b, tc.level, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("resamples %d level %v: error %v, want %q", tc.b, tc.level, err, tc.want)
		}
	}
}

// TestNearestRank: of 1..10000, the 2.5% quantile is the 250th value even
// though (1-0.95)/2 rounds to slightly more than 0.025.
func TestNearestRank(t *testing.T) {
	ys := make([]float64, 10000)
	for i := range ys {
		ys[i] = float64(i + 1)
	}
	for _, tc := range []struct{ q, want float64 }{
		{(1 - 0.95) / 2, 250}, {(1 + 0.95) / 2, 9750}, {0.025, 250}, {0, 1}, {1e-9, 1}, {0.5, 5000}, {1, 10000},
	} {
		if got := nearestRank(ys, tc.q); got != tc.want {
			t.Errorf("nearestRank(1..10000, %v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

// BenchmarkBootstrap: one metric's interval at the default resamples.
func BenchmarkBootstrap(b *testing.B) {
	for _, n := range []int{20, 100} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i % 7)
		}
		b.Run("seeds="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := BootstrapMeanCI(xs, DefaultResamples, 0.95, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
