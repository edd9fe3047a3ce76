package report

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tegrl/tegrl/env"
)

// fakeRun builds a run whose bin b has alloc = base + b/10, frag = 2*base,
// frag ratio = 3*base.
func fakeRun(sched string, seed uint64, base float64, dropped int) env.SaturationRun {
	r := env.SaturationRun{Scheduler: sched, Seed: seed, Pods: 100, Dropped: dropped}
	for b := range env.SaturationBins {
		r.Bins = append(r.Bins, env.SaturationBin{ArrivalPct: b, AllocPct: base + float64(b)/10, FragPct: 2 * base, FragRatio: 3 * base})
	}
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func TestMeanStd(t *testing.T) {
	for _, tc := range []struct {
		xs        []float64
		mean, std float64
	}{
		{[]float64{5}, 5, 0},
		{[]float64{1, 3}, 2, math.Sqrt2},
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0 / 7)},
		{[]float64{1, 1, 1}, 1, 0},
	} {
		m, s := MeanStd(tc.xs)
		if !near(m, tc.mean) || !near(s, tc.std) {
			t.Errorf("MeanStd(%v) = %v, %v; want %v, %v", tc.xs, m, s, tc.mean, tc.std)
		}
	}
	if m, s := MeanStd(nil); !math.IsNaN(m) || !math.IsNaN(s) {
		t.Errorf("MeanStd(nil) = %v, %v; want NaN, NaN", m, s)
	}
}

func TestSummarize(t *testing.T) {
	runs := []env.SaturationRun{fakeRun("fgd", 42, 80, 10), fakeRun("fgd", 43, 82, 14), fakeRun("fgd", 44, 84, 12)}
	s, err := Summarize(runs)
	if err != nil {
		t.Fatal(err)
	}
	if s.Scheduler != "fgd" || !slices.Equal(s.Seeds, []uint64{42, 43, 44}) || len(s.Bins) != env.SaturationBins {
		t.Fatalf("summary header = %q %v %d bins", s.Scheduler, s.Seeds, len(s.Bins))
	}
	// bases 80, 82, 84: mean 82, sample std 2.
	checks := []struct {
		name      string
		got, want float64
	}{
		{"alloc_at_130_mean", s.AllocAt130Mean, 82 + 13},
		{"alloc_at_130_std", s.AllocAt130Std, 2},
		{"frag_at_130_mean", s.FragAt130Mean, 164},
		{"frag_at_130_std", s.FragAt130Std, 4},
		{"frag_ratio_at_130_mean", s.FragRatioAt130Mean, 246},
		{"frag_ratio_at_130_std", s.FragRatioAt130Std, 6},
		{"dropped_mean", s.DroppedMean, 12},
		{"dropped_std", s.DroppedStd, 2},
		{"pods_mean", s.PodsMean, 100},
		{"bins[0].alloc_mean", s.Bins[0].AllocMean, 82},
		{"bins[0].alloc_std", s.Bins[0].AllocStd, 2},
		{"bins[50].alloc_mean", s.Bins[50].AllocMean, 87},
		{"bins[50].frag_pct_mean", s.Bins[50].FragPctMean, 164},
		{"bins[50].frag_ratio_pct_mean", s.Bins[50].FragRatioPctMean, 246},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	for b, bin := range s.Bins {
		if bin.ArrivalPct != b {
			t.Fatalf("bin %d has arrival %d", b, bin.ArrivalPct)
		}
	}

	one, err := Summarize(runs[:1])
	if err != nil || one.AllocAt130Std != 0 || one.AllocAt130Mean != 93 {
		t.Errorf("one seed: alloc %v ± %v, %v; want 93 ± 0", one.AllocAt130Mean, one.AllocAt130Std, err)
	}
}

func TestSummarizeErrors(t *testing.T) {
	short := fakeRun("fgd", 2, 80, 0)
	short.Bins = short.Bins[:100]
	shifted := fakeRun("fgd", 3, 80, 0)
	shifted.Bins[7].ArrivalPct = 8
	for _, tc := range []struct {
		name string
		runs []env.SaturationRun
		want string
	}{
		{"none", nil, "no runs"},
		{"mixed", []env.SaturationRun{fakeRun("fgd", 1, 80, 0), fakeRun("random", 2, 80, 0)}, `is of scheduler "random"`},
		{"short first", []env.SaturationRun{short}, "has 100 bins, want 131"},
		{"short later", []env.SaturationRun{fakeRun("fgd", 1, 80, 0), short}, "seed 2 has 100 bins"},
		{"shifted", []env.SaturationRun{shifted}, "bin 7 is at arrival 8%"},
	} {
		if _, err := Summarize(tc.runs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

func TestSummaryJSONKeys(t *testing.T) {
	s, err := Summarize([]env.SaturationRun{fakeRun("fgd", 42, 80, 1)})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scheduler", "seeds", "alloc_at_130_mean", "alloc_at_130_std", "frag_at_130_mean", "frag_ratio_at_130_mean", "dropped_mean", "bins"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks key %q", k)
		}
	}
	bin := m["bins"].([]any)[0].(map[string]any)
	for _, k := range []string{"arrival_pct", "alloc_mean", "alloc_std", "frag_pct_mean"} {
		if _, ok := bin[k]; !ok {
			t.Errorf("JSON bin lacks key %q", k)
		}
	}
	if !bytes.HasPrefix(data, []byte(`{"scheduler":"fgd","seeds":[42],"alloc_at_130_mean":93,`)) {
		t.Errorf("JSON starts %s", data[:80])
	}
}

// tinyCluster is a hand-made cluster for the runner: four 2-GPU machines.
func tinyCluster(t *testing.T) (*env.Cluster, []env.Job) {
	t.Helper()
	nodes := "sn,cpu_milli,memory_mib,gpu,model\n" +
		"n0,32000,65536,2,V100\nn1,32000,65536,2,V100\nn2,64000,131072,4,T4\nn3,16000,32768,0,\n"
	c, err := env.ReadAlibabaGPUNodes("nodes.csv", strings.NewReader(nodes))
	if err != nil {
		t.Fatal(err)
	}
	pods := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n" +
		"p0,4000,8192,1,500,,LS,Running,0,100,0\n" +
		"p1,8000,8192,1,1000,,BE,Running,1,100,1\n" +
		"p2,2000,4096,1,250,V100,LS,Running,2,100,2\n" +
		"p3,16000,16384,2,1000,,Burstable,Running,3,100,3\n" +
		"p4,1000,2048,0,0,,BE,Running,4,100,4\n" +
		"p5,4000,8192,1,700,,LS,Running,5,100,5\n"
	w, err := env.ReadAlibabaGPUPods("pods.csv", strings.NewReader(pods), env.GPUTraceOptions{Compress: 1})
	if err != nil {
		t.Fatal(err)
	}
	return c.GPUMachines(), w.Jobs
}

func TestRunSaturationDeterministic(t *testing.T) {
	c, trace := tinyCluster(t)
	cfg := SaturationConfig{Cluster: c, Trace: trace, Schedulers: []string{"fgd", "random", "bestfit"}, Seeds: []uint64{9, 3, 5, 7}, Tune: 1.3}
	var got [][]byte
	for _, workers := range []int{1, 3, 8} {
		cfg.Workers = workers
		calls := 0
		cfg.OnRun = func(env.SaturationRun, time.Duration) { calls++ }
		runs, err := RunSaturation(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if calls != 12 {
			t.Errorf("workers=%d: OnRun called %d times, want 12", workers, calls)
		}
		for i, rs := range runs {
			for k, r := range rs {
				if r.Scheduler != cfg.Schedulers[i] || r.Seed != []uint64{3, 5, 7, 9}[k] {
					t.Fatalf("workers=%d: runs[%d][%d] is %s seed %d", workers, i, k, r.Scheduler, r.Seed)
				}
			}
		}
		data, err := json.Marshal(runs)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, data)
	}
	for i := 1; i < len(got); i++ {
		if !bytes.Equal(got[0], got[i]) {
			t.Errorf("results differ between worker counts")
		}
	}
}

func TestRunSaturationErrors(t *testing.T) {
	c, trace := tinyCluster(t)
	base := SaturationConfig{Cluster: c, Trace: trace, Schedulers: []string{"fgd"}, Seeds: []uint64{1}, Tune: 1.3}
	for _, tc := range []struct {
		name string
		edit func(*SaturationConfig)
		want string
	}{
		{"no cluster", func(c *SaturationConfig) { c.Cluster = nil }, "no cluster"},
		{"no trace", func(c *SaturationConfig) { c.Trace = nil }, "empty pod trace"},
		{"no seeds", func(c *SaturationConfig) { c.Seeds = nil }, "at least one"},
		{"bad tune", func(c *SaturationConfig) { c.Tune = math.NaN() }, "tune NaN"},
		{"bad scheduler", func(c *SaturationConfig) { c.Schedulers = []string{"nope"} }, `unknown scheduler "nope"`},
	} {
		cfg := base
		tc.edit(&cfg)
		if _, err := RunSaturation(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunSaturation(ctx, base); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("cancelled: error = %v", err)
	}
}
