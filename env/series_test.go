package env

import (
	"encoding/json"
	"math"
	"testing"
)

// seriesSim is smallSim (120 machines, 2 h, failures on) with a series
// configuration.
func seriesSim(t testing.TB, sched string, seed uint64, sc SeriesConfig) *Sim {
	t.Helper()
	c, err := NewSyntheticCluster(120, seed)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultWorkload
	cfg.Horizon = 2 * 3600
	w, err := NewSyntheticWorkload(c, cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewScheduler(sched)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := NewSim(c, w, s, SimConfig{Seed: seed, Duration: cfg.Horizon, MTBF: 2 * 86400, Series: sc})
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

// TestSeriesChangesNothing: recording reads the run and never steers it, so
// the metrics are byte-identical with the series off and on (langevin reads
// the fragmentation cache the sampler must not refresh).
func TestSeriesChangesNothing(t *testing.T) {
	for _, name := range []string{"langevin", "fgd", "kube"} {
		off := seriesSim(t, name, 5, SeriesConfig{})
		mOff, _ := json.Marshal(off.Run())
		if off.Series() != nil {
			t.Errorf("%s: series recorded while off", name)
		}
		for _, sc := range []SeriesConfig{{Every: 1}, {Every: 6}, {Every: 7, MaxSamples: 8}} {
			mOn, _ := json.Marshal(seriesSim(t, name, 5, sc).Run())
			if string(mOff) != string(mOn) {
				t.Errorf("%s series %+v: metrics differ from the run without series:\n%s\n%s", name, sc, mOff, mOn)
			}
		}
	}
}

// TestSeriesHooksOffDoNotAllocate: with the series off, the per-tick and
// per-completion hooks are a nil check.
func TestSeriesHooksOffDoNotAllocate(t *testing.T) {
	sim := seriesSim(t, "fgd", 1, SeriesConfig{})
	allocs := testing.AllocsPerRun(100, func() {
		sim.seriesTick()
		sim.seriesSkip(1000)
		sim.seriesJob(0, 10, 1)
	})
	if allocs != 0 {
		t.Errorf("series hooks off: %v allocs per call, want 0", allocs)
	}
}

// TestSeriesSamples: a 2 h run of 10 s ticks has 720 ticks; every 6 ticks
// gives 120 samples at ticks 6, 12, ..., 720, each at its tick's time.
func TestSeriesSamples(t *testing.T) {
	sim := seriesSim(t, "langevin", 3, SeriesConfig{Every: 6})
	m := sim.Run()
	sr := sim.Series()
	if m.Ticks != 720 || len(sr.Samples) != 120 || sr.Every != 6 {
		t.Fatalf("ticks %d, %d samples every %d; want 720, 120 every 6", m.Ticks, len(sr.Samples), sr.Every)
	}
	sawQueue := false
	for k, x := range sr.Samples {
		if x.Tick != 6*(k+1) || x.TimeS != float64(60*(k+1)) {
			t.Fatalf("sample %d at tick %d, %v s; want tick %d, %d s", k, x.Tick, x.TimeS, 6*(k+1), 60*(k+1))
		}
		for _, v := range []float64{x.UtilCPU, x.UtilGPU, x.GPUFragRate} {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("sample %d: fraction %v outside [0, 1]: %+v", k, v, x)
			}
		}
		if x.Damping < 0 {
			t.Fatalf("sample %d: negative damping %v", k, x.Damping)
		}
		sawQueue = sawQueue || x.QueueLen > 0
	}
	if !sawQueue {
		t.Error("the queue was empty in every sample")
	}
	// The last sample is the state at the end of the run.
	last, st := sr.Samples[len(sr.Samples)-1], sim.State()
	frag, _ := st.Fragmentation()
	if last.UtilCPU != float64(st.UsedCPU)/float64(st.CapCPU) || last.UtilGPU != float64(st.UsedGPU)/float64(st.CapGPU) ||
		math.Abs(last.GPUFragRate-frag/float64(st.CapGPU)) > 1e-9 || last.QueueLen != m.JobsQueued {
		t.Errorf("last sample %+v; state: cpu %v, gpu %v, frag %v, queue %d", last,
			float64(st.UsedCPU)/float64(st.CapCPU), float64(st.UsedGPU)/float64(st.CapGPU), frag/float64(st.CapGPU), m.JobsQueued)
	}
}

// TestSeriesBounded: at most MaxSamples are kept; a full series drops every
// other sample and doubles its interval. 720 ticks every 6 is 120 samples;
// with 16 at most: every 12 (60), 24 (30), 48 (15 samples at 48..720).
func TestSeriesBounded(t *testing.T) {
	sim := seriesSim(t, "fgd", 3, SeriesConfig{Every: 6, MaxSamples: 16})
	sim.Run()
	sr := sim.Series()
	if sr.Every != 48 || len(sr.Samples) != 15 {
		t.Fatalf("every %d, %d samples; want 48, 15", sr.Every, len(sr.Samples))
	}
	for k, x := range sr.Samples {
		if x.Tick != 48*(k+1) {
			t.Fatalf("sample %d at tick %d, want %d", k, x.Tick, 48*(k+1))
		}
	}
	if cap(sr.Samples) > 16 {
		t.Errorf("sample buffer grew to %d, want <= 16", cap(sr.Samples))
	}
}

// TestSeriesSkippedTicks: ticks the simulation jumps over while idle are
// sampled too. Jobs arrive at 0 and 1000 s on one machine; the run has 101
// ticks, most of them skipped; every 5 ticks gives samples at 5..100.
func TestSeriesSkippedTicks(t *testing.T) {
	c := &Cluster{
		Machines: []Machine{newMachine("a", 8000, 8192, 0, "", 0)},
		Racks:    []Rack{{Name: "r", Leaf: 0}},
		Leaves:   []Leaf{{Name: "l"}},
		Zones:    []Zone{{Name: "z"}},
	}
	c.finish()
	w := &Workload{Name: "gap", Jobs: []Job{
		{ID: 0, Name: "a", Arrival: 0, Duration: 10, CPU: 2000, Mem: 1024, Service: -1},
		{ID: 1, Name: "b", Arrival: 1000, Duration: 10, CPU: 4000, Mem: 1024, Service: -1},
	}}
	sim, err := NewSim(c, w, &BestFit{}, SimConfig{Seed: 1, Tick: 10, MTBF: -1, Series: SeriesConfig{Every: 5}})
	if err != nil {
		t.Fatal(err)
	}
	m := sim.Run()
	sr := sim.Series()
	if m.Ticks != 101 || len(sr.Samples) != 20 {
		t.Fatalf("ticks %d, %d samples; want 101, 20", m.Ticks, len(sr.Samples))
	}
	for k, x := range sr.Samples {
		if x.Tick != 5*(k+1) || x.TimeS != float64(50*(k+1)) || x.QueueLen != 0 {
			t.Errorf("sample %d: %+v; want tick %d at %d s, empty queue", k, x, 5*(k+1), 50*(k+1))
		}
		// Job a runs over ticks 1..2 (0 s + 10 s of work, placed at 10 s),
		// b from tick 100 (placed at 1000 s): CPU 2/8 then 4/8, else 0.
		want := 0.0
		if x.Tick == 100 {
			want = 0.5
		}
		if x.UtilCPU != want {
			t.Errorf("sample %d (tick %d): cpu %v, want %v", k, x.Tick, x.UtilCPU, want)
		}
	}
	if len(sr.Jobs) != 2 || sr.Jobs[0].ID != 0 || sr.Jobs[1].ID != 1 {
		t.Fatalf("job outcomes %+v", sr.Jobs)
	}
	for _, o := range sr.Jobs {
		j := &w.Jobs[o.ID]
		if o.JCTS != o.EndS-j.Arrival || o.Slowdown != o.JCTS/j.Duration {
			t.Errorf("outcome %+v inconsistent with job %+v", o, *j)
		}
	}
}

// TestSeriesJobOutcomes: one outcome per completed job, and the metrics'
// means are exactly the means of the outcomes (same order of summation).
func TestSeriesJobOutcomes(t *testing.T) {
	for _, name := range []string{"langevin", "bestfit"} {
		sim := seriesSim(t, name, 9, SeriesConfig{Every: 60})
		m := sim.Run()
		jobs := sim.Series().Jobs
		if len(jobs) != m.JobsCompleted || m.JobsCompleted == 0 {
			t.Fatalf("%s: %d job outcomes, %d jobs completed", name, len(jobs), m.JobsCompleted)
		}
		var jct, slow float64
		seen := map[int]bool{}
		for _, o := range jobs {
			if seen[o.ID] {
				t.Fatalf("%s: job %d completed twice", name, o.ID)
			}
			seen[o.ID] = true
			jct += o.JCTS
			slow += o.Slowdown
		}
		if jct/float64(len(jobs)) != m.MeanJCTS || slow/float64(len(jobs)) != m.MeanSlowdown {
			t.Errorf("%s: outcome means %v, %v; metrics %v, %v", name, jct/float64(len(jobs)), slow/float64(len(jobs)), m.MeanJCTS, m.MeanSlowdown)
		}
	}
}

func TestSeriesConfigErrors(t *testing.T) {
	c, _ := NewSyntheticCluster(10, 1)
	for _, sc := range []SeriesConfig{{Every: -1}, {Every: 5, MaxSamples: -1}, {Every: 5, MaxSamples: 1}} {
		if _, err := NewSim(c, &Workload{}, &Random{}, SimConfig{Series: sc}); err == nil {
			t.Errorf("series config %+v accepted", sc)
		}
	}
}

// BenchmarkRunSeries: the cost of recording on a 2 h run of 120 machines.
func BenchmarkRunSeries(b *testing.B) {
	for _, tc := range []struct {
		name string
		sc   SeriesConfig
	}{{"off", SeriesConfig{}}, {"every6", SeriesConfig{Every: 6}}} {
		b.Run("series="+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				sim := seriesSim(b, "langevin", 1, tc.sc)
				b.StartTimer()
				sim.Run()
			}
		})
	}
}
