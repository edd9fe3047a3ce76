package distill

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

const tailTeacher = "../docs/policies/gavel-single-tiered-tail.json"

// TestRunTiered: a small distillation writes a student whose support is
// the teacher's most-used columns in each load band, within the sizes
// asked, and the same bytes on a second run; the student file is a
// tiered policy with the teacher's parameters.
func TestRunTiered(t *testing.T) {
	const limit = -0.6
	run := func(dir string, high bool) ([]byte, *TieredSummary) {
		sum, err := RunTiered(context.Background(), TieredConfig{Teacher: tailTeacher, Out: dir, Pairs: 5, Alone: 12, MaxLogLoad: limit,
			HighPairs: 3, HighAlone: 6, HighFull: !high, Price: high, TrainRates: []float64{4.0}, TrainSeeds: []uint64{100}, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "policy.json"))
		if err != nil {
			t.Fatal(err)
		}
		return b, sum
	}
	a, sum := run(t.TempDir(), true)
	b, _ := run(t.TempDir(), true)
	if !bytes.Equal(a, b) {
		t.Fatal("same teacher and runs, another student")
	}
	if len(sum.Bands) != 2 || sum.Solves != sum.Bands[0].Solves+sum.Bands[1].Solves || sum.Bands[1].Full {
		t.Fatalf("summary %+v", sum)
	}
	for k, want := range [][2]int{{12, 5}, {6, 3}} {
		band := sum.Bands[k]
		if band.Solves == 0 || band.AloneKept != min(want[0], band.AloneUsed) || band.PairsKept != min(want[1], band.PairsUsed) || band.PairsUsed == 0 ||
			!(band.Covered > 0 && band.Covered <= 1) || (band.MaxLogLoad == nil) != (k == 1) {
			t.Fatalf("band %d: %+v", k, band)
		}
	}
	student, err := env.ParseTieredPolicy(a)
	if err != nil || student.Support == nil || student.Support.MaxLogLoad != limit || student.Support.Above == nil ||
		!math.IsInf(student.Support.Above.MaxLogLoad, 1) || student.Support.Above.Above != nil ||
		student.Support.Above.Len() != sum.Bands[1].AloneKept+sum.Bands[1].PairsKept ||
		student.Support.Len() != sum.Bands[0].AloneKept+sum.Bands[0].PairsKept+sum.Bands[1].AloneKept+sum.Bands[1].PairsKept ||
		!student.Support.Price || !student.Support.Above.Price {
		t.Fatalf("student %v %+v", err, student)
	}
	// A limit no training solve passed: no data for a band above it, so
	// the full LP there.
	none, err := RunTiered(context.Background(), TieredConfig{Teacher: tailTeacher, Out: t.TempDir(), Pairs: 5, Alone: 12, MaxLogLoad: 5,
		HighPairs: 3, HighAlone: 6, TrainRates: []float64{4.0}, TrainSeeds: []uint64{100}, Workers: 2})
	if err != nil || len(none.Bands) != 2 || none.Bands[1].Solves != 0 || !none.Bands[1].Full {
		t.Fatalf("no solve past the limit: %v %+v", err, none)
	}
	// The full LP past the limit: one support, a band that says so.
	c, full := run(t.TempDir(), false)
	if len(full.Bands) != 2 || !full.Bands[1].Full || full.Bands[1].Solves != sum.Bands[1].Solves || full.Bands[1].AloneKept != 0 {
		t.Fatalf("full LP past the limit: %+v", full.Bands)
	}
	if fs, err := env.ParseTieredPolicy(c); err != nil || fs.Support.Above != nil || fs.Support.MaxLogLoad != limit || fs.Support.Price ||
		fs.Support.Len() != student.Support.Len()-student.Support.Above.Len() {
		t.Fatalf("full LP past the limit: %v %+v", err, fs)
	}
	tb, err := os.ReadFile(tailTeacher)
	if err != nil {
		t.Fatal(err)
	}
	teacher, err := env.ParseTieredPolicy(tb)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(student.Weights, teacher.Weights) || student.LogRatio != teacher.LogRatio || student.TieDeficit != teacher.TieDeficit ||
		student.AgeGuardHours != teacher.AgeGuardHours || student.GangGuardHours != teacher.GangGuardHours {
		t.Fatalf("student's parameters %+v, teacher's %+v", student, teacher)
	}
}

// TestRunTieredScenario: a student distilled on another cluster, at
// offered loads, names that cluster's GPU types, and its summary the
// scenario and loads.
func TestRunTieredScenario(t *testing.T) {
	dir := t.TempDir()
	sum, err := RunTiered(context.Background(), TieredConfig{Teacher: tailTeacher, Out: dir, Pairs: 4, Alone: 8, MaxLogLoad: math.Inf(1),
		Scenario: "spot/128-single", Loads: true, TrainRates: []float64{0.8}, TrainSeeds: []uint64{100}, EvalRates: []float64{0.8}, EvalSeeds: []uint64{0}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Scenario != "spot/128-single" || !slices.Equal(sum.TrainLoads, []float64{0.8}) || sum.TrainRates != nil ||
		len(sum.Eval) != 1 || sum.Eval[0].Load != 0.8 || sum.Eval[0].Rate != 0 || !(sum.Eval[0].TeacherJCT > 0) {
		t.Fatalf("summary %+v", sum)
	}
	b, err := os.ReadFile(filepath.Join(dir, "policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"v100"`) || !strings.Contains(string(b), `"h800"`) && !strings.Contains(string(b), `"a100`) {
		t.Fatalf("a student of the spot cluster naming Gavel's types, or none of its own:\n%s", b)
	}
}

func TestRunTieredErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		cfg  TieredConfig
		want string
	}{
		{TieredConfig{Out: dir, TrainRates: []float64{4}, TrainSeeds: []uint64{1}}, "a teacher and an output folder"},
		{TieredConfig{Teacher: tailTeacher, Out: dir, Pairs: -1, TrainRates: []float64{4}, TrainSeeds: []uint64{1}}, "want >= 0"},
		{TieredConfig{Teacher: tailTeacher, Out: dir, HighAlone: -1, TrainRates: []float64{4}, TrainSeeds: []uint64{1}}, "want >= 0"},
		{TieredConfig{Teacher: tailTeacher, Out: dir, MaxLogLoad: 1e9, TrainRates: []float64{4}, TrainSeeds: []uint64{1}}, "within ±10"},
		{TieredConfig{Teacher: tailTeacher, Out: dir, MaxLogLoad: math.NaN(), TrainRates: []float64{4}, TrainSeeds: []uint64{1}}, "within ±10"},
		{TieredConfig{Teacher: tailTeacher, Out: dir}, "no training rates"},
		{TieredConfig{Teacher: tailTeacher, Out: dir, Loads: true, TrainRates: []float64{0}, TrainSeeds: []uint64{1}}, "want each > 0"},
		{TieredConfig{Teacher: tailTeacher, Out: dir, TrainRates: []float64{4}, EvalRates: []float64{math.Inf(1)}, TrainSeeds: []uint64{1}}, "want each > 0"},
		{TieredConfig{Teacher: tailTeacher, Out: dir, Scenario: "nope-single", Loads: true, TrainRates: []float64{0.5}, TrainSeeds: []uint64{1}}, "nope"},
		{TieredConfig{Teacher: "../docs/policies/gavel-multi.json", Out: dir, TrainRates: []float64{4}, TrainSeeds: []uint64{1}}, "tiered policy"},
		{TieredConfig{Teacher: "/no/such.json", Out: dir, TrainRates: []float64{4}, TrainSeeds: []uint64{1}}, "no such file"},
	} {
		if _, err := RunTiered(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
