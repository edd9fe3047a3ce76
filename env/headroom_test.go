package env

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestOfferedLoadHand(t *testing.T) {
	// 0.8·60·(10^3−10^1.5)/(1.5 ln 10) + 0.2·60·(10^4−10^3)/ln 10.
	if got, want := GavelMeanDurationSeconds(), 60361.75235027699; math.Abs(got-want) > 1e-6 {
		t.Fatalf("mean duration %v s, want %v", got, want)
	}
	single := GavelWorkloadConfig{Rate: 1}
	multi := GavelWorkloadConfig{Rate: 1, Multi: true}
	if got := multi.MeanGPUHours() / single.MeanGPUHours(); math.Abs(got-1.9) > 1e-12 {
		t.Fatalf("multi/single GPU-hours %v, want 1.9 (0.7+0.2+0.6+0.4)", got)
	}
	tab, _ := LoadThroughputTable(strings.NewReader(tinyTable))
	c, err := NewGPUCluster(tab, map[string]int{"v100": 4, "k80": 10}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// k80 counts 0.2 V100 (M: 2/10; N does not run on k80): 4 + 10·0.2.
	if got, _ := c.ReferenceCapacity("v100"); math.Abs(got-6) > 1e-12 {
		t.Fatalf("reference capacity %v, want 6", got)
	}
	// Philly samples of 1 GPU-hour and 2 h × 2 GPUs: 2.5 GPU-hours a job.
	ph := GavelWorkloadConfig{Philly: []PhillySample{{3600, 1}, {7200, 2}}}
	if got := ph.MeanGPUHours(); got != 2.5 {
		t.Fatalf("philly GPU-hours %v, want 2.5", got)
	}
	r, err := RateForLoad(0.5, c, ph)
	if err != nil || math.Abs(r-1.2) > 1e-12 { // 0.5 × 6 / 2.5
		t.Fatalf("rate for load 0.5: %v %v, want 1.2", r, err)
	}
	if l, _ := GPUOfferedLoad(2.4, c, ph); math.Abs(l-1) > 1e-12 {
		t.Fatalf("load at 2.4 jobs/h %v, want 1", l)
	}
	for _, bad := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := RateForLoad(bad, c, ph); err == nil {
			t.Errorf("RateForLoad(%v): no error", bad)
		}
	}
}

func smallGavelSim(t *testing.T, pol AllocationPolicy, lc *LookaheadConfig) *RoundSim {
	t.Helper()
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseGPUClusterSpec("4:4:4", tab, 1)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := NewGavelGenerator(tab, GavelWorkloadConfig{Rate: 0.6, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := RoundConfig{MeasureFrom: 40, MeasureTo: 80, Seed: 1}
	var s *RoundSim
	if lc != nil {
		s, err = NewLookaheadSim(c, nil, gen, cfg, *lc)
	} else {
		s, err = NewRoundSim(c, pol, gen, cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func jctKey(r RoundResult) string { return fmt.Sprint(r.JCT, r.Rounds, r.Moves, r.SimSeconds) }

// Two identical candidates: every lookahead copies the simulator twice and
// must leave the original untouched, so the run equals the plain one.
func TestLookaheadCopiesDoNotLeak(t *testing.T) {
	pols := []string{"gandiva", "fifo", "max_min_fairness"}
	if testing.Short() {
		pols = pols[:1] // the stateful, randomised one
	}
	for _, p := range pols {
		pol, _ := AllocationPolicyByName(p)
		want, err := smallGavelSim(t, pol, nil).Run()
		if err != nil {
			t.Fatal(err)
		}
		lc := LookaheadConfig{Candidates: []string{p, p}, Horizon: 8}
		s := smallGavelSim(t, nil, &lc)
		got, choices, err := s.RunLookahead(lc)
		if err != nil {
			t.Fatal(err)
		}
		if jctKey(got) != jctKey(want) {
			t.Fatalf("%s: lookahead over two copies %.3f h (%d rounds), plain run %.3f h (%d rounds)", p,
				got.AvgJCTHours, got.Rounds, want.AvgJCTHours, want.Rounds)
		}
		if choices[0] == 0 || choices[1] != 0 {
			t.Fatalf("%s: choices %v, want all on the first of equal candidates", p, choices)
		}
	}
}

// A copy taken mid-run and run to the end gives the original's result.
func TestRoundSimCloneRunsTheSame(t *testing.T) {
	lc := LookaheadConfig{Candidates: []string{"gandiva"}}
	a := smallGavelSim(t, nil, &lc)
	for i := 0; i < 300 && !a.advance(); i++ {
		if err := a.startRound(); err != nil {
			t.Fatal(err)
		}
	}
	for a.advance() == false {
		b, err := a.clone()
		if err != nil {
			t.Fatal(err)
		}
		ra, _, err := a.runRest()
		if err != nil {
			t.Fatal(err)
		}
		rb, _, err := b.runRest()
		if err != nil {
			t.Fatal(err)
		}
		if jctKey(ra) != jctKey(rb) {
			t.Fatalf("copy %.4f h, original %.4f h", rb.AvgJCTHours, ra.AvgJCTHours)
		}
		return
	}
	t.Fatal("run ended before the copy")
}

// runRest finishes a run from between rounds (tests).
func (s *RoundSim) runRest() (RoundResult, []int, error) {
	if err := s.startRound(); err != nil {
		return s.res, nil, err
	}
	for !s.advance() {
		if err := s.startRound(); err != nil {
			return s.res, nil, err
		}
	}
	return s.result(), nil, nil
}

func TestLookaheadDeterministicAndClairvoyant(t *testing.T) {
	lc := LookaheadConfig{Horizon: 8}
	r1, c1, err := smallGavelSim(t, nil, &lc).RunLookahead(lc)
	if err != nil {
		t.Fatal(err)
	}
	r2, c2, _ := smallGavelSim(t, nil, &lc).RunLookahead(lc)
	if jctKey(r1) != jctKey(r2) || !slices.Equal(c1, c2) {
		t.Fatal("same seed, different lookahead runs")
	}
	if r1.Saturated || !(r1.AvgJCTHours >= r1.FloorHours) {
		t.Fatalf("lookahead %.3f h below the floor %.3f h", r1.AvgJCTHours, r1.FloorHours)
	}
	t.Logf("lookahead %.3f h, floor %.3f h, choices %v", r1.AvgJCTHours, r1.FloorHours, c1)
	lc.Candidates = []string{"fifo", "max_min_fairness_perf"}
	if _, err := NewLookaheadSim(nil, nil, nil, RoundConfig{}, lc); err == nil {
		t.Error("a candidate whose state cannot be copied: no error")
	}
}

func TestRunStatsHand(t *testing.T) {
	tab, _ := LoadThroughputTable(strings.NewReader(tinyTable))
	c, _ := NewGPUCluster(tab, map[string]int{"v100": 2}, 1)
	m := tab.Model("M")
	// Two jobs of 3600 steps at 10 steps/s: 360 s each, one GPU each.
	src := &sliceJobs{jobs: []DLJob{{Model: m, Scale: 1, Steps: 3600}, {Model: m, Scale: 1, Steps: 3600}}}
	pol, _ := AllocationPolicyByName("fifo_perf")
	s, err := NewRoundSim(c, pol, src, RoundConfig{MeasureFrom: 0, MeasureTo: 2})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats(r)
	if st.P99JCTHours != 0.1 || st.Utilisation != 1 {
		t.Fatalf("p99 %v h, utilisation %v; want 0.1 h and 1", st.P99JCTHours, st.Utilisation)
	}
}

// TestRunStatsFairnessHand: three 360 s jobs arrive together on one GPU
// and fifo_perf runs them one round each. Slowdowns are 1, 2 and 3. The
// GPUs demanded are 3, 2, then 1 per 360 s, so the contention integrals
// over the jobs' lives are 1080, 1800 and 2160 GPU-share seconds and
// ρ = JCT² / (floor × integral) is 1/3, 0.8 and 1.5.
func TestRunStatsFairnessHand(t *testing.T) {
	tab, _ := LoadThroughputTable(strings.NewReader(tinyTable))
	c, _ := NewGPUCluster(tab, map[string]int{"v100": 1}, 1)
	m := tab.Model("M")
	job := DLJob{Model: m, Scale: 1, Steps: 3600}
	src := &sliceJobs{jobs: []DLJob{job, job, job}}
	pol, _ := AllocationPolicyByName("fifo_perf")
	// The allocation is recomputed after every finish (an interval of one
	// round), so no GPU idles.
	s, err := NewRoundSim(c, pol, src, RoundConfig{MeasureFrom: 0, MeasureTo: 3, AllocationInterval: 360})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{360, 720, 1080}; !slices.Equal(r.JCT, want) {
		t.Fatalf("JCTs %v, want %v", r.JCT, want)
	}
	st := s.Stats(r)
	if math.Abs(st.MaxSlowdown-3) > 1e-12 || math.Abs(st.FTFMax-1.5) > 1e-12 || math.Abs(st.FTFUnfair-1.0/3) > 1e-12 {
		t.Fatalf("max slowdown %v, max ρ %v, unfair %v; want 3, 1.5 and 1/3", st.MaxSlowdown, st.FTFMax, st.FTFUnfair)
	}
	r.Saturated = true
	if st := s.Stats(r); !math.IsNaN(st.MaxSlowdown) || !math.IsNaN(st.FTFMax) {
		t.Fatalf("a saturated run's fairness %+v, want NaN", st)
	}
}

// TestRoundSimIdlesUntilReallocation: under Gavel's 1920 s between
// allocation resets, fifo_perf's allocation from t = 360 s gives the third
// job no share, so once the second finishes at 720 s nothing runs; the
// run idles until the reset at 360 + 1920 s and the job finishes a round
// later, rather than stopping as if nothing could ever run.
func TestRoundSimIdlesUntilReallocation(t *testing.T) {
	tab, _ := LoadThroughputTable(strings.NewReader(tinyTable))
	c, _ := NewGPUCluster(tab, map[string]int{"v100": 1}, 1)
	job := DLJob{Model: tab.Model("M"), Scale: 1, Steps: 3600}
	pol, _ := AllocationPolicyByName("fifo_perf")
	s, err := NewRoundSim(c, pol, &sliceJobs{jobs: []DLJob{job, job, job}}, RoundConfig{MeasureFrom: 0, MeasureTo: 3})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{360, 720, 2640}; r.Saturated || !slices.Equal(r.JCT, want) {
		t.Fatalf("JCTs %v (saturated %v), want %v", r.JCT, r.Saturated, want)
	}
}
