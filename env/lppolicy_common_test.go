package env

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// lpPolicies are the policies of the lppolicy files under their names.
var lpPolicies = []string{"max_min_fairness_perf", "max_min_fairness_packed", "min_total_duration",
	"min_total_duration_perf", "finish_time_fairness", "finish_time_fairness_perf", "allox"}

func TestLPPoliciesRegistered(t *testing.T) {
	for _, name := range lpPolicies {
		p, err := AllocationPolicyByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Name() != name {
			t.Errorf("%s: Name() = %q", name, p.Name())
		}
		h, ok := p.(RoundHintsPolicy)
		agn := name == "min_total_duration" || name == "finish_time_fairness"
		if ok != agn || (ok && !h.RoundHints().ShuffleTypes) {
			t.Errorf("%s: shuffled type order %v, want %v", name, ok, agn)
		}
	}
}

func TestLPPoliciesBadInput(t *testing.T) {
	for _, name := range lpPolicies {
		p, _ := AllocationPolicyByName(name)
		// No active jobs: the empty allocation.
		if err := p.Allocate(&RoundState{Types: []string{"v100"}, Capacity: []int{1}}, nil); err != nil {
			t.Errorf("%s, no jobs: %v", name, err)
		}
		s := round([]string{"v100", "k80"}, []int{0, 0}, [][]float64{{1, 1}})
		if err := p.Allocate(s, make([]float64, 2)); !errors.Is(err, ErrRoundNoCapacity) {
			t.Errorf("%s, no GPUs: %v", name, err)
		}
		s = round([]string{"v100", "k80"}, []int{1, 1}, [][]float64{{1, 1}, {0, 0}})
		if err := p.Allocate(s, make([]float64, 4)); !errors.Is(err, ErrRoundJobCannot) {
			t.Errorf("%s, a job that runs nowhere: %v", name, err)
		}
		s = round([]string{"v100", "k80"}, []int{1, 1}, [][]float64{{1, 1}})
		if err := p.Allocate(s, make([]float64, 3)); err == nil {
			t.Errorf("%s: a short x accepted", name)
		}
	}
}

func TestMaxMinTooLarge(t *testing.T) {
	// maxLPClasses+1 jobs that all differ: refused before the tableau is built.
	n := maxLPClasses + 1
	coef := make([]float64, n)
	scale := make([]int, n)
	for i := range n {
		coef[i] = 1 + float64(i)
		scale[i] = 1
	}
	var m maxMin
	if _, err := m.solve(coef, scale, []int{4}, make([]float64, n)); !errors.Is(err, ErrRoundTooLarge) {
		t.Fatalf("err %v, want ErrRoundTooLarge", err)
	}
	if len(m.lp.tab) != 0 {
		t.Fatal("tableau built")
	}
}

func TestLPPoliciesFeasibleAndDeterministic(t *testing.T) {
	for _, name := range lpPolicies {
		rng := rand.New(rand.NewPCG(31, 32))
		for trial := range 20 {
			s := randomRound(rng, 1+rng.IntN(15), 1+rng.IntN(3), name != "allox" && trial%2 == 0)
			if name == "max_min_fairness_packed" {
				pairTable(s, [][]float64{{0.7, 0.5, 0.9, 0.6, 0.8, 0.4}, {0.6, 0.7, 0.5, 0.9, 0.3, 0.8},
					{0.9, 0.4, 0.6, 0.7, 0.5, 0.8}, {0.5, 0.8, 0.7, 0.6, 0.9, 0.4}, {0.8, 0.3, 0.5, 0.9, 0.7, 0.6},
					{0.4, 0.8, 0.9, 0.5, 0.6, 0.7}})
			}
			x1 := make([]float64, len(s.Throughput))
			x2 := make([]float64, len(s.Throughput))
			p1, _ := AllocationPolicyByName(name)
			p2, _ := AllocationPolicyByName(name)
			if err := p1.Allocate(s, x1); err != nil {
				t.Fatalf("%s trial %d: %v", name, trial, err)
			}
			if err := p2.Allocate(s, x2); err != nil {
				t.Fatal(err)
			}
			for i := range x1 {
				if math.Float64bits(x1[i]) != math.Float64bits(x2[i]) {
					t.Fatalf("%s trial %d: x[%d] %v then %v", name, trial, i, x1[i], x2[i])
				}
			}
			if name == "max_min_fairness_packed" {
				_, use := packedLevels(s, x1, p1.(PackingPolicy).Pairs(s))
				for i, u := range use {
					lim := 1.0
					if i >= len(s.Jobs) {
						lim = float64(s.Capacity[i-len(s.Jobs)])
					}
					if u > lim+1e-9 {
						t.Fatalf("%s trial %d: use %v", name, trial, use)
					}
				}
				continue
			}
			checkFeasible(t, s, x1)
		}
	}
}
