package rl

import (
	"math/rand/v2"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// benchRoundState is env's allocation benchmark state: 400 active gangs of
// 1-8 GPUs on Gavel's three GPU types, 36 GPUs each.
func benchRoundState() (*env.RoundState, []float64) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := &env.RoundState{Types: []string{"v100", "p100", "k80"}, Capacity: []int{36, 36, 36}}
	for i := range 400 {
		s.Jobs = append(s.Jobs, env.RoundJob{ID: i, Scale: 1 << rng.IntN(4), Arrival: float64(i), Attained: rng.Float64() * 36000, Priority: 1})
		for range 3 {
			s.Throughput = append(s.Throughput, 0.1+10*rng.Float64())
		}
	}
	return s, make([]float64, len(s.Jobs)*3)
}

var benchRoundWeights = []float64{39.4, -3.16, 5.64, -0.56, 6.48, 2.36, -2.28, 1.52, -3.48, 2.96} // gavel-multi.json x 4

// BenchmarkRoundSamplerAllocate is one sampled allocation of PPO's
// stochastic policy (no recording): compare with env's
// BenchmarkScoredAllocate, the greedy policy on the same state.
func BenchmarkRoundSamplerAllocate(b *testing.B) {
	s, x := benchRoundState()
	p := newRoundSampler(benchRoundWeights, false, 1, 0)
	if err := p.Allocate(s, x); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Time += 1920
		p.calls = p.calls[:0]
		if err := p.Allocate(s, x); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundPointGrad replays one recorded allocation of the state
// above and accumulates its PPO gradient: the learner's inner loop.
func BenchmarkRoundPointGrad(b *testing.B) {
	s, x := benchRoundState()
	p := newRoundSampler(benchRoundWeights, false, 1, 1)
	if err := p.Allocate(s, x); err != nil {
		b.Fatal(err)
	}
	pt := &p.points[0]
	pt.adv = 1
	g := make([]float64, len(benchRoundWeights))
	var buf roundGradBuf
	roundPointGrad(pt, benchRoundWeights, 0.2, 0.01, g, &buf)
	b.ReportMetric(float64(len(pt.seq)), "choices")
	b.ReportAllocs()
	for b.Loop() {
		roundPointGrad(pt, benchRoundWeights, 0.2, 0.01, g, &buf)
	}
}
