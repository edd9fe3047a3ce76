package env

import (
	"errors"
	"math"
	"strings"
	"testing"
)

const tinyTable = `{"v100": {"('M', 1)": {"null": 10, "('M', 1)": [6, 6], "('N', 1)": [7, 3]},
 "('N', 1)": {"null": 5, "('M', 1)": [3, 7]},
 "('M', 2)": {"null": 10}},
 "v100_unconsolidated": {"('M', 2)": {"null": 4}},
 "k80": {"('M', 1)": {"null": 2}, "('N', 1)": {"null": 0}, "('M', 2)": {"null": 3}}}`

func TestThroughputTableTiny(t *testing.T) {
	tab, err := LoadThroughputTable(strings.NewReader(tinyTable))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tab.GPUs, ","); got != "k80,v100" {
		t.Fatalf("GPUs %s", got)
	}
	v, _ := tab.GPU("v100")
	k, _ := tab.GPU("k80")
	m, n := tab.Model("M"), tab.Model("N")
	for _, c := range []struct {
		got, want float64
	}{
		{tab.Throughput(m, v, 1, false), 10}, {tab.Throughput(m, v, 2, false), 10}, {tab.Throughput(m, v, 2, true), 4},
		{tab.Throughput(m, k, 2, true), 0}, {tab.Throughput(n, k, 1, false), 0}, {tab.Throughput(m, v, 4, false), 0},
	} {
		if c.got != c.want {
			t.Errorf("throughput %v, want %v", c.got, c.want)
		}
	}
	if a, b, ok := tab.PairThroughput(m, n, v, 1); !ok || a != 7 || b != 3 {
		t.Errorf("pair M,N on v100 = %v %v %v, want 7 3", a, b, ok)
	}
	if _, _, ok := tab.PairThroughput(m, n, k, 1); ok {
		t.Error("pair on k80 has no entry but was ok")
	}
	if !tab.HasScale(m, 2) || tab.HasScale(n, 2) {
		t.Error("HasScale")
	}
	if _, err := tab.GPU("a100"); !errors.Is(err, ErrUnknownGPU) || !strings.Contains(err.Error(), "k80, v100") {
		t.Errorf("unknown GPU error %v", err)
	}
}

func TestGavelThroughputTable(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Models) != 26 || strings.Join(tab.GPUs, ",") != "k80,p100,v100" || len(tab.Scales) != 4 {
		t.Fatalf("%d models, GPUs %v, scales %v", len(tab.Models), tab.GPUs, tab.Scales)
	}
	m := tab.Model("ResNet-18 (batch size 16)")
	v, _ := tab.GPU("v100")
	k, _ := tab.GPU("k80")
	// Values read off data/gavel/simulation_throughputs.json.
	if g := tab.Throughput(m, v, 2, false); g != 100.14206200421837 {
		t.Errorf("v100 consolidated x2 %v", g)
	}
	if g := tab.Throughput(m, v, 2, true); g != 35.33651986363828 {
		t.Errorf("v100 unconsolidated x2 %v", g)
	}
	if g := tab.Throughput(m, k, 1, false); g != 4.795294551566172 {
		t.Errorf("k80 alone %v", g)
	}
	if a, b, ok := tab.PairThroughput(m, tab.Model("ResNet-18 (batch size 32)"), k, 1); !ok || a != 2.539979567443098 || b != 3.1201925448827033 {
		t.Errorf("k80 pair %v %v %v", a, b, ok)
	}
	dist := 0
	for i := range tab.Models {
		if tab.HasScale(i, 8) {
			dist++
		}
	}
	if dist != 19 {
		t.Errorf("%d job types measured at 8 GPUs, Gavel's table has 19", dist)
	}
}

func TestThroughputTableErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`[]`, "throughput table"},
		{`{}`, "no GPU types"},
		{`{"v100_unconsolidated": {"('M', 1)": {"null": 1}}}`, `without a "v100" section`},
		{`{"v100": {"M": {"null": 1}}}`, "want ('MODEL', SCALE)"},
		{`{"v100": {"('M', x)": {"null": 1}}}`, "scale factor"},
		{`{"v100": {"('M', 0)": {"null": 1}}}`, "scale factor"},
		{`{"v100": {"('M', 1)": {"('M', 1)": [1, 1]}}}`, `no "null"`},
		{`{"v100": {"('M', 1)": {"null": -1}}}`, "finite non-negative"},
		{`{"v100": {"('M', 1)": {"null": "fast"}}}`, "finite non-negative"},
		{`{"v100": {"('M', 1)": {"null": 1, "('M', 1)": [1]}}}`, "two finite"},
		{`{"v100": {"('M', 1)": {"null": 1, "bad": [1, 1]}}}`, "want ('MODEL', SCALE)"},
	} {
		_, err := LoadThroughputTable(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to mention %q", c.in, err, c.want)
		}
	}
}

func FuzzThroughputTable(f *testing.F) {
	f.Add([]byte(tinyTable))
	f.Add([]byte(`{"v100": {"('M', 1)": {"null": 1e308}}}`))
	f.Add([]byte(`{"a": {"('x', 64)": {"null": 0, "('y', 64)": [0, 1]}}, "a_unconsolidated": {}}`))
	f.Add([]byte(`{"v100": {"(' ', 1)": {"null": 1}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := LoadThroughputTable(strings.NewReader(string(b)))
		if err != nil {
			return
		}
		for m := range tab.Models {
			for g := range tab.GPUs {
				for _, sc := range tab.Scales {
					for _, sp := range []bool{false, true} {
						if v := tab.Throughput(m, g, sc, sp); v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
							t.Fatalf("throughput %v", v)
						}
					}
					if a, c, ok := tab.PairThroughput(m, m, g, sc); ok && (a <= 0 || c <= 0) {
						t.Fatalf("pair %v %v", a, c)
					}
				}
			}
		}
		// The table drives a short run: two GPUs of each type (up to
		// eight types), one job of each type that runs somewhere at 1 GPU,
		// under a time bound; a job that can run nowhere is an error.
		if len(tab.GPUs) > 8 || len(tab.Models) > 16 {
			return
		}
		counts := map[string]int{}
		for _, g := range tab.GPUs {
			counts[g] = 2
		}
		c, err := NewGPUCluster(tab, counts, 1)
		if err != nil {
			t.Fatal(err)
		}
		var jobs []DLJob
		for m := range tab.Models {
			best := 0.0
			for g := range tab.GPUs {
				best = math.Max(best, tab.Throughput(m, g, 1, false))
			}
			jobs = append(jobs, DLJob{Model: m, Scale: 1, Steps: math.Min(3600*best, 1e12), Arrival: float64(60 * m)})
		}
		for _, pol := range []string{"fifo_perf", "max_min_fairness", "gandiva"} {
			p, _ := AllocationPolicyByName(pol)
			sim, err := NewRoundSim(c, p, &sliceJobs{jobs: jobs}, RoundConfig{MeasureFrom: 0, MeasureTo: len(jobs), MaxSeconds: 1e5})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sim.Run(); err != nil && !strings.Contains(err.Error(), "asks") && !strings.Contains(err.Error(), "no GPU type") {
				t.Fatalf("%s: %v", pol, err)
			}
		}
	})
}

func TestParseGPUClusterSpec(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseGPUClusterSpec("36:36:36", tab, 1)
	if err != nil || c.String() != "k80=36,p100=36,v100=36" || c.TotalGPUs() != 108 {
		t.Fatalf("%v %v", c, err)
	}
	c, err = ParseGPUClusterSpec("8:0:4", tab, 4)
	if err != nil || c.String() != "k80=4,v100=8" {
		t.Fatalf("%v %v", c, err)
	}
	for _, bad := range []struct {
		spec string
		per  int
		want string
	}{
		{"36:36", 1, "want V:P:K"}, {"a:1:1", 1, "v100 count"}, {"3:3:3", 2, "multiple of 2"},
		{"a100=4", 1, "unknown GPU model"}, {"0:0:0", 1, "no GPUs"}, {"-1:2:2", 1, "non-negative"},
		{"v100=2,v100=2", 1, "twice"}, {"v100", 1, "want V:P:K"}, {"4:4:4", 0, "GPUs per server"},
	} {
		if _, err := ParseGPUClusterSpec(bad.spec, tab, bad.per); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.spec, err, bad.want)
		}
	}
}

func TestGavelGeneratorMatchesGavel(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	// Printed by Gavel's generate_job logic under CPython 3.11, seed 0
	// (streams seeded 2 and 3), 2 jobs/h.
	want := []struct {
		model    string
		scale    int
		dur, arr float64
	}{
		{"ResNet-18 (batch size 64)", 8, 68344.35010595087, 0},
		{"Transformer (batch size 16)", 1, 31016.60914593223, 489.172145820603},
		{"Recommendation (batch size 2048)", 1, 2146.6088374387864, 1903.5496550581915},
	}
	for _, multi := range []bool{false, true} {
		g, err := NewGavelGenerator(tab, GavelWorkloadConfig{Rate: 2, Multi: multi, Seed: 0})
		if err != nil {
			t.Fatal(err)
		}
		v, _ := tab.GPU("v100")
		for i, w := range want {
			j := g.Next()
			sc := w.scale
			if !multi {
				sc = 1
			}
			if j.ID != i || tab.Models[j.Model] != w.model || j.Scale != sc ||
				math.Abs(j.Duration-w.dur) > 1e-9*w.dur || math.Abs(j.Arrival-w.arr) > 1e-9 {
				t.Fatalf("multi %v job %d = %+v (%s), Gavel %+v", multi, i, j, tab.Models[j.Model], w)
			}
			if want := j.Duration * tab.Throughput(j.Model, v, j.Scale, false); j.Steps != want {
				t.Fatalf("steps %v, want %v", j.Steps, want)
			}
		}
	}
	if _, err := NewGavelGenerator(tab, GavelWorkloadConfig{Rate: 0}); err == nil {
		t.Error("rate 0 accepted")
	}
	if _, err := NewGavelGenerator(tab, GavelWorkloadConfig{Rate: 1, Reference: "h100"}); !errors.Is(err, ErrUnknownGPU) {
		t.Errorf("unknown reference: %v", err)
	}
}

func TestPhillyDistribution(t *testing.T) {
	ps, err := GavelPhillyDistribution()
	if err != nil {
		t.Fatal(err)
	}
	count := map[int]int{}
	for _, p := range ps {
		count[p.GPUs]++
	}
	if len(ps) != 33192 || count[1] != 25304 || count[2] != 665 || count[4] != 3076 || count[8] != 4147 {
		t.Fatalf("%d samples, by GPUs %v", len(ps), count)
	}
	for _, bad := range []string{"", "a,b\n1,1\n", "duration_s,num_gpus\n", "duration_s,num_gpus\n-1,1\n", "duration_s,num_gpus\n10,0\n", "duration_s,num_gpus\n10\n"} {
		if _, err := LoadPhillyDistribution(strings.NewReader(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestThroughputTablePairUnknownModel(t *testing.T) {
	_, err := LoadThroughputTable(strings.NewReader(`{"v100": {"('M', 1)": {"null": 1, "('Q', 1)": [1, 1]}}}`))
	if err == nil || !strings.Contains(err.Error(), "without its own entry") {
		t.Fatalf("error %v", err)
	}
}
