package env

import (
	"math"
	"slices"
	"testing"
)

// TestScoredFeatureSet checks the features of a hand-computed round at
// time 2 h with 4 GPUs of demand on 3 GPUs (load ln(1 + 4/3)):
//   - job 0 (ID 5, arrived at 0, 1 GPU, 1 GPU-hour attained, ran on the
//     slow type last round): throughputs 2 and 1, so spread ln(2/1.5);
//     fast: rel 0, same_type 0; slow: rel ln 0.5, same_type 1;
//   - job 1 (ID 6, arrived at 1 h, gang of 2, never ran): the slow type
//     (1 GPU) cannot hold its gang, so only its fast pair;
//   - job 2 (ID 7, 1 GPU, runs on no type): no pair.
func TestScoredFeatureSet(t *testing.T) {
	s := &RoundState{Time: 7200, Types: []string{"fast", "slow"}, Capacity: []int{2, 1},
		Jobs: []RoundJob{{ID: 5, Scale: 1, Attained: 3600, StepsLeft: 7200}, {ID: 6, Scale: 2, Arrival: 3600, StepsLeft: 3600},
			{ID: 7, Scale: 1, Arrival: 3600}},
		Throughput: []float64{2, 1, 2, 1, 0, 0}}
	var fs ScoredFeatureSet
	fs.Compute(s, map[int]int{5: 1}, false)
	load := math.Log1p(4.0 / 3)
	want := [][]float64{
		{1, math.Log1p(1), math.Log1p(2), 0, 0, 0, 1, math.Log(2 * 2 / 3.0), 0.5, 0},
		{1, math.Log1p(1), math.Log1p(2), 0, math.Log(0.5), 1, 1, math.Log(2 * 2 / 3.0), 0.5, math.Log(0.5) * load},
		{1, 0, math.Log1p(1), 1, 0, 0, 0, math.Log(2 * 2 / 3.0), 0, 0},
	}
	if wantPairs := []ScoredPairRef{{0, 0}, {0, 1}, {1, 0}}; !slices.Equal(fs.Pairs, wantPairs) || fs.Dim != NumScoredFeatures {
		t.Fatalf("pairs %v (dim %d), want %v (dim %d)", fs.Pairs, fs.Dim, wantPairs, NumScoredFeatures)
	}
	for i, w := range want {
		if got := fs.Row(i); !slices.Equal(got, w) {
			t.Errorf("pair %v: features %v, want %v", fs.Pairs[i], got, w)
		}
	}
	// The clairvoyant feature: hours left alone on the type, and the
	// buffers are reused.
	fs.Compute(s, nil, true)
	if fs.Dim != NumScoredFeatures+1 || len(fs.X) != 3*fs.Dim {
		t.Fatalf("clairvoyant: dim %d, %d values", fs.Dim, len(fs.X))
	}
	for i, h := range []float64{7200 / 2.0 / 3600, 7200 / 1.0 / 3600, 3600 / 2.0 / 3600} {
		if got := fs.Row(i)[NumScoredFeatures]; got != math.Log1p(h) {
			t.Errorf("pair %v: %s %v, want ln(1+%v)", fs.Pairs[i], ClairvoyantFeature, got, h)
		}
		if r := fs.Row(i); r[5] != 0 || r[6] != 0 {
			t.Errorf("pair %v without a previous round: same_type %v, running %v", fs.Pairs[i], r[5], r[6])
		}
	}
}
