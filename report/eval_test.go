package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// TestPairSlowdown: policy slowdowns 1 and 2 against a reference's 2 and
// 2 differ by -1 and 0: mean -0.5 (-25% of 2), and every resample's mean
// is -1, -0.5 or 0, the ends a quarter each, so the 95% interval is
// [-1, 0]; SLA rates 0.5, 0.5 against 0.25, 0.25 differ by 0.25.
func TestPairSlowdown(t *testing.T) {
	pol := []env.Metrics{{MeanSlowdown: 1, SLAViolationRate: 0.5}, {MeanSlowdown: 2, SLAViolationRate: 0.5}}
	ref := []env.Metrics{{MeanSlowdown: 2, SLAViolationRate: 0.25}, {MeanSlowdown: 2, SLAViolationRate: 0.25}}
	got, err := PairSlowdown(pol, ref, BootstrapConfig{Resamples: 10000, Level: 0.95, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := PairedSlowdown{RefSlowdown: 2, PolicySlowdown: 1.5, DiffMean: -0.5, CILow: -1, CIHigh: 0, RelChangePct: -25, SLADiff: 0.25}
	if got != want {
		t.Errorf("PairSlowdown = %+v, want %+v", got, want)
	}
	if _, err := PairSlowdown(pol, ref[:1], BootstrapConfig{Resamples: 1, Level: 0.95}); err == nil {
		t.Error("unpaired runs accepted")
	}
}

// TestEvalRowOf: means over the runs, safety violations summed.
func TestEvalRowOf(t *testing.T) {
	row := EvalRowOf("x", []env.Metrics{
		{MeanSlowdown: 1, MeanJCTS: 10, SLAViolationRate: 0.5, SafetyViolations: 2, RewardMean: 0.25, JobsCompleted: 3},
		{MeanSlowdown: 2, MeanJCTS: 30, SLAViolationRate: 0, SafetyViolations: 1, RewardMean: 0.75, JobsCompleted: 4},
	})
	want := EvalRow{Scheduler: "x", MeanSlowdown: 1.5, MeanJCTS: 20, SLAViolationRate: 0.25, SafetyViolations: 3, RewardMean: 0.5, JobsCompleted: 3.5}
	if row != want {
		t.Errorf("EvalRowOf = %+v, want %+v", row, want)
	}
}

// TestWriteStructCSV: JSON names as the header, embedded fields inline,
// floats with 8 significant digits.
func TestWriteStructCSV(t *testing.T) {
	type inner struct {
		C string `json:"c"`
	}
	type row struct {
		A int `json:"a"`
		inner
		B float64 `json:"b,omitempty"`
	}
	path := filepath.Join(t.TempDir(), "log.csv")
	if err := WriteStructCSV(path, []row{{1, inner{"x"}, 1.0 / 3}, {2, inner{"y"}, 2}}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a,c,b\n1,x,0.33333333\n2,y,2\n"; !bytes.Equal(got, []byte(want)) {
		t.Errorf("CSV:\n%s\nwant:\n%s", got, want)
	}
}
