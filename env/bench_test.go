package env

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

const (
	gpuNodesCSV = "../../shared/traces/alibaba-gpu-v2023/nodes.csv"
	gpuPodsCSV  = "../../shared/traces/alibaba-gpu-v2023/pods.csv"
)

// loadGPUTrace loads the shared Alibaba GPU trace or skips.
func loadGPUTrace(tb testing.TB) (*Cluster, *Workload) {
	tb.Helper()
	if _, err := os.Stat(gpuNodesCSV); err != nil {
		tb.Skipf("shared trace not found at %s (a fresh clone has no ../shared): %v", gpuNodesCSV, err)
	}
	c, err := LoadAlibabaGPUNodes(gpuNodesCSV)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := LoadAlibabaGPUPods(gpuPodsCSV, GPUTraceOptions{Compress: 1})
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

// BenchmarkStep measures one simulation tick (arrivals, completions,
// scheduling) under p2c, whose decisions are O(1), so the figure is the
// simulator's own cost per tick.
func BenchmarkStep(b *testing.B) {
	for _, n := range []int{1523, 10000, 100000} {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			c, err := NewSyntheticCluster(n, 1)
			if err != nil {
				b.Fatal(err)
			}
			cfg := DefaultWorkload
			cfg.Horizon = 4 * 3600
			w, err := NewSyntheticWorkload(c, cfg, 1)
			if err != nil {
				b.Fatal(err)
			}
			sim, err := NewSim(c, w, &P2C{}, SimConfig{Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			for sim.Now() < 3600 { // warm up to a busy cluster
				sim.Step()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if sim.Done() {
					b.StopTimer()
					sim, _ = NewSim(c, w, &P2C{}, SimConfig{Seed: 1})
					for sim.Now() < 3600 {
						sim.Step()
					}
					b.StartTimer()
				}
				sim.Step()
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
