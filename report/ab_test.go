package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// TestMetricDirectionsComplete: the direction table names every numeric
// key of env.Metrics (but the seed) and nothing else. A new metric fails
// here until it gets its direction.
func TestMetricDirectionsComplete(t *testing.T) {
	names := MetricNames()
	for _, k := range names {
		if _, ok := metricDirections[k]; !ok {
			t.Errorf("metric %q has no direction in metricDirections (report/ab.go)", k)
		}
	}
	for k := range metricDirections {
		if !slices.Contains(names, k) {
			t.Errorf("metricDirections names %q, which is not a numeric key of env.Metrics", k)
		}
	}
	for k, want := range map[string]Direction{
		"mean_slowdown": LowerBetter, "mean_jct_s": LowerBetter, "mean_wait_s": LowerBetter, "mean_queue_len": LowerBetter,
		"sla_violation_rate": LowerBetter, "energy_kwh": LowerBetter, "gpu_frag_rate": LowerBetter,
		"safety_violations": LowerBetter, "oom_kills": LowerBetter, "util_cpu": HigherBetter, "util_gpu": HigherBetter,
		"reward_mean": HigherBetter, "jobs_completed": HigherBetter, "jobs_submitted": Neutral, "nope": Neutral,
	} {
		if got := MetricDirection(k); got != want {
			t.Errorf("MetricDirection(%q) = %v, want %v", k, got, want)
		}
	}
	if slices.Contains(names, "seed") || slices.Contains(names, "scheduler") {
		t.Errorf("MetricNames includes the seed or a string: %v", names)
	}
}

// TestMetricValues: each value lands under its own JSON key.
func TestMetricValues(t *testing.T) {
	// Give every numeric field a distinct value through JSON.
	obj := map[string]any{}
	for i, k := range MetricNames() {
		obj[k] = i + 1
	}
	data, _ := json.Marshal(obj)
	var m env.Metrics
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for i, v := range metricValues(&m) {
		if v != float64(i+1) {
			t.Errorf("%s = %v, want %d", metricFields[i].key, v, i+1)
		}
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		dir    Direction
		lo, hi float64
		n      int
		want   string
	}{
		{LowerBetter, -3, -1, 6, VerdictBBetter},
		{LowerBetter, 1, 3, 6, VerdictABetter},
		{HigherBetter, 1, 3, 6, VerdictBBetter},
		{HigherBetter, -3, -1, 6, VerdictABetter},
		{HigherBetter, -1, 1, 6, VerdictNone},
		{LowerBetter, 0, 2, 6, VerdictNone}, // touching zero is not significant
		{LowerBetter, -2, 0, 6, VerdictNone},
		{LowerBetter, 0, 0, 6, VerdictNone},
		{Neutral, 1, 2, 6, VerdictBHigher},
		{Neutral, -2, -1, 6, VerdictBLower},
		{Neutral, -2, 1, 6, VerdictNone},
		{HigherBetter, 1, 3, 1, VerdictFew},
		{HigherBetter, 1, 3, 5, VerdictFew}, // 5 of 5 ahead: sign test p = 0.0625
		{LowerBetter, -3, -1, 2, VerdictFew},
	} {
		if got := Verdict(tc.dir, tc.lo, tc.hi, tc.n, 0.95); got != tc.want {
			t.Errorf("Verdict(%v, [%v, %v], n=%d) = %q, want %q", tc.dir, tc.lo, tc.hi, tc.n, got, tc.want)
		}
	}
	for level, want := range map[float64]int{0.95: 6, 0.9: 5, 0.99: 8, 0.5: 2} {
		if got := MinVerdictSeeds(level); got != want {
			t.Errorf("MinVerdictSeeds(%v) = %d, want %d", level, got, want)
		}
	}
}

// TestCompareHandMade: over six seeds, B's JCT is 2 s lower on every seed
// (interval [-2, -2]: B better); its GPU utilisation is +0.1, -0.1, 0 twice
// (no significant difference); it completes 1 more job on each seed. On
// three of the seeds the same differences give no verdict.
func TestCompareHandMade(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	var a, b []env.Metrics
	for i := range 6 {
		jct, du := float64(10*(i%3+1)+30*(i/3)), []float64{0.1, -0.1, 0}[i%3]
		a = append(a, env.Metrics{MeanJCTS: jct, UtilGPU: 0.5, JobsCompleted: 5 + i})
		b = append(b, env.Metrics{MeanJCTS: jct - 2, UtilGPU: 0.5 + du, JobsCompleted: 6 + i})
	}
	ref := [][]env.Metrics{{{MeanJCTS: 1}, {MeanJCTS: 2}, {MeanJCTS: 6}, {MeanJCTS: 1}, {MeanJCTS: 2}, {MeanJCTS: 6}}}
	few, err := Compare("langevin", "x", seeds[:3], a[:3], b[:3], nil, nil, ABSetup{Resamples: 1000, ConfidenceLevel: 0.95, BootstrapSeed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if m := few.Metrics["mean_jct_s"]; m.CILow != -2 || m.CIHigh != -2 || m.Verdict != VerdictFew {
		t.Errorf("three seeds: mean_jct_s %+v, want the interval and no verdict", m)
	}
	rep, err := Compare("langevin", "x", seeds, a, b, []string{"kube"}, ref, ABSetup{Resamples: 1000, ConfidenceLevel: 0.95, BootstrapSeed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Metrics["mean_jct_s"]; got != (ABMetric{AMean: 35, BMean: 33, DiffMean: -2, CILow: -2, CIHigh: -2, Direction: LowerBetter, Verdict: VerdictBBetter}) {
		t.Errorf("mean_jct_s: %+v", got)
	}
	if got := rep.Metrics["jobs_completed"]; got.DiffMean != 1 || got.CILow != 1 || got.CIHigh != 1 || got.Verdict != VerdictBBetter {
		t.Errorf("jobs_completed: %+v", got)
	}
	g := rep.Metrics["util_gpu"]
	if !near(g.AMean, 0.5) || !near(g.BMean, 0.5) || !(g.CILow < 0 && g.CIHigh > 0) || g.Verdict != VerdictNone {
		t.Errorf("util_gpu: %+v", g)
	}
	if z := rep.Metrics["energy_kwh"]; z.CILow != 0 || z.CIHigh != 0 || z.Verdict != VerdictNone {
		t.Errorf("energy_kwh (all zero): %+v", z)
	}
	if len(rep.Reference) != 1 || rep.Reference[0].Scheduler != "kube" || rep.Reference[0].Metrics["mean_jct_s"] != 3 {
		t.Errorf("reference: %+v", rep.Reference)
	}
	if _, err := Compare("a", "b", seeds, a[:2], b, nil, nil, ABSetup{Resamples: 10, ConfidenceLevel: 0.95}); err == nil {
		t.Error("Compare accepted 2 runs of A for 3 seeds")
	}
}

// TestABJSONKeys: the JSON object has the keys tegrl ab promises, for
// every metric.
func TestABJSONKeys(t *testing.T) {
	m := []env.Metrics{{MeanJCTS: 1}, {MeanJCTS: 2}}
	rep, err := Compare("langevin", "fgd", []uint64{1, 2}, m, m, nil, nil, ABSetup{Resamples: 10, ConfidenceLevel: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteABJSON(&buf, &rep); err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(buf.Bytes(), &obj); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, buf.String())
	}
	for _, k := range []string{"a", "b", "seeds", "metrics", "reference", "setup"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if string(obj["a"]) != `"langevin"` || string(obj["b"]) != `"fgd"` || string(obj["reference"]) != "[]" {
		t.Errorf("a %s, b %s, reference %s", obj["a"], obj["b"], obj["reference"])
	}
	var metrics map[string]map[string]any
	if err := json.Unmarshal(obj["metrics"], &metrics); err != nil {
		t.Fatal(err)
	}
	if len(metrics) != len(MetricNames()) {
		t.Errorf("%d metrics in JSON, want %d", len(metrics), len(MetricNames()))
	}
	for _, name := range MetricNames() {
		for _, k := range []string{"a_mean", "b_mean", "diff_mean", "ci_low", "ci_high", "verdict", "direction"} {
			if _, ok := metrics[name][k]; !ok {
				t.Errorf("metrics.%s lacks %q", name, k)
			}
		}
	}
	if d := metrics["mean_slowdown"]["direction"]; d != "lower" {
		t.Errorf("mean_slowdown direction %v, want lower", d)
	}
}

// abTestConfig is a small comparison: 32 machines, 1 h, three seeds.
func abTestConfig(t *testing.T) ABConfig {
	t.Helper()
	c, err := env.NewSyntheticCluster(32, 1)
	if err != nil {
		t.Fatal(err)
	}
	wcfg := env.DefaultWorkload
	wcfg.Horizon = 3600
	named := func(name string) Contender {
		return Contender{Name: name, New: func() env.Scheduler { s, _ := env.NewScheduler(name); return s }}
	}
	return ABConfig{
		Cluster: c, ClusterName: "synthetic",
		Workload:      func(seed uint64) (*env.Workload, error) { return env.NewSyntheticWorkload(c, wcfg, seed) },
		A:             named("langevin"),
		B:             named("fgd"),
		Reference:     []Contender{named("kube"), named("fgd")},
		Seeds:         []uint64{5, 2, 9},
		Sim:           env.SimConfig{Duration: 3600},
		Resamples:     2000,
		BootstrapSeed: 4,
	}
}

// TestRunABDeterministic: pairs share seeds, references reuse B's runs
// when named alike, A and B record series, and the JSON report is
// byte-identical whatever the number of workers.
func TestRunABDeterministic(t *testing.T) {
	var outs [][]byte
	for _, workers := range []int{1, 3} {
		cfg := abTestConfig(t)
		cfg.Workers = workers
		res, err := RunAB(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for k, seed := range []uint64{2, 5, 9} {
			if res.A[k].Metrics.Seed != seed || res.B[k].Metrics.Seed != seed || res.Reference[0][k].Seed != seed {
				t.Fatalf("run %d: seeds A %d, B %d, ref %d; want %d", k, res.A[k].Metrics.Seed, res.B[k].Metrics.Seed, res.Reference[0][k].Seed, seed)
			}
			if res.A[k].Metrics.Scheduler != "langevin" || res.B[k].Metrics.Scheduler != "fgd" || res.Reference[0][k].Scheduler != "kube" {
				t.Fatalf("run %d: schedulers %s, %s, %s", k, res.A[k].Metrics.Scheduler, res.B[k].Metrics.Scheduler, res.Reference[0][k].Scheduler)
			}
			for _, r := range []ABRun{res.A[k], res.B[k]} {
				if r.Series == nil || len(r.Series.Samples) != 60 || len(r.Series.Jobs) != r.Metrics.JobsCompleted {
					t.Fatalf("run %d: series %v", k, r.Series)
				}
			}
		}
		rep := res.Report
		if !slices.Equal(rep.Seeds, []uint64{2, 5, 9}) || rep.Setup.Machines != 32 || rep.Setup.SeriesEveryTicks != DefaultABSeriesEvery {
			t.Errorf("report seeds %v, setup %+v", rep.Seeds, rep.Setup)
		}
		if rep.Reference[1].Scheduler != "fgd" || rep.Reference[1].Metrics["mean_jct_s"] != rep.Metrics["mean_jct_s"].BMean {
			t.Errorf("reference fgd mean JCT %v, B's %v", rep.Reference[1].Metrics["mean_jct_s"], rep.Metrics["mean_jct_s"].BMean)
		}
		for name, m := range rep.Metrics {
			if !(m.CILow <= m.CIHigh) {
				t.Errorf("%s: CI [%v, %v]", name, m.CILow, m.CIHigh)
			}
		}
		var buf bytes.Buffer
		if err := WriteABJSON(&buf, &rep); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, buf.Bytes())
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Errorf("reports differ between 1 and 3 workers")
	}
}

// TestABOutputs: the text table, the Markdown report and the plots.
func TestABOutputs(t *testing.T) {
	cfg := abTestConfig(t)
	cfg.Seeds = []uint64{1, 2}
	res, err := RunAB(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plots, err := WriteABPlots(dir, res)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, p := range plots {
		files = append(files, p.File)
		data, err := os.ReadFile(filepath.Join(dir, p.File))
		if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("%s: %v, %d bytes", p.File, err, len(data))
		}
	}
	if want := []string{"cdf_jct.png", "cdf_slowdown.png", "utilisation.png", "gpu_fragmentation.png", "damping.png", "queue.png"}; !slices.Equal(files, want) {
		t.Errorf("plots %v, want %v", files, want)
	}
	var md bytes.Buffer
	if err := WriteABMarkdown(&md, &res.Report, "tegrl ab --b fgd", plots); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"# A/B: fgd (B) against langevin (A)", "tegrl ab --b fgd", "| metric | better | A mean | B mean | B - A | 95% CI of B - A | verdict |",
		"| mean_slowdown | lower |", "## Reference schedulers", "| kube |", "![Job completion time (CDF, jobs of all seeds)](cdf_jct.png)", "seeds: 1-2 (n=2)"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("Markdown lacks %q:\n%s", s, md.String())
		}
	}
	var txt bytes.Buffer
	if err := WriteABText(&txt, &res.Report); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "A = langevin, B = fgd, seeds 1-2 (n=2)") || !strings.Contains(txt.String(), "mean_jct_s") {
		t.Errorf("text:\n%s", txt.String())
	}
	// The reference schedulers' means follow the table, one row each.
	for _, s := range []string{"\nreference schedulers: means over the seeds", "\nscheduler ", "\nA: langevin ", "\nB: fgd ", "\nkube "} {
		if !strings.Contains(txt.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, txt.String())
		}
	}
}

func TestRunABErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*ABConfig)
		want string
	}{
		{"no cluster", func(c *ABConfig) { c.Cluster = nil }, "need a cluster"},
		{"no B", func(c *ABConfig) { c.B.New = nil }, "need schedulers A and B"},
		{"no seeds", func(c *ABConfig) { c.Seeds = nil }, "at least one seed"},
		{"twice", func(c *ABConfig) { c.Seeds = []uint64{3, 3} }, "seed 3 named twice"},
		{"level", func(c *ABConfig) { c.Level = 1.5 }, "confidence level 1.5"},
		{"reference", func(c *ABConfig) { c.Reference = []Contender{{Name: "x"}} }, `reference scheduler "x"`},
		{"sim", func(c *ABConfig) { c.Sim.Tick = -1 }, "tick -1"},
	} {
		cfg := abTestConfig(t)
		cfg.Seeds = []uint64{1}
		cfg.Reference = nil
		tc.edit(&cfg)
		if _, err := RunAB(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

func TestMeanOverTimeAndCDF(t *testing.T) {
	s := func(ts ...float64) *env.Series {
		out := &env.Series{}
		for _, x := range ts {
			out.Samples = append(out.Samples, env.SeriesSample{TimeS: x, QueueLen: int(x)})
		}
		return out
	}
	// Run 1 samples at 3600, 7200; run 2 at 3600, 5400, 7200, 10800.
	runs := []ABRun{{Series: s(3600, 7200)}, {Series: s(3600, 5400, 7200, 10800)}, {}}
	got := meanOverTime(runs, func(x env.SeriesSample) float64 { return float64(x.QueueLen) })
	want := []struct{ x, y float64 }{{1, 3600}, {1.5, (3600 + 5400) / 2.0}, {2, 7200}, {3, 10800}}
	if len(got) != len(want) {
		t.Fatalf("meanOverTime = %v", got)
	}
	for i, w := range want {
		if got[i].X != w.x || got[i].Y != w.y {
			t.Errorf("point %d = %v, want %v", i, got[i], w)
		}
	}
	pts := cdfXY([]float64{3, 1, 2, 2})
	if len(pts) != 4 || pts[0].X != 1 || pts[0].Y != 0.25 || pts[3].X != 3 || pts[3].Y != 1 {
		t.Errorf("cdfXY = %v", pts)
	}
	big := make([]float64, 10*cdfPoints)
	for i := range big {
		big[i] = float64(i)
	}
	pts = cdfXY(big)
	if len(pts) != cdfPoints || pts[len(pts)-1].X != float64(len(big)-1) || pts[len(pts)-1].Y != 1 {
		t.Errorf("cdfXY of %d values: %d points, last %v", len(big), len(pts), pts[len(pts)-1])
	}
}

func TestParseABSeeds(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []uint64
	}{
		{"1-3", []uint64{1, 2, 3}}, {"7-7", []uint64{7}}, {"5,2", []uint64{2, 5}}, {" 4 - 5 ", []uint64{4, 5}},
	} {
		got, err := ParseABSeeds(tc.spec)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseABSeeds(%q) = %v, %v; want %v", tc.spec, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ spec, want string }{
		{"20", "a bare number is one seed, and an A/B comparison needs several; write 1-20 for seeds 1 to 20, or 20-20"},
		{" 1 ", "a bare number is one seed"}, {"0", "a bare number is one seed"}, {"x", "not a seed"}, {"", "seed list is empty"}, {"3-1", "runs backwards"},
	} {
		if _, err := ParseABSeeds(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseABSeeds(%q) error %v, want %q", tc.spec, err, tc.want)
		}
	}
}

func FuzzParseABSeeds(f *testing.F) {
	for _, s := range []string{"20", "1-20", "3,5,8", "0", "", "-", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		seeds, err := ParseABSeeds(spec)
		if err != nil {
			return
		}
		if len(seeds) == 0 || len(seeds) > MaxSeeds {
			t.Fatalf("ParseABSeeds(%q): %d seeds without error", spec, len(seeds))
		}
		for i := 1; i < len(seeds); i++ {
			if seeds[i] <= seeds[i-1] {
				t.Fatalf("ParseABSeeds(%q) = %v: not strictly ascending", spec, seeds)
			}
		}
	})
}

// BenchmarkCompare: the report of 20 seeds, every metric bootstrapped at
// the default resamples.
func BenchmarkCompare(b *testing.B) {
	for _, n := range []int{20} {
		a, bb := make([]env.Metrics, n), make([]env.Metrics, n)
		seeds := make([]uint64, n)
		for i := range n {
			seeds[i] = uint64(i + 1)
			a[i] = env.Metrics{MeanJCTS: float64(100 + i), UtilGPU: 0.5, EnergyKWh: float64(i)}
			bb[i] = env.Metrics{MeanJCTS: float64(90 + 2*i), UtilGPU: 0.55, EnergyKWh: float64(i % 3)}
		}
		b.Run("seeds="+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compare("a", "b", seeds, a, bb, nil, nil, ABSetup{Resamples: DefaultResamples, ConfidenceLevel: 0.95}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A reference that stopped at the bound on every seed has no JCT: its
// cells read "-", not 0.
func TestABRefRowsMissing(t *testing.T) {
	rep := &ABReport{A: "a", B: "b", Metrics: map[string]ABMetric{"avg_jct_h": {AMean: 7.26, BMean: 6.598}, "at_bound": {AMean: 0.3, BMean: 0}},
		Reference: []ABReference{{Scheduler: "max_min_fairness_perf", Metrics: map[string]float64{"utilisation": 0.95, "at_bound": 1}}}}
	rows := abRefRows(rep)
	want := [][]string{
		{"scheduler", "avg_jct_h", "p99_jct_h", "max_jct_h", "utilisation", "at_bound"},
		{"A: a", "7.260", "-", "-", "-", "0.3"},
		{"B: b", "6.598", "-", "-", "-", "0"},
		{"max_min_fairness_perf", "-", "-", "-", "0.95", "1"},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("rows %q, want %q", rows, want)
	}
}
