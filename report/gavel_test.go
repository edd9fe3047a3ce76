package report

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

func TestParseRates(t *testing.T) {
	r, err := ParseRates("0.4-6.0:0.4")
	if err != nil || len(r) != 15 || r[0] != 0.4 || r[14] != 6 || r[2] != 1.2 {
		t.Fatalf("%v %v", r, err)
	}
	if r, err := ParseRates("1,2.5"); err != nil || len(r) != 2 || r[1] != 2.5 {
		t.Fatalf("%v %v", r, err)
	}
	for _, bad := range []string{"", "0", "-1", "2-1:0.1", "1-2:0", "a", "1-2:x"} {
		if _, err := ParseRates(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func f64(v float64) *float64 { return &v }

func TestGavelKneeAndTable(t *testing.T) {
	sums := []GavelSummary{
		{Scheduler: "a", Rate: 1, AvgJCTMean: f64(10), AvgJCTStd: f64(0), FloorJCT: 9},
		{Scheduler: "a", Rate: 2, AvgJCTMean: f64(20), AvgJCTStd: f64(0), FloorJCT: 9},
		{Scheduler: "a", Rate: 3, AvgJCTMean: f64(21), AvgJCTStd: f64(0), FloorJCT: 9},
		{Scheduler: "b", Rate: 1, AvgJCTMean: f64(10), AvgJCTStd: f64(0), FloorJCT: 9},
		{Scheduler: "b", Rate: 2, AvgJCTMean: f64(11), AvgJCTStd: f64(0), FloorJCT: 9},
		{Scheduler: "b", Rate: 3, SaturatedSeeds: 1, FloorJCT: 9},
	}
	if k := GavelKnee(sums[:3]); k != 3 {
		t.Errorf("knee a %v, want 3 (20 is not above 2x10)", k)
	}
	if k := GavelKnee(sums[3:]); k != 3 {
		t.Errorf("knee b %v, want 3 (at the bound)", k)
	}
	var b bytes.Buffer
	if err := WriteGavelTable(&b, []string{"a", "b"}, []float64{1, 2, 3}, sums, true); err != nil {
		t.Fatal(err)
	}
	want := "| rate (jobs/h) | floor | a | b |\n|---:|---:|---:|---:|\n| 1 | 9.00 | 10.00 | 10.00 |\n| 2 | 9.00 | 20.00 | 11.00 |\n| 3 | 9.00 | 21.00 | bound |\n| knee (2x rate-1 JCT) |  | 3 | 3 |\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestGavelSweepDeterministic: the JSON does not depend on the number of
// workers.
func TestGavelSweepDeterministic(t *testing.T) {
	var out [2]string
	for i, w := range []int{1, 2} {
		sums, err := RunGavelSweep(context.Background(), GavelSweepConfig{
			Policies: []string{"fifo", "gandiva"}, Rates: []float64{0.5, 1}, Seeds: []uint64{0, 1},
			Cluster: "8:8:8", GPUsPerServer: 1, Workers: w, Round: env.RoundConfig{MeasureFrom: 0, MeasureTo: 15},
		})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, s := range sums {
			j, _ := json.Marshal(s)
			b.Write(j)
			b.WriteByte('\n')
		}
		out[i] = b.String()
	}
	if out[0] != out[1] || !strings.Contains(out[0], `"floor_jct_h"`) || !strings.Contains(out[0], `"rate_jobs_per_h":0.5`) {
		t.Fatalf("workers 1:\n%s\nworkers 2:\n%s", out[0], out[1])
	}
	if _, err := RunGavelSweep(context.Background(), GavelSweepConfig{Policies: []string{"nope"}}); err == nil {
		t.Fatal("unknown policy accepted")
	}
}
