package env

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScoredPolicyAllocate checks a hand-computed round: two GPU types
// (fast with 2 GPUs, slow with 1) and three jobs.
//
// With weights bias 1, log_age 1, log_rel_thr 2 at time 1 h:
//   - job 0 (arrived at 0, age 1 h, 1 GPU): fast 1+ln2 = 1.693, slow
//     1+ln2+2·ln(0.5) = 0.307;
//   - job 1 (arrived at 1 h, age 0, gang of 2): fast 1, slow not possible
//     (2 GPUs > 1);
//   - job 2 (age 0, 1 GPU, slow only): 1.
//
// Best first: job 0 takes a fast GPU (1.693); job 1's gang (1.0) no longer
// fits the one fast GPU left; job 2 takes the slow GPU (1.0, after job 1 by
// index); job 0's slow pair comes after it is placed.
func TestScoredPolicyAllocate(t *testing.T) {
	w := make([]float64, NumScoredFeatures)
	w[0], w[2], w[4] = 1, 1, 2
	p := &ScoredPolicy{Weights: w}
	s := &RoundState{Time: 3600, Types: []string{"fast", "slow"}, Capacity: []int{2, 1},
		Jobs:       []RoundJob{{ID: 0, Scale: 1}, {ID: 1, Scale: 2, Arrival: 3600}, {ID: 2, Scale: 1, Arrival: 3600}},
		Throughput: []float64{2, 1, 2, 1, 0, 1}}
	x := make([]float64, 6)
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 0, 0, 0, 0, 1}; !slices.Equal(x, want) {
		t.Fatalf("x = %v, want %v", x, want)
	}
	// Next round: job 0 is done; job 1's gang now fits the fast type and
	// job 2 keeps the slow GPU.
	s.Jobs = s.Jobs[1:]
	s.Throughput = s.Throughput[2:]
	x = x[:4]
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if want := []float64{1, 0, 0, 1}; !slices.Equal(x, want) {
		t.Fatalf("second round x = %v, want %v", x, want)
	}
	// A negative bias keeps every GPU idle: no pair scores above 0.
	w[0] = -10
	if err := p.Allocate(s, x); err != nil || slices.Max(x) != 0 {
		t.Fatalf("negative scores allocated %v (%v)", x, err)
	}
	if err := (&ScoredPolicy{Weights: w[:3]}).Allocate(s, x); err == nil || !strings.Contains(err.Error(), "3 weights") {
		t.Fatalf("short weights: %v", err)
	}
}

func TestScoredPolicyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	w := DefaultScoredWeights()
	w[1] = -0.25
	if err := WriteScoredPolicy(path, w, map[string]any{"by": "test"}); err != nil {
		t.Fatal(err)
	}
	pol, err := AllocationPolicyByName(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := pol.(*ScoredPolicy).Weights; !slices.Equal(got, w) {
		t.Fatalf("weights %v, want %v", got, w)
	}
	for name, in := range map[string]string{
		"kind":     `{"kind":"x","features":[],"weights":[]}`,
		"features": `{"kind":"tegrl-scored-allocation","features":["bias"],"weights":[1]}`,
		"trailing": `{"kind":"tegrl-scored-allocation"} {}`,
		"unknown":  `{"kind":"tegrl-scored-allocation","extra":1}`,
	} {
		if _, err := ParseScoredPolicy([]byte(in)); err == nil {
			t.Errorf("%s: accepted %s", name, in)
		}
	}
	if pol, err := AllocationPolicyByName(filepath.Dir(path)); err != nil || !slices.Equal(pol.(*ScoredPolicy).Weights, w) {
		t.Fatalf("training folder: %v", err)
	}
	if _, err := AllocationPolicyByName(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing file accepted")
	}
}

// FuzzParseScoredPolicy: any input is refused with an error or gives a
// policy with one finite weight per feature (one more for a clairvoyant
// policy).
func FuzzParseScoredPolicy(f *testing.F) {
	f.Add([]byte(`{"kind":"tegrl-scored-allocation","features":["bias","log_attained","log_age","log2_scale","log_rel_thr","same_type","running","log_spread","served_frac","rel_thr_x_load"],"weights":[10,0,1,0,1,0,0,0,0,0]}`))
	f.Add([]byte(`{"kind":"tegrl-scored-allocation","features":["bias","log_attained","log_age","log2_scale","log_rel_thr","same_type","running","log_spread","served_frac","rel_thr_x_load"],"weights":[10,0,1,0,1,0,0,0,0,0],"exchange":true,"consolidate":true}`))
	f.Add([]byte(`{"kind":"tegrl-scored-allocation","features":["bias","log_attained","log_age","log2_scale","log_rel_thr","same_type","running","log_spread","served_frac","rel_thr_x_load","log_remaining_h"],"weights":[10,0,1,0,1,0,0,0,0,0,-1]}`))
	f.Add([]byte(`{"kind":"tegrl-scored-allocation","weights":[1e999]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseScoredPolicy(b)
		if err != nil {
			return
		}
		if len(p.Weights) != len(ScoredFeatureNames(p.Clairvoyant)) {
			t.Fatalf("%d weights, clairvoyant %v", len(p.Weights), p.Clairvoyant)
		}
		for k, w := range p.Weights {
			if math.IsNaN(w) || math.IsInf(w, 0) {
				t.Fatalf("weight %d is %v", k, w)
			}
		}
	})
}

// BenchmarkScoredAllocate is one allocation of the learned policy with 400
// active jobs on Gavel's three GPU types, the setting of
// BenchmarkLangevinAllocate.
func BenchmarkScoredAllocate(b *testing.B) {
	p := &ScoredPolicy{Weights: []float64{9.85, -0.79, 1.41, -0.14, 1.62, 0.59, -0.57, 0.38, -0.87, 0.74}}
	benchAllocate(b, p)
}

// BenchmarkScoredFeatures is the features alone of BenchmarkScoredAllocate's
// rounds: the part of a decision any policy reading these inputs pays
// before it scores a pair.
func BenchmarkScoredFeatures(b *testing.B) {
	var fs ScoredFeatureSet
	prev := map[int]int{}
	benchAllocate(b, allocFunc(func(s *RoundState, x []float64) error {
		fs.Compute(s, prev, false)
		return nil
	}))
}

// allocFunc is an AllocationPolicy of one function, for benchmarks.
type allocFunc func(s *RoundState, x []float64) error

func (allocFunc) Name() string                                { return "func" }
func (f allocFunc) Allocate(s *RoundState, x []float64) error { return f(s, x) }

// benchAllocate times p's allocations of 400 active gangs of 1-8 GPUs on
// Gavel's three GPU types, one allocation interval apart.
func benchAllocate(b *testing.B, p AllocationPolicy) { benchAllocateWith(b, p, nil) }

// benchAllocateWith is benchAllocate with edit applied to the round first.
func benchAllocateWith(b *testing.B, p AllocationPolicy, edit func(*RoundState)) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := &RoundState{Types: []string{"v100", "p100", "k80"}, Capacity: []int{36, 36, 36}}
	for i := range 400 {
		s.Jobs = append(s.Jobs, RoundJob{ID: i, Scale: 1 << rng.IntN(4), Arrival: float64(i), Attained: rng.Float64() * 36000, Priority: 1})
		for range 3 {
			s.Throughput = append(s.Throughput, 0.1+10*rng.Float64())
		}
	}
	if edit != nil {
		edit(s)
	}
	x := make([]float64, len(s.Jobs)*3)
	if err := p.Allocate(s, x); err != nil { // grows the buffers
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Time += 1920
		if err := p.Allocate(s, x); err != nil {
			b.Fatal(err)
		}
	}
}

// TestScoredPolicyClairvoyant: with weights bias 1 and log_remaining_h -1,
// a job's score on a type is 1 - ln(1 + its hours left there). One GPU:
// job 0 needs 2 h (score 1 - ln 3 < 0: never allocated), job 1 needs
// 0.5 h (1 - ln 1.5 = 0.59): job 1 runs and the slow job waits, as under
// shortest remaining time first. The file keeps the extra feature, and the
// policy says it is a bound.
func TestScoredPolicyClairvoyant(t *testing.T) {
	w := make([]float64, NumScoredFeatures+1)
	w[0], w[NumScoredFeatures] = 1, -1
	p := &ScoredPolicy{Weights: w, Clairvoyant: true}
	s := &RoundState{Time: 0, Types: []string{"v100"}, Capacity: []int{1},
		Jobs:       []RoundJob{{ID: 0, Scale: 1, StepsLeft: 7200}, {ID: 1, Scale: 1, StepsLeft: 1800}},
		Throughput: []float64{1, 1}}
	x := make([]float64, 2)
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if want := []float64{0, 1}; !slices.Equal(x, want) {
		t.Fatalf("x = %v, want %v", x, want)
	}
	if !IsClairvoyant(p) || IsClairvoyant(&ScoredPolicy{Weights: w[:NumScoredFeatures]}) {
		t.Fatal("IsClairvoyant wrong")
	}
	path := filepath.Join(t.TempDir(), "oracle.json")
	if err := WriteScoredPolicy(path, w, nil); err != nil {
		t.Fatal(err)
	}
	pol, err := AllocationPolicyByName(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := pol.(*ScoredPolicy); !got.Clairvoyant || !slices.Equal(got.Weights, w) || pol.Name() != "scored_clairvoyant" {
		t.Fatalf("read back %+v", got)
	}
	if err := WriteScoredPolicy(path, w[:3], nil); err == nil {
		t.Fatal("3 weights written")
	}
}
