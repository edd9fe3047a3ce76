package env

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/data"
)

// gavelRows reads the single-GPU rows (v100, p100, k80 steps/s) of Gavel's
// bundled throughput table, sorted by job type.
func gavelRows(tb testing.TB) [][]float64 {
	tb.Helper()
	raw, err := data.ReadFile("gavel/simulation_throughputs.json")
	if err != nil {
		tb.Fatal(err)
	}
	var table map[string]map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &table); err != nil {
		tb.Fatal(err)
	}
	var keys []string
	for k := range table["v100"] {
		if strings.HasSuffix(k, ", 1)") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	rows := make([][]float64, len(keys))
	for i, k := range keys {
		for _, w := range []string{"v100", "p100", "k80"} {
			var v float64
			if err := json.Unmarshal(table[w][k]["null"], &v); err != nil {
				tb.Fatalf("%s %s: %v", w, k, err)
			}
			rows[i] = append(rows[i], v)
		}
	}
	return rows
}

// gavelRound is a 36:36:36 cluster with n single-GPU jobs of uniformly
// drawn Gavel job types, as in Gavel's continuous-single experiment.
func gavelRound(tb testing.TB, n int, seed uint64) *RoundState {
	rows := gavelRows(tb)
	rng := rand.New(rand.NewPCG(seed, 1))
	s := &RoundState{Types: []string{"v100", "p100", "k80"}, Capacity: []int{36, 36, 36}}
	for i := range n {
		k := rng.IntN(len(rows))
		s.Jobs = append(s.Jobs, RoundJob{ID: i, Type: k, Scale: 1, Priority: 1,
			StepsTotal: 1e6, StepsLeft: 1 + rng.Float64()*1e6, Arrival: rng.Float64() * 3600})
		s.Throughput = append(s.Throughput, rows[k]...)
	}
	s.Time = 3600
	return s
}

func BenchmarkMaxMinPerf(b *testing.B) {
	for _, n := range []int{10, 100, 300} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			s := gavelRound(b, n, 1)
			x := make([]float64, len(s.Throughput))
			p := &MaxMinFairnessPerf{}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Allocate(s, x); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(p.mm.lp.pivots), "pivots")
		})
	}
}

// BenchmarkMaxMinPerfGonum solves the same LP, one column per job and type,
// with gonum's simplex: the cost the class collapse and the dense tableau
// avoid.
func BenchmarkMaxMinPerfGonum(b *testing.B) {
	for _, n := range []int{10, 100, 300} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			s := gavelRound(b, n, 1)
			coef := perfCoef(s)
			scale := make([]int, n)
			for i := range scale {
				scale[i] = 1
			}
			m, nv, a, bb, c := maxMinLP(coef, scale, s.Capacity)
			b.ReportAllocs()
			for b.Loop() {
				gonumMaxLE(b, m, nv, a, bb, c)
			}
		})
	}
}

func benchPolicy(b *testing.B, mk func() AllocationPolicy) {
	for _, n := range []int{10, 100, 300} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			s := gavelRound(b, n, 1)
			x := make([]float64, len(s.Throughput))
			p := mk()
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Allocate(s, x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMinTotalDurationPerf(b *testing.B) {
	benchPolicy(b, func() AllocationPolicy { return &MinTotalDuration{Perf: true} })
}

func BenchmarkFinishTimeFairnessPerf(b *testing.B) {
	benchPolicy(b, func() AllocationPolicy { return &FinishTimeFairness{Perf: true} })
}

func BenchmarkAlloX(b *testing.B) {
	for _, n := range []int{10, 100, 300} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			s := gavelRound(b, n, 1)
			x := make([]float64, len(s.Throughput))
			b.ReportAllocs()
			for b.Loop() {
				// A fresh policy each time: every job waits, the full matching.
				p := &AlloX{}
				if err := p.Allocate(s, x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// gavelPackedRound is gavelRound with job types indexing Gavel's table and
// its co-location throughputs as the pair function.
func gavelPackedRound(tb testing.TB, n int, seed uint64) *RoundState {
	t, err := GavelThroughputTable()
	if err != nil {
		tb.Fatal(err)
	}
	names := []string{"v100", "p100", "k80"}
	gpus := make([]int, len(names))
	for j, name := range names {
		if gpus[j], err = t.GPU(name); err != nil {
			tb.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	s := &RoundState{Types: names, Capacity: []int{36, 36, 36}, Time: 3600}
	for i := range n {
		m := rng.IntN(len(t.Models))
		s.Jobs = append(s.Jobs, RoundJob{ID: i, Type: m, Scale: 1, Priority: 1, StepsTotal: 1e6, StepsLeft: 1e6})
		for _, g := range gpus {
			s.Throughput = append(s.Throughput, t.Throughput(m, g, 1, false))
		}
	}
	s.Pair = func(i, k, j int) (float64, float64, bool) {
		return t.PairThroughput(s.Jobs[i].Type, s.Jobs[k].Type, gpus[j], 1)
	}
	return s
}

func BenchmarkMaxMinPacked(b *testing.B) {
	for _, n := range []int{10, 100, 300} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			s := gavelPackedRound(b, n, 1)
			x := make([]float64, len(s.Throughput))
			p := &MaxMinFairnessPacked{}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Allocate(s, x); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(p.Pairs(s))), "pairs")
			b.ReportMetric(float64(p.lp.pivots), "pivots")
		})
	}
}

// gavelMultiRound draws n jobs as Gavel's continuous-multiple trace does:
// scale factors 1/2/4/8 with probabilities 0.7/0.1/0.15/0.05, types among
// those measured at the scale factor.
func gavelMultiRound(tb testing.TB, n int, seed uint64) *RoundState {
	t, err := GavelThroughputTable()
	if err != nil {
		tb.Fatal(err)
	}
	names := []string{"v100", "p100", "k80"}
	gpus := make([]int, len(names))
	for j, name := range names {
		if gpus[j], err = t.GPU(name); err != nil {
			tb.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	s := &RoundState{Types: names, Capacity: []int{36, 36, 36}, Time: 3600}
	for i := range n {
		sc := gavelScale(rng.Float64())
		m := rng.IntN(len(t.Models))
		for !t.HasScale(m, sc) {
			m = rng.IntN(len(t.Models))
		}
		s.Jobs = append(s.Jobs, RoundJob{ID: i, Type: m, Scale: sc, Priority: 1, StepsTotal: 1e6, StepsLeft: 1e6})
		for _, g := range gpus {
			s.Throughput = append(s.Throughput, t.Throughput(m, g, sc, false))
		}
	}
	return s
}

func BenchmarkMaxMinPerfMulti(b *testing.B) {
	for _, n := range []int{10, 100, 300} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			s := gavelMultiRound(b, n, 1)
			x := make([]float64, len(s.Throughput))
			p := &MaxMinFairnessPerf{}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Allocate(s, x); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(p.mm.lp.pivots), "pivots")
			b.ReportMetric(float64(len(p.mm.first)), "classes")
		})
	}
}
