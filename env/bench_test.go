package env

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// loadGPUTrace loads the bundled Alibaba GPU trace.
func loadGPUTrace(tb testing.TB) (*Cluster, *Workload) {
	tb.Helper()
	c, err := LoadAlibabaGPUNodes("")
	if err != nil {
		tb.Fatal(err)
	}
	w, err := LoadAlibabaGPUPods("", GPUTraceOptions{Compress: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return c, w
}

// BenchmarkSaturate is one seed of the FGD saturation experiment on the
// real trace (1,213 GPU machines, ~10.8k pods to 130% of GPU capacity).
func BenchmarkSaturate(b *testing.B) {
	c, w := loadGPUTrace(b)
	g := c.GPUMachines()
	for _, name := range []string{"fgd", "bestfit", "random"} {
		b.Run("scheduler="+name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				s, _ := NewScheduler(name)
				if _, err := Saturate(g, w.Jobs, s, 42, 1.3); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecide measures one placement decision on a half-full cluster:
// the cost per decision of each scheduler at two cluster sizes.
func BenchmarkDecide(b *testing.B) {
	for _, n := range []int{1523, 10000} {
		c, err := NewSyntheticCluster(n, 1)
		if err != nil {
			b.Fatal(err)
		}
		cfg := DefaultWorkload
		cfg.Horizon = 3600
		w, err := NewSyntheticWorkload(c, cfg, 1)
		if err != nil {
			b.Fatal(err)
		}
		for _, name := range SchedulerNames {
			b.Run(fmt.Sprintf("scheduler=%s/machines=%d", name, n), func(b *testing.B) {
				s, _ := NewScheduler(name)
				sim, err := NewSim(c, w, s, SimConfig{Seed: 1, Duration: 1800, MTBF: -1})
				if err != nil {
					b.Fatal(err)
				}
				sim.Run() // warm the cluster up
				st := sim.State()
				rng := rand.New(rand.NewPCG(1, 2))
				obs := Observation{State: st, Queue: 1}
				jobs := w.Jobs[len(w.Jobs)/2:]
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					j := &jobs[i%len(jobs)]
					obs.Job, obs.Req = j, st.Request(j)
					s.Decide(&obs, rng)
				}
			})
		}
	}
}

// warmSim returns a simulation of n synthetic machines at load after an
// hour of simulated time, with sched under its governor's defaults.
func warmSim(b testing.TB, n int, load float64, sched string) *Sim {
	b.Helper()
	c, err := NewSyntheticCluster(n, 1)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultWorkload
	cfg.Horizon, cfg.Load = 3*3600, load
	w, err := NewSyntheticWorkload(c, cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	s, _ := NewScheduler(sched)
	sim, err := NewSim(c, w, s, SimConfig{Seed: 1, Duration: cfg.Horizon})
	if err != nil {
		b.Fatal(err)
	}
	for sim.Now() < 3600 {
		sim.Step()
	}
	// Collect the set-up's garbage now, so that no collection it started
	// runs inside the timed loop.
	runtime.GC()
	return sim
}

// BenchmarkTick measures one simulation tick at about 70% load: arrivals,
// completions, scheduling, and, under langevin, the TEG dynamics (moves,
// controller, field). The cluster is warmed up for an hour first; the
// benchmark runs at most the remaining two hours of ticks.
func BenchmarkTick(b *testing.B) {
	for _, sched := range []string{"langevin", "p2c"} {
		for _, n := range []int{1000, 10000, 100000} {
			b.Run(fmt.Sprintf("scheduler=%s/machines=%d", sched, n), func(b *testing.B) {
				sim := warmSim(b, n, 0.7, sched)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if sim.Done() {
						b.StopTimer()
						sim = warmSim(b, n, 0.7, sched)
						b.StartTimer()
					}
					sim.Step()
				}
			})
		}
	}
}

// BenchmarkLangevinDecide measures one placement decision of the pure
// Langevin governor on a busy cluster: its cost must not grow with the
// number of machines.
func BenchmarkLangevinDecide(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			sim := warmSim(b, n, 0.7, "langevin")
			sched := &Langevin{}
			rng := rand.New(rand.NewPCG(1, 2))
			jobs := sim.w.Jobs[len(sim.w.Jobs)/2:]
			o := &sim.obs
			o.State = sim.state
			sim.view.refresh()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				j := &jobs[i%len(jobs)]
				o.Job, o.Req = j, sim.state.Request(j)
				sched.Decide(o, rng)
			}
		})
	}
}

// BenchmarkNodeFrag is F_n(M) of one 8-GPU machine against the real
// trace's typical workload.
func BenchmarkNodeFrag(b *testing.B) {
	c, w := loadGPUTrace(b)
	g := c.GPUMachines()
	s := NewState(g, 1)
	tw := NewTargetWorkload(w.Jobs, s)
	gpus := []int32{1000, 540, 0, 1000, 300, 1000, 1000, 700}
	b.ReportAllocs()
	b.ResetTimer()
	var sink float64
	for i := 0; i < b.N; i++ {
		sink += tw.NodeFrag(64000, 0, gpus)
	}
	_ = sink
}
