package env

import (
	"math"
	"testing"
)

func roundState(types int, capacity []int, thr [][]float64, scale []int) *RoundState {
	s := &RoundState{Capacity: capacity}
	for j := range types {
		s.Types = append(s.Types, string(rune('a'+j)))
	}
	for i, row := range thr {
		sc := 1
		if scale != nil {
			sc = scale[i]
		}
		s.Jobs = append(s.Jobs, RoundJob{ID: i, Scale: sc, Arrival: float64(i), Priority: 1})
		s.Throughput = append(s.Throughput, row...)
	}
	return s
}

func checkX(t *testing.T, name string, got, want []float64) {
	t.Helper()
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("%s: x = %v, want %v", name, got, want)
		}
	}
}

func ones(n, nt int) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, nt)
		for j := range out[i] {
			out[i][j] = 1
		}
	}
	return out
}

// TestFIFOBase follows Gavel's base FIFO by hand on types (k80, p100,
// v100) with 1, 1 and 2 GPUs and five jobs, seed 0 (CPython's
// Random(0).randrange(3) draws 1, 1): jobs 0 and 1 go to v100 (the last
// type in name order); v100 is then full and the list of free types loses
// index 1 of the fitting types (p100) instead of v100; jobs 2-4 go to the
// last type of the list, still v100, overcommitting it.
func TestFIFOBase(t *testing.T) {
	p := &FIFO{}
	p.Seed(0)
	s := roundState(3, []int{1, 1, 2}, ones(5, 3), nil)
	x := make([]float64, 15)
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	checkX(t, "first", x, []float64{0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1})
	// Job 0 finished, job 5 arrived: it inherits job 0's type.
	s.Jobs = append(s.Jobs[1:], RoundJob{ID: 5, Scale: 1, Arrival: 5, Priority: 1})
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	checkX(t, "second", x, []float64{0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1})
}

// TestFIFOPerf: in arrival order each job takes the free type where it is
// fastest: job 0 v100 (3), job 1 p100 (5 > 1), job 2 the last free, k80;
// job 3 finds none.
func TestFIFOPerf(t *testing.T) {
	s := roundState(3, []int{1, 1, 1}, [][]float64{{1, 2, 3}, {1, 5, 2}, {4, 1, 1}, {9, 9, 9}}, nil)
	x := make([]float64, 12)
	if err := (&FIFO{Perf: true}).Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	checkX(t, "fifo_perf", x, []float64{0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 0})
}

// TestMaxMinFairness: 3 GPUs (2 of type a, 1 of b), three 1-GPU jobs and a
// 2-GPU job: water level τ = 3/4, so the 1-GPU jobs get y = 3/4 and the
// 2-GPU job 3/8, spread 2:1 over the types. Below capacity every job gets
// y = 1; a job that cannot run on b gets all of it on a.
func TestMaxMinFairness(t *testing.T) {
	p := &MaxMinFairness{}
	s := roundState(2, []int{2, 1}, ones(4, 2), []int{1, 1, 1, 2})
	x := make([]float64, 8)
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	checkX(t, "overloaded", x, []float64{0.5, 0.25, 0.5, 0.25, 0.5, 0.25, 0.25, 0.125})
	s = roundState(2, []int{2, 1}, [][]float64{{1, 1}, {1, 0}}, nil)
	x = x[:4]
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	checkX(t, "underloaded", x, []float64{2.0 / 3, 1.0 / 3, 1, 0})
}

// TestGandiva: below capacity each of m jobs gets capacity_j/m of each
// type, scaled so the row sums to 1; above, seed 0 pairs jobs 1 and 2
// (CPython's Random(0).sample of three is [1, 2]) and job 0 runs alone, each
// of the m = 2 combinations getting half of each type.
func TestGandiva(t *testing.T) {
	p := &Gandiva{}
	p.Seed(0)
	s := roundState(2, []int{2, 2}, ones(3, 2), nil)
	s.Pair = func(i, k, j int) (float64, float64, bool) { return 0.6, 0.6, true }
	x := make([]float64, 6)
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	checkX(t, "underloaded", x, []float64{0.5, 0.5, 0.5, 0.5, 0.5, 0.5})
	if len(p.Pairs(s)) != 0 {
		t.Fatal("pairs below capacity")
	}
	s.Capacity = []int{1, 1}
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	checkX(t, "overloaded", x, []float64{0.5, 0.5, 0, 0, 0, 0})
	ps := p.Pairs(s)
	if len(ps) != 1 || ps[0].A != 1 || ps[0].B != 2 {
		t.Fatalf("pairs %+v, want 1 and 2", ps)
	}
	checkX(t, "pair", ps[0].X, []float64{0.5, 0.5})
	// A pair that cannot progress somewhere is dropped at the next call
	// (below capacity, so it is not re-paired).
	s.Pair = func(i, k, j int) (float64, float64, bool) { return 0, 0, false }
	s.Capacity = []int{2, 2}
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.mate[1]; ok {
		t.Fatal("unproductive pair kept")
	}
}

// TestTiresias: queues by attained service (thresholds 1 and 10 GPU-hours):
// C (100 GPU-s, arrived 5) and B (0, arrived 10) first, then A (5000), then D
// (40000); each takes the type with most free GPUs: C type b, B type a
// (tie, first), A type b; D nothing.
func TestTiresias(t *testing.T) {
	s := roundState(2, []int{1, 2}, ones(4, 2), nil)
	for i, c := range []struct{ arr, att float64 }{{0, 5000}, {10, 0}, {5, 100}, {1, 40000}} {
		s.Jobs[i].Arrival, s.Jobs[i].Attained = c.arr, c.att
	}
	x := make([]float64, 8)
	if err := (&Tiresias{}).Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	checkX(t, "tiresias", x, []float64{0, 1, 1, 0, 0, 1, 0, 0})
}

// TestSRTFOracle: remaining time on the fastest type: job 1 5 s, job 0
// 10 s, job 2 10 s (after job 0 on the tie); job 1 takes its fastest type
// b, job 0 the free a, job 2 nothing.
func TestSRTFOracle(t *testing.T) {
	s := roundState(2, []int{1, 1}, [][]float64{{1, 10}, {1, 2}, {100, 50}}, nil)
	for i, left := range []float64{100, 10, 1000} {
		s.Jobs[i].StepsLeft = left
	}
	x := make([]float64, 6)
	if err := (&SRTFOracle{}).Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	checkX(t, "srtf", x, []float64{1, 0, 0, 1, 0, 0})
}
