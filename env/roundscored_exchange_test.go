package env

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
)

// TestScoredExchange checks a hand-computed round on two types with 3
// GPUs each. Every pair scores the bias alone, so the greedy pass fills by
// job index: job 0, a gang of 2, and job 1 (fast 2, slow 1: slowdown 2 on
// slow) fill the fast type; job 2 (fast 10, slow 1: slowdown 10 on slow)
// and job 3, a gang of 2 that cannot run on fast, the slow one. Jobs 1
// and 2 sum a slowdown of 1 + 10 = 11; the exchange swaps them (2 + 1 =
// 3). The two gangs of 2 stay: job 3 cannot run on fast.
func TestScoredExchange(t *testing.T) {
	w := make([]float64, NumScoredFeatures)
	w[0] = 1
	s := &RoundState{Time: 3600, Types: []string{"fast", "slow"}, Capacity: []int{3, 3},
		Jobs:       []RoundJob{{ID: 0, Scale: 2}, {ID: 1, Scale: 1}, {ID: 2, Scale: 1}, {ID: 3, Scale: 2}},
		Throughput: []float64{9, 1, 2, 1, 10, 1, 0, 1}}
	x := make([]float64, 8)
	if err := (&ScoredPolicy{Weights: w}).Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 0, 1, 0, 0, 1, 0, 1}; !slices.Equal(x, want) {
		t.Fatalf("greedy x = %v, want %v", x, want)
	}
	p := &ScoredPolicy{Weights: w, Exchange: true}
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 0, 0, 1, 1, 0, 0, 1}; !slices.Equal(x, want) {
		t.Fatalf("exchanged x = %v, want %v", x, want)
	}
	// The next round's same_type feature sees the types after the swap.
	if p.prev[1] != 1 || p.prev[2] != 0 {
		t.Fatalf("previous types %v, want job 1 on type 1 and job 2 on type 0", p.prev)
	}
}

// TestScoredExchangeUnequal checks a hand-computed round where the
// changes need free GPUs: the fast type has 2 GPUs, the slow one 4. The
// greedy pass puts job 0, a gang of 2 (slowdown 2 on slow), on fast and
// jobs 1 and 2 (slowdowns 10 and 5 on slow) on slow: 1 + 10 + 5 = 16. No
// equal-size swap helps; job 0 trades places with job 1, the free slow
// GPUs taking the extra one (2 + 1 + 5 = 8), and job 2 moves to the fast
// GPU that frees (2 + 1 + 1 = 4).
func TestScoredExchangeUnequal(t *testing.T) {
	w := make([]float64, NumScoredFeatures)
	w[0] = 1
	s := &RoundState{Time: 3600, Types: []string{"fast", "slow"}, Capacity: []int{2, 4},
		Jobs:       []RoundJob{{ID: 0, Scale: 2}, {ID: 1, Scale: 1}, {ID: 2, Scale: 1}},
		Throughput: []float64{2, 1, 10, 1, 5, 1}}
	x := make([]float64, 6)
	if err := (&ScoredPolicy{Weights: w}).Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 0, 0, 1, 0, 1}; !slices.Equal(x, want) {
		t.Fatalf("greedy x = %v, want %v", x, want)
	}
	if err := (&ScoredPolicy{Weights: w, Exchange: true}).Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if want := []float64{0, 1, 1, 0, 1, 0}; !slices.Equal(x, want) {
		t.Fatalf("exchanged x = %v, want %v", x, want)
	}
}

// TestScoredExchangeProperties: on random rounds (gangs of 1-8 GPUs, types
// a job cannot use) the exchange runs the same gangs as the greedy pass,
// only where they can run and within each type's GPUs, with a summed
// slowdown no higher, and leaves no change that would lower it: no swap of
// two equal-size gangs, no move to a type whose free GPUs hold the gang,
// no swap of two gangs of different sizes that the free GPUs allow.
func TestScoredExchangeProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		nt, n := 2+rng.IntN(4), 1+rng.IntN(80)
		s := &RoundState{Time: 3600 * float64(1+rng.IntN(100))}
		for j := range nt {
			s.Types = append(s.Types, string(rune('a'+j)))
			s.Capacity = append(s.Capacity, rng.IntN(40))
		}
		for i := range n {
			s.Jobs = append(s.Jobs, RoundJob{ID: i, Scale: 1 << rng.IntN(4), Arrival: float64(i), Attained: rng.Float64() * 36000, Priority: 1})
			for range nt {
				thr := 0.1 + 10*rng.Float64()
				if rng.IntN(5) == 0 {
					thr = 0
				}
				s.Throughput = append(s.Throughput, thr)
			}
		}
		w := make([]float64, NumScoredFeatures)
		for k := range w {
			w[k] = rng.NormFloat64()
		}
		w[0] = 5
		greedy, xch := make([]float64, n*nt), make([]float64, n*nt)
		if err := (&ScoredPolicy{Weights: w}).Allocate(s, greedy); err != nil {
			t.Fatal(err)
		}
		if err := (&ScoredPolicy{Weights: w, Exchange: true}).Allocate(s, xch); err != nil {
			t.Fatal(err)
		}
		typeOf := func(x []float64, i int) int {
			for j := range nt {
				if x[i*nt+j] == 1 {
					return j
				}
			}
			return -1
		}
		slowdown := func(i, j int) float64 {
			row := s.Throughput[i*nt : (i+1)*nt]
			return slices.Max(row) / row[j]
		}
		usedX := make([]int, nt)
		var sumG, sumX float64
		for i, job := range s.Jobs {
			tg, tx := typeOf(greedy, i), typeOf(xch, i)
			if (tg < 0) != (tx < 0) {
				t.Fatalf("trial %d: job %d runs on %d greedy, %d exchanged", trial, i, tg, tx)
			}
			if tg < 0 {
				continue
			}
			if s.Throughput[i*nt+tx] <= 0 {
				t.Fatalf("trial %d: job %d moved to type %d where it cannot run", trial, i, tx)
			}
			usedX[tx] += job.Scale
			sumG += slowdown(i, tg)
			sumX += slowdown(i, tx)
		}
		free := make([]int, nt)
		for j := range nt {
			if usedX[j] > s.Capacity[j] {
				t.Fatalf("trial %d: type %d has %d GPUs in use, %d exist", trial, j, usedX[j], s.Capacity[j])
			}
			free[j] = s.Capacity[j] - usedX[j]
		}
		if sumX > sumG+1e-9 {
			t.Fatalf("trial %d: summed slowdown %v exchanged > %v greedy", trial, sumX, sumG)
		}
		for a := range n {
			ta, sa := typeOf(xch, a), s.Jobs[a].Scale
			if ta < 0 {
				continue
			}
			for j := range nt {
				if j != ta && free[j] >= sa && slowdown(a, j) < slowdown(a, ta)-1e-6 {
					t.Fatalf("trial %d: moving job %d from type %d to free type %d lowers its slowdown", trial, a, ta, j)
				}
			}
			for b := a + 1; b < n; b++ {
				tb, sb := typeOf(xch, b), s.Jobs[b].Scale
				if tb < 0 || ta == tb || free[tb] < sa-sb || free[ta] < sb-sa {
					continue
				}
				before := slowdown(a, ta) + slowdown(b, tb)
				if after := slowdown(a, tb) + slowdown(b, ta); after < before-1e-6 && !math.IsInf(after, 1) {
					t.Fatalf("trial %d: swapping jobs %d and %d (sizes %d, %d) lowers %v to %v", trial, a, b, sa, sb, before, after)
				}
			}
		}
	}
}

func TestScoredExchangeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	w := DefaultScoredWeights()
	if err := WriteScoredPolicyFile(path, ScoredPolicy{Weights: w, Exchange: true}, nil); err != nil {
		t.Fatal(err)
	}
	pol, err := AllocationPolicyByName(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := pol.(*ScoredPolicy); !ok || !p.Exchange || !slices.Equal(p.Weights, w) {
		t.Fatalf("loaded %#v, want the weights with Exchange", pol)
	}
	if err := WriteScoredPolicy(path, w, nil); err != nil {
		t.Fatal(err)
	}
	if pol, err := AllocationPolicyByName(path); err != nil || pol.(*ScoredPolicy).Exchange {
		t.Fatalf("a file without exchange loaded with it (%v)", err)
	}
}

// BenchmarkScoredAllocateExchange is BenchmarkScoredAllocate with the
// exchange pass.
func BenchmarkScoredAllocateExchange(b *testing.B) {
	p := &ScoredPolicy{Weights: []float64{9.85, -0.79, 1.41, -0.14, 1.62, 0.59, -0.57, 0.38, -0.87, 0.74}, Exchange: true}
	benchAllocate(b, p)
}

// BenchmarkScoredAllocateExchangeFree is BenchmarkScoredAllocateExchange
// with 600 GPUs of each type, more than the 400 gangs ask for: every gang
// runs and every type has free GPUs, so the moves and unequal swaps are
// all open (the pass's costliest case).
func BenchmarkScoredAllocateExchangeFree(b *testing.B) {
	p := &ScoredPolicy{Weights: []float64{9.85, -0.79, 1.41, -0.14, 1.62, 0.59, -0.57, 0.38, -0.87, 0.74}, Exchange: true}
	benchAllocateWith(b, p, func(s *RoundState) { s.Capacity = []int{600, 600, 600} })
}

// BenchmarkScoredAllocateFree is BenchmarkScoredAllocate on the round of
// BenchmarkScoredAllocateExchangeFree.
func BenchmarkScoredAllocateFree(b *testing.B) {
	p := &ScoredPolicy{Weights: []float64{9.85, -0.79, 1.41, -0.14, 1.62, 0.59, -0.57, 0.38, -0.87, 0.74}}
	benchAllocateWith(b, p, func(s *RoundState) { s.Capacity = []int{600, 600, 600} })
}

// TestScoredConsolidate: Consolidate switches on Tiresias's rule (spread
// below half the consolidated throughput) and no other, and survives the
// file, as Upgrade does. TestGangsWhole checks that such a policy's gangs run on one server.
func TestScoredConsolidate(t *testing.T) {
	w := DefaultScoredWeights()
	if (&ScoredPolicy{Weights: w}).MustConsolidate(8, 2) {
		t.Fatal("consolidates without Consolidate")
	}
	p := &ScoredPolicy{Weights: w, Consolidate: true}
	if !p.MustConsolidate(8, 2) || p.MustConsolidate(6, 5) || p.MustConsolidate(10, 5) {
		t.Fatal("consolidation rule is not spread < 0.5 x consolidated")
	}
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := WriteScoredPolicyFile(path, ScoredPolicy{Weights: w, Exchange: true, Consolidate: true}, nil); err != nil {
		t.Fatal(err)
	}
	pol, err := AllocationPolicyByName(path)
	if err != nil {
		t.Fatal(err)
	}
	if q, ok := pol.(*ScoredPolicy); !ok || !q.Consolidate || !q.Exchange || q.Upgrade {
		t.Fatalf("loaded %#v, want Consolidate and Exchange", pol)
	}
	if err := WriteScoredPolicyFile(path, ScoredPolicy{Weights: w, Pack: true, Upgrade: true}, nil); err != nil {
		t.Fatal(err)
	}
	if pol, err = AllocationPolicyByName(path); err != nil {
		t.Fatal(err)
	}
	if q, ok := pol.(*PackedScoredPolicy); !ok || !q.Upgrade || q.Consolidate || q.Exchange {
		t.Fatalf("loaded %#v, want a packed policy with Upgrade", pol)
	}
}
