package env

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestAlloXHand(t *testing.T) {
	// One V100, one K80, three jobs with 10 steps left: A runs 10 and 1
	// steps/s (1 s and 10 s), B 5 and 5 (2 s, 2 s), C 1 and 2 (10 s, 5 s).
	// The least total completion time, 9 s, runs A then B on the V100 (A at
	// position 2: 2·1 + 1·2) and C on the K80 (5): A and C start now.
	s := round([]string{"v100", "k80"}, []int{1, 1}, [][]float64{{10, 1}, {5, 5}, {1, 2}})
	for i := range s.Jobs {
		s.Jobs[i].StepsLeft = 10
	}
	x := make([]float64, 6)
	p := &AlloX{}
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	wantX(t, "first", x, []float64{1, 0, 0, 0, 0, 1})
	// A round later nothing is free: A and C keep their GPUs, B waits.
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	wantX(t, "second", x, []float64{1, 0, 0, 0, 0, 1})
	// A finishes: B takes the V100, C keeps the K80.
	s.Jobs = s.Jobs[1:]
	s.Throughput = s.Throughput[2:]
	x = x[:4]
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	wantX(t, "after A", x, []float64{1, 0, 0, 1})
	s.Jobs[0].Scale = 2
	s.Capacity = []int{2, 1}
	if err := p.Allocate(s, x); err == nil {
		t.Fatal("a gang of 2 accepted")
	}
}

// bruteSumCompletion is the least Σ completion time of jobs with run times
// p[i][type] on GPUs of the given types: every assignment of jobs to GPUs,
// each GPU running its jobs shortest first.
func bruteSumCompletion(p [][]float64, gpus []int) float64 {
	n := len(p)
	best := math.Inf(1)
	assign := make([]int, n)
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			total := 0.0
			for g, typ := range gpus {
				var ts []float64
				for a, gg := range assign {
					if gg == g {
						ts = append(ts, p[a][typ])
					}
				}
				slices.Sort(ts)
				clock := 0.0
				for _, v := range ts {
					clock += v
					total += clock
				}
			}
			best = min(best, total)
			return
		}
		for g := range gpus {
			assign[i] = g
			rec(i + 1)
		}
	}
	rec(0)
	return best
}

func TestAlloXMatchingOptimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := range 200 {
		n := 1 + rng.IntN(5)
		capacity := []int{1 + rng.IntN(2), rng.IntN(3)}
		var gpus []int
		for j, c := range capacity {
			for range c {
				gpus = append(gpus, j)
			}
		}
		p := make([][]float64, n)
		var f mcf
		f.reset(n)
		for j, c := range capacity {
			if c == 0 {
				continue
			}
			for k := 1; k <= (n+c-1)/c; k++ {
				f.addSlot(j, k, c)
			}
		}
		f.cost = make([]float64, n*len(f.slots))
		for a := range n {
			p[a] = []float64{0.5 + rng.Float64()*5, 0.5 + rng.Float64()*5}
			for sl, slot := range f.slots {
				f.cost[a*len(f.slots)+sl] = float64(slot.pos) * p[a][slot.typ]
			}
		}
		if err := f.solve(); err != nil {
			t.Fatal(err)
		}
		got := 0.0
		for a, sl := range f.match {
			got += f.cost[a*len(f.slots)+sl]
		}
		if want := bruteSumCompletion(p, gpus); math.Abs(got-want) > 1e-9*want {
			t.Fatalf("trial %d: matching costs %v, best %v", trial, got, want)
		}
	}
}
