package env

import (
	"slices"
	"testing"
)

// TestScoredPolicySetPrevious: a policy that allocates round 1 and then
// round 2 in-process answers round 2 exactly as a fresh policy told what
// round 1 allocated (SetPrevious). The weights reward staying on the same
// type and running on, so a fresh policy without the history answers
// otherwise.
//
// Round 1 (one fast, one slow GPU): job 0 (older) takes the fast GPU, job
// 1 the slow one. Round 2: job 2 arrives, older than both by its arrival
// field. Without history, age and speed rank job 2 on the fast GPU; with
// it, same_type and running keep jobs 0 and 1 where they were.
func TestScoredPolicySetPrevious(t *testing.T) {
	w := make([]float64, NumScoredFeatures)
	w[0], w[2], w[4], w[5], w[6] = 1, 1, 1, 3, 2 // bias, log_age, log_rel_thr, same_type, running
	s1 := &RoundState{Time: 3600, Types: []string{"fast", "slow"}, Capacity: []int{1, 1},
		Jobs:       []RoundJob{{ID: 10, Scale: 1}, {ID: 11, Scale: 1, Arrival: 1800}},
		Throughput: []float64{2, 1, 2, 1}}
	s2 := &RoundState{Time: 7200, Types: []string{"fast", "slow"}, Capacity: []int{1, 1},
		Jobs:       []RoundJob{{ID: 10, Scale: 1, Attained: 3600}, {ID: 11, Scale: 1, Arrival: 1800, Attained: 3600}, {ID: 12, Scale: 1, Arrival: -36000}},
		Throughput: []float64{2, 1, 2, 1, 2, 1}}

	live := &ScoredPolicy{Weights: w}
	x1 := make([]float64, 4)
	if err := live.Allocate(s1, x1); err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 0, 0, 1}; !slices.Equal(x1, want) {
		t.Fatalf("round 1 x = %v, want %v", x1, want)
	}
	prev := map[int]int{}
	for i, j := range s1.Jobs {
		for k := range s1.Types {
			if x1[i*2+k] > 0 {
				prev[j.ID] = k
			}
		}
	}
	want := make([]float64, 6)
	if err := live.Allocate(s2, want); err != nil {
		t.Fatal(err)
	}

	fresh := &ScoredPolicy{Weights: slices.Clone(w)}
	fresh.SetPrevious(prev)
	got := make([]float64, 6)
	if err := fresh.Allocate(s2, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("with SetPrevious x = %v, in-process %v", got, want)
	}
	if exp := []float64{1, 0, 0, 1, 0, 0}; !slices.Equal(want, exp) {
		t.Fatalf("round 2 x = %v, want %v (history keeps jobs 10 and 11)", want, exp)
	}

	cold := &ScoredPolicy{Weights: slices.Clone(w)}
	none := make([]float64, 6)
	if err := cold.Allocate(s2, none); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(none, want) {
		t.Fatalf("without history x = %v, the same as with it: the test does not read the history", none)
	}

	// nil clears: the policy then answers as a fresh one.
	fresh.SetPrevious(nil)
	if err := fresh.Allocate(s2, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, none) {
		t.Fatalf("after SetPrevious(nil) x = %v, want %v", got, none)
	}
}
