package report

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func hp(pol string, rate, floor float64, avg float64, sat int) HeadroomPoint {
	p := HeadroomPoint{Scenario: "s", Scheduler: pol, Rate: rate, Load: rate / 4, Seeds: []uint64{0}, FloorJCT: floor, SaturatedSeeds: sat}
	if !math.IsNaN(avg) {
		q := 2 * avg
		p.AvgJCT, p.P99JCT = &avg, &q
	}
	return p
}

func TestHeadroomGapsAndSustainableRate(t *testing.T) {
	nan := math.NaN()
	pols := []string{"fifo", "gandiva", "srtf_oracle", LookaheadPolicy}
	// rates 1, 2, 3; floor 10 h.
	pts := []HeadroomPoint{
		hp("fifo", 1, 10, 12, 0), hp("fifo", 2, 10, 16, 0), hp("fifo", 3, 10, nan, 1),
		hp("gandiva", 1, 10, 13, 0), hp("gandiva", 2, 10, 14, 0), hp("gandiva", 3, 10, 40, 0),
		hp("srtf_oracle", 1, 10, 11, 0), hp("srtf_oracle", 2, 10, 12, 0), hp("srtf_oracle", 3, 10, 20, 0),
		hp(LookaheadPolicy, 1, 10, 11.5, 0), hp(LookaheadPolicy, 2, 10, 11, 0), hp(LookaheadPolicy, 3, 10, nan, 1),
	}
	// The fluid bound at rate 2 is known (10.5 h); at rate 1 one seed was
	// over capacity.
	for i := range pts {
		if pts[i].Rate == 2 {
			f := 10.5
			pts[i].FluidJCT = &f
		}
	}
	g := HeadroomGaps(pols, pts)
	want := []HeadroomGap{
		{Rate: 1, Best: "fifo", BestJCT: 12, Bound: "srtf_oracle", BoundJCT: 11, GapFloor: 2, GapBound: 1},
		{Rate: 2, Best: "gandiva", BestJCT: 14, Bound: LookaheadPolicy, BoundJCT: 11, GapFloor: 4, GapBound: 3},
		{Rate: 3, Best: "gandiva", BestJCT: 40, Bound: "srtf_oracle", BoundJCT: 20, GapFloor: 30, GapBound: 20},
	}
	for i, w := range want {
		if wf := map[float64]float64{2: 10.5}[w.Rate]; (wf == 0) != math.IsNaN(g[i].Fluid) || wf != 0 && g[i].Fluid != wf {
			t.Errorf("rate %v: fluid bound %v", w.Rate, g[i].Fluid)
		}
		if g[i].Best != w.Best || g[i].BestJCT != w.BestJCT || g[i].Bound != w.Bound || g[i].BoundJCT != w.BoundJCT ||
			g[i].GapFloor != w.GapFloor || g[i].GapBound != w.GapBound {
			t.Errorf("rate %v: %+v, want %+v", w.Rate, g[i], w)
		}
	}
	// Within 1.5× the 10 h floor: fifo 12 (1) but not 16 (2); gandiva 13,
	// 14, then 40; srtf 11, 12, then 20.
	for i, w := range []float64{1, 2, 2, 2} {
		if got := SustainableRate(pts[i*3 : i*3+3]); got != w {
			t.Errorf("%s: sustainable rate %v, want %v", pols[i], got, w)
		}
	}
	var b bytes.Buffer
	if err := WriteHeadroomTable(&b, pols, pts); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| 2 | 0.50 | 10.00 | 10.50 | 16.00 / 32.0 / 0% |", "| 1 | 0.25 | 10.00 | - | 12.00", "gandiva 14.00 | lookahead 11.00 | 4.00 | 3.00 |", "bound (0%)"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
}

// Same seed, same bytes, on a small sample of the openb cluster.
func TestRunHeadroomDeterministic(t *testing.T) {
	cfg := HeadroomConfig{
		Scenarios:   []HeadroomScenario{{Cluster: "openb", Sample: 64, Workload: "multi", Loads: []float64{0.8}}},
		Policies:    []string{"fifo_perf", "srtf_oracle"},
		Seeds:       []uint64{3},
		WarmupHours: 4, MeasureJobs: 40, Workers: 2,
	}
	run := func() []byte {
		pts, err := RunHeadroom(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, p := range pts {
			if err := json.NewEncoder(&b).Encode(p); err != nil {
				t.Fatal(err)
			}
		}
		return b.Bytes()
	}
	a, b := run(), run()
	if !bytes.Equal(a, b) {
		t.Fatalf("two runs differ:\n%s\n%s", a, b)
	}
	var p HeadroomPoint
	if err := json.Unmarshal(bytes.SplitN(a, []byte("\n"), 2)[0], &p); err != nil {
		t.Fatal(err)
	}
	if p.AvgJCT == nil || *p.AvgJCT < p.FloorJCT || math.Abs(p.Load-0.8) > 0.01 {
		t.Fatalf("point %+v: want a finished run above its floor at load 0.8", p)
	}
	cfg.Scenarios[0].Cluster = "nowhere"
	if _, err := RunHeadroom(context.Background(), cfg); err == nil {
		t.Error("unknown cluster: no error")
	}
}

func TestMergeHeadroom(t *testing.T) {
	nan := math.NaN()
	in := []HeadroomPoint{
		hp("fifo", 2, 10, 16, 0), hp("fifo", 1, 10, 12, 0),
		hp(LookaheadPolicy, 2, 10, 11, 0),
		hp("fifo", 3, 9, nan, 1), hp("srtf_oracle", 3, 10, 20, 0),
	}
	cfg, pts := MergeHeadroom(in)
	if len(cfg.Scenarios) != 1 || cfg.Scenarios[0].Name() != "s" || strings.Join(cfg.Policies, ",") != "fifo,lookahead,srtf_oracle" {
		t.Fatalf("scenarios %v policies %v", cfg.Scenarios, cfg.Policies)
	}
	if len(pts) != 9 {
		t.Fatalf("%d points, want 3 policies × 3 rates", len(pts))
	}
	// Lookahead at rate 1 was never run; rate 3's floor comes from
	// srtf_oracle, which finished, not from fifo's bounded run.
	if p := pts[3]; p.Scheduler != LookaheadPolicy || p.Rate != 1 || len(p.Seeds) != 0 || hCell(p) != "-" {
		t.Fatalf("missing point %+v", p)
	}
	if g := HeadroomGaps(cfg.Policies, pts); g[2].Floor != 10 || g[1].Bound != LookaheadPolicy || g[1].GapBound != 5 {
		t.Fatalf("gaps %+v", g)
	}
	if got := SustainableRate(pts[3:6]); got != 2 {
		t.Fatalf("lookahead sustainable rate %v, want 2 (rate 1 not run)", got)
	}
}

// TestHeadroomGapClosed: a learned policy file is not a heuristic; its
// share of the gap closed is (best − learned) / (best − bound), and a
// clairvoyant policy file is a bound.
func TestHeadroomGapClosed(t *testing.T) {
	pols := []string{"fifo", "run/policy.json", "oracle.json"}
	oracle := func(rate, avg float64) HeadroomPoint {
		p := hp("oracle.json", rate, 10, avg, 0)
		p.Clairvoyant = true
		return p
	}
	pts := []HeadroomPoint{
		hp("fifo", 1, 10, 14, 0), hp("fifo", 2, 10, 30, 0),
		hp("run/policy.json", 1, 10, 13, 0), hp("run/policy.json", 2, 10, 31, 0),
		oracle(1, 12), oracle(2, 20),
	}
	sl, rho, un := 40.0, 3.5, 0.25
	pts[2].MaxSlowdown, pts[2].FTFMax, pts[2].FTFUnfair = &sl, &rho, &un
	// The fluid bound at rate 2 is known (10.5 h); at rate 1 one seed was
	// over capacity.
	for i := range pts {
		if pts[i].Rate == 2 {
			f := 10.5
			pts[i].FluidJCT = &f
		}
	}
	g := HeadroomGaps(pols, pts)
	// Rate 1: gap 14 − 12 = 2, closed (14 − 13) / 2; rate 2: gap 10,
	// learned 1 h worse than fifo.
	if g[0].Best != "fifo" || g[0].Bound != "oracle.json" || g[0].Learned != "run/policy.json" || g[0].Closed != 0.5 || g[1].Closed != -0.1 {
		t.Fatalf("gaps %+v", g)
	}
	var b bytes.Buffer
	if err := WriteHeadroomTable(&b, pols, pts); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| best learned | gap closed |", "| fifo 14.00 | oracle.json 12.00 | 4.00 | 2.00 | run/policy.json 13.00 | 50% |", "| -10% |"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, b.String())
		}
	}
	b.Reset()
	if err := WriteFairnessTable(&b, pols, pts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| 1 | - | 40 / 3.5 / 25% | - |") {
		t.Errorf("fairness table:\n%s", b.String())
	}
}
