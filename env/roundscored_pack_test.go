package env

import (
	"path/filepath"
	"slices"
	"testing"
)

// packRound is one GPU type with one GPU and three 1-GPU jobs at 1 step/s
// alone: job 0 (ID 10) scores best (oldest), then job 1 (ID 11), then job
// 2 (ID 12). pair gives the pairs' throughputs.
func packRound(pair func(i, k int) (float64, float64, bool)) *RoundState {
	return &RoundState{Time: 3 * 3600, Types: []string{"v100"}, Capacity: []int{1},
		Jobs:       []RoundJob{{ID: 10, Scale: 1}, {ID: 11, Scale: 1, Arrival: 3600}, {ID: 12, Scale: 1, Arrival: 7200}},
		Throughput: []float64{1, 1, 1},
		Pair:       func(i, k, _ int) (float64, float64, bool) { return pair(i, k) }}
}

// TestPackedScoredPolicy checks hand-computed rounds: the best-scored job
// runs alone on the one GPU; the next waiting job joins it when the pair's
// normalised throughput is above 1, and the running job's single
// allocation moves into the pair.
func TestPackedScoredPolicy(t *testing.T) {
	w := DefaultScoredWeights() // bias 10, log_age 1, log_rel_thr 1: oldest first
	gain := map[[2]int]float64{{0, 1}: 0.75, {0, 2}: 0.8}
	s := packRound(func(i, k int) (float64, float64, bool) {
		g, ok := gain[[2]int{min(i, k), max(i, k)}]
		return g, g, ok
	})
	p := &PackedScoredPolicy{ScoredPolicy: ScoredPolicy{Weights: w}}
	x := make([]float64, 3)
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	// Job 1 waits first (score order) and pairs with job 0 (0.75+0.75 =
	// 1.5 > 1.4), though job 2's pair would gain more: the better-scored
	// waiting job chooses first.
	if pairs := p.Pairs(s); len(pairs) != 1 || pairs[0].A != 10 || pairs[0].B != 11 || !slices.Equal(pairs[0].X, []float64{1}) {
		t.Fatalf("pairs %+v, want (10, 11) on v100", pairs)
	}
	if !slices.Equal(x, []float64{0, 0, 0}) {
		t.Fatalf("single allocation %v, want none (job 0 runs in the pair)", x)
	}
	// Next round the (0, 1) pair no longer gains (0.45 each): job 0 runs
	// alone, and job 1, still first in line, does not gain with it; job 2
	// does (0.8 each).
	gain[[2]int{0, 1}] = 0.45
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if pairs := p.Pairs(s); len(pairs) != 1 || pairs[0].A != 10 || pairs[0].B != 12 {
		t.Fatalf("second round pairs %+v, want (10, 12)", pairs)
	}
	// A pair that gains less than the threshold (1.3 < 1.4) is never
	// formed; with a lower threshold it is.
	clear(gain)
	gain[[2]int{0, 1}], gain[[2]int{0, 2}] = 0.65, 0.65
	low := &PackedScoredPolicy{ScoredPolicy: ScoredPolicy{Weights: w}, MinGain: 1.2}
	if err := low.Allocate(s, x); err != nil || len(low.Pairs(s)) != 1 {
		t.Fatalf("MinGain 1.2: pairs %+v (%v), want one", low.Pairs(s), err)
	}
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if pairs := p.Pairs(s); len(pairs) != 0 || !slices.Equal(x, []float64{1, 0, 0}) {
		t.Fatalf("no gain: pairs %+v, x %v; want job 0 alone", pairs, x)
	}
	// Without a pair table (RoundState.Pair nil) it is the unpacked policy.
	s.Pair = nil
	if err := p.Allocate(s, x); err != nil || len(p.Pairs(s)) != 0 || !slices.Equal(x, []float64{1, 0, 0}) {
		t.Fatalf("no pair table: pairs %+v, x %v (%v)", p.Pairs(s), x, err)
	}
}

// TestPackedScoredPolicyKeepsPairs: a pair of the previous round is kept
// while it still gains, even when a better-scored waiting job would
// otherwise take the running job.
func TestPackedScoredPolicyKeepsPairs(t *testing.T) {
	w := DefaultScoredWeights()
	s := packRound(func(i, k int) (float64, float64, bool) { return 0.75, 0.75, true })
	p := &PackedScoredPolicy{ScoredPolicy: ScoredPolicy{Weights: w}}
	x := make([]float64, 3)
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if pairs := p.Pairs(s); len(pairs) != 1 || pairs[0].B != 11 {
		t.Fatalf("pairs %+v, want (10, 11)", pairs)
	}
	// Job 2 now scores above job 1 (it is made older), but (10, 11) is
	// kept.
	s.Jobs[2].Arrival = 1800
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if pairs := p.Pairs(s); len(pairs) != 1 || pairs[0].A != 10 || pairs[0].B != 11 {
		t.Fatalf("pairs %+v, want (10, 11) kept", pairs)
	}
}

// TestPackedScoredPolicyProtocol runs the single-GPU protocol at 5.8
// jobs/h, where the unpacked scored policy's queue grows: packing the
// same weights must finish with a lower average JCT, and the same seed
// gives the same result.
func TestPackedScoredPolicyProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("protocol runs")
	}
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	w := []float64{9.85, -0.79, 1.41, -0.14, 1.62, 0.59, -0.57, 0.38, -0.87, 0.74}
	run := func(pack bool) RoundResult {
		g := GavelRun{Policy: "scored", Rate: 5.8, Seed: 1, New: func() AllocationPolicy {
			if pack {
				return &PackedScoredPolicy{ScoredPolicy: ScoredPolicy{Weights: w}}
			}
			return &ScoredPolicy{Weights: w}
		}}
		r, err := g.Run(tab)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	packed, again, alone := run(true), run(true), run(false)
	if packed.Saturated || !slices.Equal(packed.JCT, again.JCT) {
		t.Fatalf("packed run: saturated %v, same seed same JCTs %v", packed.Saturated, slices.Equal(packed.JCT, again.JCT))
	}
	if !(alone.Saturated || packed.AvgJCTHours < alone.AvgJCTHours) {
		t.Fatalf("packed %.2f h, unpacked %.2f h: packing did not help at 5.8 jobs/h", packed.AvgJCTHours, alone.AvgJCTHours)
	}
	t.Logf("5.8 jobs/h seed 1: packed %.2f h, unpacked %.2f h (saturated %v)", packed.AvgJCTHours, alone.AvgJCTHours, alone.Saturated)
}

func TestPackedScoredPolicyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "packed.json")
	w := DefaultScoredWeights()
	if err := WritePackedScoredPolicy(path, w, nil); err != nil {
		t.Fatal(err)
	}
	pol, err := AllocationPolicyByName(path)
	if err != nil {
		t.Fatal(err)
	}
	pp, ok := pol.(*PackedScoredPolicy)
	if !ok || !slices.Equal(pp.Weights, w) || pp.Name() != "scored_packed" {
		t.Fatalf("loaded %T %v", pol, pol)
	}
	if _, ok := pol.(PackingPolicy); !ok {
		t.Fatal("a packed scored policy is not a PackingPolicy")
	}
	// The unpacked file stays unpacked: no PackingPolicy, so the round
	// mechanism never asks it for pairs.
	if err := WriteScoredPolicy(path, w, nil); err != nil {
		t.Fatal(err)
	}
	if pol, err := AllocationPolicyByName(path); err != nil {
		t.Fatal(err)
	} else if _, ok := pol.(PackingPolicy); ok {
		t.Fatalf("unpacked file loaded as %T", pol)
	}
}

// BenchmarkPackedScoredAllocate is BenchmarkScoredAllocate's round (400
// gangs on Gavel's three types) with a pair table: the scored allocation
// and then the packing of the jobs left waiting.
func BenchmarkPackedScoredAllocate(b *testing.B) {
	p := &PackedScoredPolicy{ScoredPolicy: ScoredPolicy{Weights: []float64{9.85, -0.79, 1.41, -0.14, 1.62, 0.59, -0.57, 0.38, -0.87, 0.74}}}
	benchAllocateWith(b, p, func(s *RoundState) {
		s.Pair = func(i, k, j int) (float64, float64, bool) {
			if s.Jobs[i].Scale != s.Jobs[k].Scale {
				return 0, 0, false
			}
			nt := len(s.Types)
			return 0.6 * s.Throughput[i*nt+j], 0.55 * s.Throughput[k*nt+j], true
		}
	})
}
