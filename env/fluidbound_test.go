package env

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// fluidTestTable: one job type A at 10 steps/s on a V100 and 2 on a K80,
// two A's sharing a V100 at pair steps/s each (no pair entry when 0).
func fluidTestTable(t *testing.T, pair float64) *ThroughputTable {
	t.Helper()
	v := `{"null": 10}`
	if pair > 0 {
		v = `{"null": 10, "('A', 1)": [` + fmt.Sprint(pair) + `, ` + fmt.Sprint(pair) + `]}`
	}
	tab, err := LoadThroughputTable(strings.NewReader(`{"v100": {"('A', 1)": ` + v + `}, "k80": {"('A', 1)": {"null": 2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestFluidBoundHand checks LPs solved by hand. One V100 and ten K80s;
// every job is an hour of work on the V100 (36,000 steps), five on a K80.
func TestFluidBoundHand(t *testing.T) {
	jobs := []DLJob{{Model: 0, Scale: 1, Steps: 36000}}
	for _, tc := range []struct {
		name       string
		pair, rate float64
		want       float64 // hours; 0: the cluster cannot keep up
	}{
		// Up to one job/h the V100 holds all the work: the floor.
		{"idle fast type", 0, 0.5, 1},
		{"fast type just full", 0, 1, 1},
		// At 2 jobs/h the V100 does 10 of the 20 steps/s, five K80s the
		// rest: 6 jobs running, 6 / 2 = 3 h.
		{"spill to the slow type", 0, 2, 3},
		// At 3 jobs/h every GPU is busy: 1 + 10 running, 11/3 h.
		{"every GPU busy", 0, 3, 11.0 / 3},
		{"above capacity", 0, 3.01, 0},
		// Sharing the V100 at 7 steps/s each does 14 steps/s with two jobs:
		// worse than one job alone while the V100 is free, ...
		{"pairs not worth it when idle", 7, 1, 1},
		// ... better when the rest would go to K80s: 14 + 2·3 = 20 steps/s
		// with 2 + 3 jobs running, 5 / 2 = 2.5 h.
		{"pairs beat the slow type", 7, 2, 2.5},
		// At 6 steps/s each the pair's 2 extra steps/s cost a job, as on K80s.
		{"pairs tie the slow type", 6, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := fluidTestTable(t, tc.pair)
			c, err := NewGPUCluster(tab, map[string]int{"v100": 1, "k80": 10}, 1)
			if err != nil {
				t.Fatal(err)
			}
			got, err := FluidBoundHours(c, jobs, tc.rate)
			if tc.want == 0 {
				if !errors.Is(err, ErrOverCapacity) {
					t.Fatalf("got %v, %v; want the cannot-keep-up error", got, err)
				}
				return
			}
			if err != nil || math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("got %v, %v; want %v h", got, err, tc.want)
			}
		})
	}
}

func TestFluidBoundErrors(t *testing.T) {
	tab := fluidTestTable(t, 0)
	c, err := NewGPUCluster(tab, map[string]int{"k80": 4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	jobs := []DLJob{{Model: 0, Scale: 1, Steps: 36000}}
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := FluidBoundHours(c, jobs, r); err == nil || !strings.Contains(err.Error(), "arrival rate") {
			t.Errorf("rate %v: got %v, want an arrival-rate error", r, err)
		}
	}
	if _, err := FluidBoundHours(c, nil, 1); err == nil {
		t.Error("no jobs: no error")
	}
	if _, err := FluidBoundHours(c, []DLJob{{Model: 0, Scale: 2, Steps: 1}}, 1); err == nil || !strings.Contains(err.Error(), "runs A at 2 GPUs") {
		t.Errorf("a gang the table has no throughput for: got %v", err)
	}
}

// fluidPrimal is the bound's LP in its primal form (running jobs per
// column, work rows as equalities, capacity rows with slacks), solved by
// gonum: the oracle for the dual the package solves.
func fluidPrimal(t *testing.T, c *GPUCluster, jobs []DLJob, rate float64) float64 {
	t.Helper()
	tab := c.Table
	type key struct{ m, s int }
	idx := map[key]int{}
	var cls []key
	var work []float64
	for _, j := range jobs {
		k := key{j.Model, j.Scale}
		if _, ok := idx[k]; !ok {
			idx[k] = len(cls)
			cls = append(cls, k)
			work = append(work, 0)
		}
		work[idx[k]] += j.Steps / float64(len(jobs)) * rate / 3600
	}
	type col struct {
		gain   map[int]float64
		jobs   float64
		typ, g int
	}
	var cols []col
	for a, ka := range cls {
		for ti, g := range c.Types {
			if r := tab.Throughput(ka.m, g, ka.s, false); r > 0 {
				cols = append(cols, col{map[int]float64{a: r}, 1, ti, ka.s})
			}
			for b := a; b < len(cls); b++ {
				if cls[b].s != ka.s {
					continue
				}
				if ta, tb, ok := tab.PairThroughput(ka.m, cls[b].m, g, ka.s); ok {
					gain := map[int]float64{a: ta}
					gain[b] += tb
					cols = append(cols, col{gain, 2, ti, ka.s})
				}
			}
		}
	}
	nc, nt := len(cls), len(c.Types)
	A := mat.NewDense(nc+nt, len(cols)+nt, nil)
	b := make([]float64, nc+nt)
	obj := make([]float64, len(cols)+nt)
	for i := range nc {
		b[i] = work[i]
	}
	for ti := range nt {
		b[nc+ti] = float64(c.Capacity[ti])
		A.Set(nc+ti, len(cols)+ti, 1)
	}
	for k, cl := range cols {
		for i, v := range cl.gain {
			A.Set(i, k, v)
		}
		A.Set(nc+cl.typ, k, float64(cl.g))
		obj[k] = cl.jobs
	}
	f, _, err := lp.Simplex(obj, A, b, 1e-10, nil)
	if err != nil {
		t.Fatalf("gonum simplex: %v", err)
	}
	return f / rate
}

// TestFluidBoundOracle compares the bound with gonum's solution of the
// primal LP on small random mixes of Gavel's job types, and checks that it
// never falls below the zero-wait floor and never falls as the rate rises.
func TestFluidBoundOracle(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	models := tab.Models
	for trial := range 12 {
		c, err := NewGPUCluster(tab, map[string]int{"v100": 1 + rng.IntN(4), "p100": 1 + rng.IntN(4), "k80": 1 + rng.IntN(8)}, 1)
		if err != nil {
			t.Fatal(err)
		}
		var jobs []DLJob
		for range 3 + rng.IntN(6) {
			m, sc := rng.IntN(len(models)), 1
			if rng.IntN(3) == 0 && tab.HasScale(m, 2) {
				sc = 2 // a gang takes two GPUs of a type's capacity
			}
			jobs = append(jobs, DLJob{Model: m, Scale: sc, Steps: 3600 * (1 + 20*rng.Float64()) * tab.Throughput(m, mustGPU(t, tab, "v100"), sc, false)})
		}
		floor := 0.0
		for _, j := range jobs {
			best := 0.0
			for _, g := range c.Types {
				best = math.Max(best, tab.Throughput(j.Model, g, j.Scale, false))
			}
			floor += j.Steps / best / 3600 / float64(len(jobs))
		}
		prev := 0.0
		for _, rate := range []float64{0.05, 0.2, 0.4, 0.6, 0.8} {
			got, err := FluidBoundHours(c, jobs, rate)
			if err != nil {
				if !errors.Is(err, ErrOverCapacity) {
					t.Fatalf("trial %d rate %v: %v", trial, rate, err)
				}
				break
			}
			want := fluidPrimal(t, c, jobs, rate)
			if math.Abs(got-want) > 1e-6*want {
				t.Fatalf("trial %d rate %v: %v h, gonum's primal %v h", trial, rate, got, want)
			}
			if got < floor*(1-1e-9) || got < prev*(1-1e-9) {
				t.Fatalf("trial %d rate %v: %v h below the floor %v or the lower rate's %v", trial, rate, got, floor, prev)
			}
			prev = got
		}
	}
}

func mustGPU(t *testing.T, tab *ThroughputTable, name string) int {
	t.Helper()
	g, err := tab.GPU(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestFluidBoundZeroWork(t *testing.T) {
	c, err := NewGPUCluster(fluidTestTable(t, 0), map[string]int{"v100": 1, "k80": 10}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A job with no work is done at arrival and halves the average.
	got, err := FluidBoundHours(c, []DLJob{{Model: 0, Scale: 1, Steps: 36000}, {Model: 0, Scale: 1}}, 1)
	if err != nil || math.Abs(got-0.5) > 1e-12 {
		t.Fatalf("got %v, %v; want 0.5 h", got, err)
	}
	if got, err := FluidBoundHours(c, []DLJob{{Model: 0, Scale: 1}}, 1); err != nil || got != 0 {
		t.Fatalf("only empty jobs: got %v, %v; want 0", got, err)
	}
	if _, err := FluidBoundHours(c, []DLJob{{ID: 3, Model: 0, Scale: 1, Steps: math.NaN()}}, 1); err == nil || !strings.Contains(err.Error(), "job 3") {
		t.Fatalf("NaN steps: got %v", err)
	}
}
