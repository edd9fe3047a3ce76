package env

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fragTarget is a hand-made typical workload over allocCluster's models
// (T4 = model 0, V100M16 = model 1). Weights are dyadic so every product and
// sum below is exact in float64.
//
//	A: 4000m CPU, 1 x 500 milli (share), any model,   weight 1/2
//	B: 8000m CPU, 2 x 1000 milli (whole), any model,  weight 1/4
//	C: 2000m CPU, CPU-only,                           weight 1/8
//	D: 1000m CPU, 1 x 200 milli (share), T4 only,     weight 1/8
func fragTarget() *TargetWorkload {
	return &TargetWorkload{Classes: []TaskClass{
		{CPU: 4000, Milli: 500, GPUs: 1, Weight: 0.5},
		{CPU: 8000, Milli: 1000, GPUs: 2, Weight: 0.25},
		{CPU: 2000, Weight: 0.125},
		{CPU: 1000, Milli: 200, GPUs: 1, Models: 1 << 0, Weight: 0.125},
	}}
}

func TestNodeFragHandComputed(t *testing.T) {
	tw := fragTarget()
	const v100, t4 = 1, 0
	cases := []struct {
		name  string
		cpu   int64
		model int
		gpus  []int32
		want  float64
	}{
		// Case 1: no GPUs -> 0 whatever the classes.
		{"no GPUs", 16000, -1, nil, 0},
		// GPUs [1000 600 300 0], U = 1900, CPU 16000, V100:
		//  A: 1000 and 600 fit 500, CPU ok -> slivers < 500: 300+0 = 300
		//  B: needs 2 GPUs with 1000: only one -> U = 1900
		//  C: CPU-only -> U = 1900
		//  D: T4 only, node is V100 -> U = 1900
		//  F = 0.5*300 + 0.25*1900 + 0.125*1900 + 0.125*1900
		//    = 150 + 475 + 237.5 + 237.5 = 1100
		{"V100 mixed", 16000, v100, []int32{1000, 600, 300, 0}, 1100},
		// Same GPUs on a T4 node: D fits (1000, 600, 300 >= 200), its
		// slivers are < 200: just the 0 -> 0. F = 150+475+237.5+0 = 862.5
		{"T4 mixed", 16000, t4, []int32{1000, 600, 300, 0}, 862.5},
		// CPU 3000 < 4000: A does not fit -> 1900; D (1000m) still fits on T4.
		// F = 0.5*1900 + 475 + 237.5 + 0 = 1662.5
		{"T4 low CPU", 3000, t4, []int32{1000, 600, 300, 0}, 1662.5},
		// CPU 500: nothing GPU fits on CPU: 1900 * (0.5+0.25+0.125+0.125) = 1900
		{"no CPU", 500, t4, []int32{1000, 600, 300, 0}, 1900},
		// GPUs [1000 1000 600 300], U = 2900, CPU 16000, V100:
		//  A: slivers < 500: 300 -> 150
		//  B: two GPUs of 1000, CPU 16000 >= 8000 -> slivers < 1000: 900 -> 225
		//  C: 2900 -> 362.5;  D: mismatch -> 362.5.   F = 1100
		{"V100 two free", 16000, v100, []int32{1000, 1000, 600, 300}, 1100},
		// Same with CPU 6000: B fails on CPU -> 0.25*2900 = 725.
		// F = 150 + 725 + 362.5 + 362.5 = 1600
		{"V100 two free low CPU", 6000, v100, []int32{1000, 1000, 600, 300}, 1600},
		// CPU exactly 8000 = B's request: B fits (>=), slivers 900 -> 225.
		// F = 150 + 225 + 362.5 + 362.5 = 1100
		{"V100 two free, CPU = B's", 8000, v100, []int32{1000, 1000, 600, 300}, 1100},
		// Fully used GPUs: U = 0, every case gives 0.
		{"full", 16000, v100, []int32{0, 0, 0, 0}, 0},
		// Idle V100: A, B fit with no slivers; C, D give U = 4000 each.
		// F = 0 + 0 + 500 + 500 = 1000
		{"V100 idle", 32000, v100, []int32{1000, 1000, 1000, 1000}, 1000},
	}
	for _, c := range cases {
		if got := tw.NodeFrag(c.cpu, c.model, c.gpus); got != c.want {
			t.Errorf("%s: NodeFrag = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestStateFragmentation builds the GPU free vector [1000 600 300 0] on a
// real state and checks MachineFrag and the cluster totals.
func TestStateFragmentation(t *testing.T) {
	s := NewState(allocCluster(t), 1)
	if f, r := s.Fragmentation(); f != 0 || r != 0 {
		t.Fatalf("no target: Fragmentation = %v, %v, want 0, 0", f, r)
	}
	s.Target = fragTarget()
	// Machine 0 (V100, CPU 32000): four shares of 4000m CPU each leave
	// 16000m CPU and GPUs [1000 600 300 0].
	mustAlloc(t, s, 0, shareJob(4000, 1000, 600), 3)
	mustAlloc(t, s, 0, shareJob(4000, 1000, 400), 3)
	mustAlloc(t, s, 0, shareJob(4000, 1000, 400), 1)
	mustAlloc(t, s, 0, shareJob(4000, 1000, 700), 2)
	if got := s.MachineFrag(0); got != 1100 {
		t.Fatalf("MachineFrag(0) = %v, want 1100 (see TestNodeFragHandComputed)", got)
	}
	// Machine 1: idle V100, CPU 32000 -> 1000 (case "V100 idle").
	// Machine 2: no GPUs -> 0.
	// Machine 3: idle T4 x2, CPU 16000, U = 2000: A 0, B 0 (2 free GPUs,
	// CPU ok), C 0.125*2000 = 250, D fits on T4 -> 0. F = 250.
	want := []float64{1100, 1000, 0, 250}
	for i, w := range want {
		if got := s.MachineFrag(i); got != w {
			t.Errorf("MachineFrag(%d) = %v, want %v", i, got, w)
		}
	}
	// F(M) = 2350; idle = 1900 + 4000 + 0 + 2000 = 7900.
	f, r := s.Fragmentation()
	if f != 2350 || r != 2350.0/7900.0 {
		t.Fatalf("Fragmentation = %v, %v, want 2350, %v", f, r, 2350.0/7900.0)
	}
	// A down machine contributes neither fragmentation nor idle GPUs:
	// F = 1350, idle = 3900.
	s.setUp(1, false)
	if got := s.MachineFrag(1); got != 0 {
		t.Fatalf("MachineFrag of a down machine = %v, want 0", got)
	}
	f, r = s.Fragmentation()
	if f != 1350 || r != 1350.0/3900.0 {
		t.Fatalf("with machine 1 down: Fragmentation = %v, %v, want 1350, %v", f, r, 1350.0/3900.0)
	}
	// No idle GPU at all: ratio 0, no division by zero.
	s.setUp(1, true)
	mustAlloc(t, s, 0, shareJob(1, 1, 600), 1)
	mustAlloc(t, s, 0, shareJob(1, 1, 300), 2)
	mustAlloc(t, s, 0, wholeJob(1, 1, 1), -1)
	mustAlloc(t, s, 1, wholeJob(1, 1, 4), -1)
	mustAlloc(t, s, 3, wholeJob(1, 1, 2), -1)
	if f, r := s.Fragmentation(); f != 0 || r != 0 {
		t.Fatalf("all GPUs used: Fragmentation = %v, %v, want 0, 0", f, r)
	}
}

func TestNewTargetWorkload(t *testing.T) {
	s := NewState(allocCluster(t), 1)
	var jobs []Job
	add := func(n int, j Job) {
		for range n {
			jobs = append(jobs, j)
		}
	}
	v100t4 := shareJob(1000, 64, 200)
	v100t4.GPUModels = []string{"V100M16", "T4"}
	t4v100 := shareJob(1000, 32, 200)
	t4v100.GPUModels = []string{"T4", "V100M16"}
	add(10, shareJob(4000, 1000, 500)) // A
	add(3, wholeJob(8000, 1000, 2))    // B
	add(2, wholeJob(8000, 5000, 2))    // B again: memory is ignored
	for k := range 4 {                 // C: CPU-only, memory varies
		add(1, cpuJob(2000, int64(1000*k)))
	}
	add(1, v100t4) // D: model order does not matter
	add(1, t4v100)
	add(1, wholeJob(8000, 1000, 1)) // E: 1 whole GPU differs from B
	// 22 jobs: A 10, B 5, C 4, D 2, E 1. 95% of 22 = 20.9: the prefix
	// A (10) + B (15) + C (19) + D (21 >= 20.9) is kept; E is dropped.
	tw := NewTargetWorkload(jobs, s)
	want := []TaskClass{
		{CPU: 4000, Milli: 500, GPUs: 1, Count: 10, Weight: 10.0 / 21},
		{CPU: 8000, Milli: 1000, GPUs: 2, Count: 5, Weight: 5.0 / 21},
		{CPU: 2000, Count: 4, Weight: 4.0 / 21},
		{CPU: 1000, Milli: 200, GPUs: 1, Models: 0b11, Count: 2, Weight: 2.0 / 21},
	}
	if len(tw.Classes) != len(want) {
		t.Fatalf("got %d classes %+v, want %d", len(tw.Classes), tw.Classes, len(want))
	}
	for i := range want {
		if tw.Classes[i] != want[i] {
			t.Errorf("class %d = %+v, want %+v", i, tw.Classes[i], want[i])
		}
	}

	// Exactly 95%: counts 50, 45, 5 of 100: the prefix 50+45 = 95 covers
	// 95% and the smallest prefix stops there.
	jobs = jobs[:0]
	add(50, shareJob(1000, 1, 100))
	add(45, shareJob(2000, 1, 100))
	add(5, shareJob(3000, 1, 100))
	tw = NewTargetWorkload(jobs, s)
	if len(tw.Classes) != 2 || tw.Classes[0].Weight != 50.0/95 || tw.Classes[1].Weight != 45.0/95 {
		t.Fatalf("95%% boundary: %+v, want two classes weighted 50/95 and 45/95", tw.Classes)
	}

	// 90, 6, 4 of 100: 90 is below 95, so 90+6 = 96 is the prefix.
	jobs = jobs[:0]
	add(90, shareJob(1000, 1, 100))
	add(4, shareJob(3000, 1, 100))
	add(6, shareJob(2000, 1, 100))
	tw = NewTargetWorkload(jobs, s)
	if len(tw.Classes) != 2 || tw.Classes[0].Weight != 90.0/96 || tw.Classes[1].CPU != 2000 || tw.Classes[1].Weight != 6.0/96 {
		t.Fatalf("90/6/4: %+v, want two classes weighted 90/96 and 6/96", tw.Classes)
	}

	// Equal counts are ordered by the key (CPU ascending), so the result
	// is deterministic: 1 + 1 + 1 of 3: 95% needs all three.
	jobs = jobs[:0]
	add(1, cpuJob(3000, 1))
	add(1, cpuJob(1000, 1))
	add(1, cpuJob(2000, 1))
	tw = NewTargetWorkload(jobs, s)
	if len(tw.Classes) != 3 || tw.Classes[0].CPU != 1000 || tw.Classes[1].CPU != 2000 || tw.Classes[2].CPU != 3000 {
		t.Fatalf("tie order: %+v, want CPU 1000, 2000, 3000", tw.Classes)
	}
	for _, c := range tw.Classes {
		if c.Weight != 1.0/3 {
			t.Fatalf("tie weights: %+v, want 1/3 each", tw.Classes)
		}
	}

	// No jobs: no classes, and fragmentation against it is 0.
	tw = NewTargetWorkload(nil, s)
	if len(tw.Classes) != 0 || tw.NodeFrag(1000, 1, []int32{500}) != 0 {
		t.Fatalf("empty workload: %+v", tw.Classes)
	}
}

func TestTargetWorkloadString(t *testing.T) {
	tw := &TargetWorkload{Classes: []TaskClass{
		{CPU: 4000, Milli: 500, GPUs: 1, Weight: 0.5},
		{CPU: 2000, Weight: 0.25},
	}}
	if got, want := tw.String(), "4000m/1x500/0.5, 2000m/0x0/0.25"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

// TestNodeFragSorted: NodeFrag (sorted free amounts and prefix sums) is
// the per-class loop of the protocol to the bit, on random machines (1-16
// GPUs, ties, empty and full GPUs, model masks, CPU limits) and on a
// machine too large to sort on the stack.
func TestNodeFragSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	levels := []int32{0, 100, 200, 250, 300, 500, 540, 700, 999, 1000}
	var classes []TaskClass
	for k := 0; k < 24; k++ {
		c := TaskClass{CPU: int64(rng.IntN(8)) * 4000, Milli: levels[rng.IntN(len(levels))], GPUs: rng.IntN(5), Weight: rng.Float64()}
		if rng.IntN(3) == 0 {
			c.Models = uint64(1 + rng.IntN(7))
		}
		classes = append(classes, c)
	}
	tw := &TargetWorkload{Classes: classes}
	for trial := 0; trial < 20000; trial++ {
		n := 1 + rng.IntN(16)
		if trial == 0 {
			n = maxSortedGPUs + 3
		}
		gpus := make([]int32, n)
		for k := range gpus {
			gpus[k] = levels[rng.IntN(len(levels))]
		}
		cpu, model := int64(rng.IntN(40000)), rng.IntN(4)-1
		got, want := tw.NodeFrag(cpu, model, gpus), tw.nodeFragLoop(cpu, model, gpus)
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("gpus %v cpu %d model %d: %v, loop %v", gpus, cpu, model, got, want)
		}
	}
}
