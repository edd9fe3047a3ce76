package report

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// gpuABMetrics are the GPU-scenario metrics an A/B compares, with which
// way each is better. JCTs are compared on the seeds where both A and B
// finished their measured jobs; at_bound (1 for a run stopped above
// capacity) on every seed.
var gpuABMetrics = []struct {
	key string
	dir Direction
	get func(*GPUMetrics) float64
}{
	{"avg_jct_h", LowerBetter, func(m *GPUMetrics) float64 { return deref(m.AvgJCT) }},
	{"p99_jct_h", LowerBetter, func(m *GPUMetrics) float64 { return deref(m.P99JCT) }},
	{"max_jct_h", LowerBetter, func(m *GPUMetrics) float64 { return deref(m.MaxJCT) }},
	{"utilisation", HigherBetter, func(m *GPUMetrics) float64 { return m.Utilisation }},
	{"at_bound", LowerBetter, func(m *GPUMetrics) float64 { return b2f(m.AtBound) }},
	{"floor_jct_h", Neutral, func(m *GPUMetrics) float64 { return m.FloorJCT }},
	{"fluid_jct_h", Neutral, func(m *GPUMetrics) float64 { return deref(m.FluidJCT) }},
	{"jobs_arrived", Neutral, func(m *GPUMetrics) float64 { return float64(m.Jobs) }},
	{"moves", Neutral, func(m *GPUMetrics) float64 { return float64(m.Moves) }},
	{"rounds", Neutral, func(m *GPUMetrics) float64 { return float64(m.Rounds) }},
	{"sim_hours", Neutral, func(m *GPUMetrics) float64 { return m.SimHours }},
}

func deref(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// GPUABConfig is a paired comparison of allocation policy B against A on
// a GPU scenario: both run the same jobs on every seed.
type GPUABConfig struct {
	Run       GPURunConfig // scenario and rate; Policy and Seed are set per run
	A, B      string
	Reference []string
	Seeds     []uint64
	// Resamples, Level and BootstrapSeed are ABConfig's (defaults
	// DefaultResamples, DefaultLevel, 0).
	Resamples     int
	Level         float64
	BootstrapSeed uint64
	Workers       int
	OnRun         func()
}

// RunGPUAB runs A, B and the references on every seed, in parallel, and
// compares B with A. The result does not depend on Workers.
func RunGPUAB(ctx context.Context, cfg GPUABConfig) (*ABReport, [][]GPUMetrics, error) {
	switch {
	case cfg.A == "" || cfg.B == "":
		return nil, nil, fmt.Errorf("ab: need policies A and B")
	case len(cfg.Seeds) == 0:
		return nil, nil, fmt.Errorf("ab: need at least one seed")
	case cfg.Level != 0 && !(cfg.Level > 0 && cfg.Level < 1):
		return nil, nil, fmt.Errorf("ab: confidence level %v: want a number in (0, 1)", cfg.Level)
	case cfg.Resamples < 0:
		return nil, nil, fmt.Errorf("ab: %d resamples: want >= 0", cfg.Resamples)
	}
	setDefault(&cfg.Resamples, DefaultResamples)
	setDefault(&cfg.Level, DefaultLevel)
	// Runs 0 and 1 are A and B, then each reference not named like
	// them; refSlot[i] is reference i's run.
	names := []string{cfg.A, cfg.B}
	refSlot := make([]int, len(cfg.Reference))
	for i, r := range cfg.Reference {
		if refSlot[i] = slices.Index(names, r); refSlot[i] < 0 {
			refSlot[i] = len(names)
			names = append(names, r)
		}
	}
	if _, err := GPUPolicies(strings.Join(names, ",")); err != nil {
		return nil, nil, fmt.Errorf("ab: %w", err)
	}
	n := len(cfg.Seeds)
	runs := make([][]GPUMetrics, len(names))
	for i := range runs {
		runs[i] = make([]GPUMetrics, n)
	}
	err := ForEach(ctx, len(names)*n, cfg.Workers, func(k int) error {
		c := cfg.Run
		c.Policy, c.Seed = names[k/n], cfg.Seeds[k%n]
		m, err := RunGPU(c)
		if err != nil {
			return fmt.Errorf("ab: %w", err)
		}
		runs[k/n][k%n] = m
		if cfg.OnRun != nil {
			cfg.OnRun()
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	m0 := runs[0][0]
	rep := ABReport{A: cfg.A, B: cfg.B, Seeds: slices.Clone(cfg.Seeds), Metrics: map[string]ABMetric{}, Reference: []ABReference{},
		Setup: ABSetup{Cluster: m0.Scenario, Workload: fmt.Sprintf("%.3f jobs/h, offered GPU load %.3f, %d measured jobs", m0.Rate, m0.Load, m0.Measured),
			Resamples: cfg.Resamples, ConfidenceLevel: cfg.Level, BootstrapSeed: cfg.BootstrapSeed}}
	for k := range n {
		rep.Setup.JobsPerSeedMean += float64(runs[0][k].Jobs) / float64(n)
	}
	for _, f := range gpuABMetrics {
		var xa, xb, d []float64
		for k := range n {
			a, b := f.get(&runs[0][k]), f.get(&runs[1][k])
			if math.IsNaN(a) || math.IsNaN(b) {
				continue // one of them stopped at the bound
			}
			xa, xb, d = append(xa, a), append(xb, b), append(d, b-a)
		}
		if len(d) == 0 {
			continue // no seed on which both finished: no comparison
		}
		lo, hi, err := BootstrapMeanCI(d, cfg.Resamples, cfg.Level, cfg.BootstrapSeed)
		if err != nil {
			return nil, nil, fmt.Errorf("ab compare %s: %w", f.key, err)
		}
		rep.Metrics[f.key] = ABMetric{AMean: mean(xa), BMean: mean(xb), DiffMean: mean(d), CILow: lo, CIHigh: hi,
			Direction: f.dir, Verdict: Verdict(f.dir, lo, hi, len(d), cfg.Level)}
	}
	for i, name := range cfg.Reference {
		r := ABReference{Scheduler: name, Metrics: map[string]float64{}}
		for _, f := range gpuABMetrics {
			var xs []float64
			for k := range n {
				if v := f.get(&runs[refSlot[i]][k]); !math.IsNaN(v) {
					xs = append(xs, v)
				}
			}
			if len(xs) > 0 {
				r.Metrics[f.key] = mean(xs)
			}
		}
		rep.Reference = append(rep.Reference, r)
	}
	return &rep, runs, nil
}

// WriteGPUABFiles writes a GPU comparison's report.json (js) and
// report.md to dir; it returns the number of files written.
func WriteGPUABFiles(dir string, rep *ABReport, js []byte, commandLine string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), js, 0o644); err != nil {
		return 0, err
	}
	var md bytes.Buffer
	if err := WriteABMarkdown(&md, rep, commandLine, nil); err != nil {
		return 0, fmt.Errorf("report.md: %w", err)
	}
	return 2, os.WriteFile(filepath.Join(dir, "report.md"), md.Bytes(), 0o644)
}
