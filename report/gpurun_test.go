package report

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

func TestParseGPUScenario(t *testing.T) {
	sc, err := ParseGPUScenario("openb/8-multi")
	if err != nil || sc.Cluster != "openb" || sc.Sample != 8 || sc.Workload != "multi" || sc.Name() != "openb/8-multi" {
		t.Fatalf("openb/8-multi: %+v %v", sc, err)
	}
	for _, bad := range []string{"gavel", "gavel/2-single", "mars-single", "openb-tiny", "openb/0-multi", "openb/x-multi"} {
		if _, err := ParseGPUScenario(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func gpuJSON(t *testing.T, cfg GPURunConfig) []byte {
	t.Helper()
	m, err := RunGPU(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRunGPUMatchesHeadroom: one run is the headroom sweep's point.
func TestRunGPUMatchesHeadroom(t *testing.T) {
	pts, err := RunHeadroom(context.Background(), HeadroomConfig{Scenarios: []HeadroomScenario{{Cluster: "gavel", Workload: "multi", Rates: []float64{1.2}}},
		Policies: []string{"max_min_fairness"}, Seeds: []uint64{3}, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := RunGPU(GPURunConfig{Scenario: "gavel-multi", Rate: 1.2, Policy: "max_min_fairness", Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if m.AvgJCT == nil || *m.AvgJCT != *pts[0].AvgJCT || *m.P99JCT != *pts[0].P99JCT || m.FloorJCT != pts[0].FloorJCT || m.Utilisation != pts[0].Utilisation {
		t.Fatalf("RunGPU %+v, headroom %+v", m, pts[0])
	}
	// The fluid bound is the measured jobs' (4000-4999 of the seed's
	// stream), the same in both, between the floor and the policy's JCT.
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := env.ParseGPUClusterSpec("36:36:36", tab, 1)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := env.NewGavelGenerator(tab, env.GavelWorkloadConfig{Rate: 1.2, Multi: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []env.DLJob
	for id := range 5000 {
		if j := gen.Next(); id >= 4000 {
			jobs = append(jobs, j)
		}
	}
	want, err := env.FluidBoundHours(c, jobs, 1.2)
	if err != nil {
		t.Fatal(err)
	}
	if m.FluidJCT == nil || *m.FluidJCT != want || pts[0].FluidJCT == nil || *pts[0].FluidJCT != want ||
		!(want >= m.FloorJCT && want <= *m.AvgJCT) {
		t.Fatalf("fluid bound: RunGPU %v, headroom %v, want %v between the floor %v and the JCT %v", m.FluidJCT, pts[0].FluidJCT, want, m.FloorJCT, *m.AvgJCT)
	}
}

// TestRunGPUReplayIdentical: the jobs a run drew, replayed as a list,
// give the same bytes; the same seed gives the same bytes; a run on a
// node-list cluster at a load converts the load to a rate.
func TestRunGPUReplayIdentical(t *testing.T) {
	var jobs []env.DLJob
	cfg := GPURunConfig{Scenario: "gavel-multi", Rate: 1.6, Policy: "tiresias", Seed: 7}
	rec := cfg
	rec.OnJob = func(j env.DLJob) { jobs = append(jobs, j) }
	want := gpuJSON(t, rec)
	if again := gpuJSON(t, cfg); !bytes.Equal(again, want) {
		t.Fatalf("same seed, other bytes:\n%s\n%s", again, want)
	}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	list, err := env.NewJobList(tab, jobs)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Jobs = list
	if got := gpuJSON(t, cfg); !bytes.Equal(got, want) {
		t.Fatalf("replayed:\n%s\nrecorded:\n%s", got, want)
	}
	m, err := RunGPU(GPURunConfig{Scenario: "openb/16-single", Load: 0.6, Policy: "fifo_perf", MeasureJobs: 100, WarmupHours: 50})
	if err != nil || m.Load != 0.6 || m.Rate <= 0 || m.AvgJCT == nil || m.Measured != 100 {
		t.Fatalf("openb/16-single at load 0.6: %+v %v", m, err)
	}
}

// TestRunGPUNew: a policy made by New runs exactly as the registered one
// of the same name.
func TestRunGPUNew(t *testing.T) {
	cfg := GPURunConfig{Scenario: "openb/16-multi", Load: 0.8, Policy: "tiresias", Seed: 2, MeasureJobs: 100, WarmupHours: 50}
	want := gpuJSON(t, cfg)
	cfg.New = func() env.AllocationPolicy {
		p, err := env.AllocationPolicyByName("tiresias")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got := gpuJSON(t, cfg); !bytes.Equal(got, want) {
		t.Fatalf("New:\n%s\nregistered:\n%s", got, want)
	}
}

func TestRunGPUErrors(t *testing.T) {
	for _, c := range []GPURunConfig{
		{Scenario: "gavel-single", Policy: "fifo"},            // no rate or load
		{Scenario: "gavel-single", Rate: -1, Policy: "fifo"},  // negative rate
		{Scenario: "gavel-single", Rate: 1, Policy: "nope"},   // unknown policy
		{Scenario: "moon-single", Rate: 1, Policy: "fifo"},    // unknown cluster
		{Scenario: "gavel-single", Load: 200, Policy: "fifo"}, // absurd load
	} {
		if _, err := RunGPU(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// TestRunGPUAB: B = A differs by exactly 0 on every metric; B against a
// different policy gives the paired mean of the runs' own metrics.
func TestRunGPUAB(t *testing.T) {
	run := GPURunConfig{Scenario: "gavel-multi", Rate: 1.2}
	rep, runs, err := RunGPUAB(context.Background(), GPUABConfig{Run: run, A: "fifo_perf", B: "max_min_fairness",
		Reference: []string{"fifo_perf", "tiresias"}, Seeds: []uint64{0, 1}, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || len(rep.Reference) != 2 {
		t.Fatalf("%d contenders, %d references; want 3 runs (the repeated reference once) and 2 references", len(runs), len(rep.Reference))
	}
	want := (*runs[1][0].AvgJCT - *runs[0][0].AvgJCT + *runs[1][1].AvgJCT - *runs[0][1].AvgJCT) / 2
	if m := rep.Metrics["avg_jct_h"]; m.DiffMean != want || m.Verdict != VerdictFew {
		t.Fatalf("avg_jct_h %+v, want diff %v and %q", m, want, VerdictFew)
	}
	var b strings.Builder
	if err := WriteABText(&b, rep); err != nil || !strings.Contains(b.String(), "avg_jct_h") {
		t.Fatalf("text:\n%s %v", b.String(), err)
	}
	if _, _, err := RunGPUAB(context.Background(), GPUABConfig{Run: run, A: "fifo", B: "nope", Seeds: []uint64{0}}); err == nil {
		t.Fatal("unknown policy B: no error")
	}
}

// TestRunGPUFluidUnknown: a run that stops at the bound before its first
// measured job arrives has no fluid bound, and is no error.
func TestRunGPUFluidUnknown(t *testing.T) {
	m, err := RunGPU(GPURunConfig{Scenario: "gavel-multi", Rate: 200, Policy: "fifo", Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if !m.AtBound || m.FluidJCT != nil {
		t.Fatalf("at bound %v, fluid bound %v", m.AtBound, m.FluidJCT)
	}
}

// TestRunGPUAllocationInterval: the interval reaches the simulator (a
// shorter one changes the run; 1,920 s is the default) and a bad one is
// an error.
func TestRunGPUAllocationInterval(t *testing.T) {
	run := func(sec float64) GPUMetrics {
		m, err := RunGPU(GPURunConfig{Scenario: "gavel-multi", Rate: 1.6, Policy: "max_min_fairness", Seed: 1, AllocationSeconds: sec})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	def, gavel, short := run(0), run(1920), run(360)
	if *def.AvgJCT != *gavel.AvgJCT || *short.AvgJCT == *def.AvgJCT || short.Rounds == def.Rounds && short.Moves == def.Moves {
		t.Fatalf("default %v h, 1920 s %v h, 360 s %v h", *def.AvgJCT, *gavel.AvgJCT, *short.AvgJCT)
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := RunGPU(GPURunConfig{Scenario: "gavel-multi", Rate: 1.6, Policy: "fifo", AllocationSeconds: bad}); err == nil || !strings.Contains(err.Error(), "allocation interval") {
			t.Errorf("%v s: %v", bad, err)
		}
	}
}
