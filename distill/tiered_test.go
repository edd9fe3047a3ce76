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
	run := func(dir string) ([]byte, *TieredSummary, error) {
		sum, err := RunTiered(context.Background(), TieredConfig{Teacher: tailTeacher, Out: dir, Pairs: 5, Alone: 12, MaxLogLoad: limit,
			HighPairs: 3, HighAlone: 6, Price: true, TrainRates: []float64{4.0}, TrainSeeds: []uint64{100}, Workers: 2})
		if err != nil {
			return nil, nil, err
		}
		b, err := os.ReadFile(filepath.Join(dir, "policy.json"))
		return b, sum, err
	}
	// The two runs at once: each is one simulation.
	var b []byte
	var errB error
	done := make(chan struct{})
	dir := t.TempDir()
	go func() {
		defer close(done)
		b, _, errB = run(dir)
	}()
	a, sum, err := run(t.TempDir())
	<-done
	if err != nil || errB != nil {
		t.Fatal(err, errB)
	}
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

// TestSupportStudent: the bands from column counts: each band keeps its
// most-used columns; past the limit the full LP with HighFull or with no
// solve there; one band without a limit.
func TestSupportStudent(t *testing.T) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	teacher := &env.TieredPackedPolicy{Weights: []float64{1, 0, 0, 0, 0, 0, 0}, LogRatio: 1}
	m := tab.Models
	used := [2]map[env.SupportColumn]int{
		{{A: m[0], GPU: "v100"}: 9, {A: m[1], GPU: "k80"}: 5, {A: m[2], GPU: "p100"}: 1, {A: m[0], B: m[1], GPU: "v100"}: 7, {A: m[1], B: m[2], GPU: "v100"}: 2},
		{{A: m[3], GPU: "v100"}: 4, {A: m[3], B: m[3], GPU: "k80"}: 3},
	}
	cols := func(s *env.ColumnSupport) []env.SupportColumn { return s.Columns(tab) }
	for _, tc := range []struct {
		name   string
		cfg    TieredConfig
		solves [2]int
		low    []env.SupportColumn
		high   []env.SupportColumn // nil: the full LP past the limit
		bands  int
	}{
		{"two bands", TieredConfig{Alone: 2, Pairs: 1, MaxLogLoad: 0.3, HighAlone: 1, HighPairs: 1, Price: true}, [2]int{20, 5},
			[]env.SupportColumn{{A: m[0], GPU: "v100"}, {A: m[1], GPU: "k80"}, {A: m[0], B: m[1], GPU: "v100"}},
			[]env.SupportColumn{{A: m[3], GPU: "v100"}, {A: m[3], B: m[3], GPU: "k80"}}, 2},
		{"full LP past the limit", TieredConfig{Alone: 1, Pairs: 2, MaxLogLoad: 0.3, HighAlone: 1, HighPairs: 1, HighFull: true}, [2]int{20, 5},
			[]env.SupportColumn{{A: m[0], GPU: "v100"}, {A: m[0], B: m[1], GPU: "v100"}, {A: m[1], B: m[2], GPU: "v100"}}, nil, 2},
		{"no solve past the limit", TieredConfig{Alone: 1, Pairs: 0, MaxLogLoad: 0.3, HighAlone: 1, HighPairs: 1}, [2]int{20, 0},
			[]env.SupportColumn{{A: m[0], GPU: "v100"}}, nil, 2},
		{"no limit", TieredConfig{Alone: 1, Pairs: 0, MaxLogLoad: math.Inf(1), HighAlone: 1, HighPairs: 1}, [2]int{20, 0},
			[]env.SupportColumn{{A: m[0], GPU: "v100"}}, nil, 1},
	} {
		st, bands, err := supportStudent(tab, teacher, tc.cfg, used, tc.solves)
		if err != nil {
			t.Fatal(err)
		}
		low, _ := env.NewColumnSupport(tab, tc.low)
		if !slices.Equal(cols(st.Support), cols(low)) || st.Support.Price != tc.cfg.Price || len(bands) != tc.bands {
			t.Fatalf("%s: low band %v (priced %v), %d bands; want %v", tc.name, cols(st.Support), st.Support.Price, len(bands), cols(low))
		}
		if tc.high == nil {
			if st.Support.Above != nil || (tc.bands == 2 && !bands[1].Full) {
				t.Fatalf("%s: a band above: %+v", tc.name, bands)
			}
			continue
		}
		high, _ := env.NewColumnSupport(tab, tc.high)
		if st.Support.Above == nil || !slices.Equal(cols(st.Support.Above), cols(high)) || st.Support.MaxLogLoad != tc.cfg.MaxLogLoad ||
			bands[1].Full || bands[1].AloneKept != 1 || bands[1].PairsKept != 1 || bands[0].Covered != 21.0/24 {
			t.Fatalf("%s: %+v, bands %+v", tc.name, st.Support, bands)
		}
	}
}

// TestRunTieredScenario: a student distilled on another cluster, at
// offered loads, names that cluster's GPU types, and its summary the
// scenario and loads.
func TestRunTieredScenario(t *testing.T) {
	dir := t.TempDir()
	cfg := TieredConfig{Teacher: tailTeacher, Out: dir, Pairs: 4, Alone: 8, MaxLogLoad: math.Inf(1),
		Scenario: "spot/128-single", Loads: true, TrainRates: []float64{0.8}, TrainSeeds: []uint64{100}, EvalRates: []float64{0.8}, Workers: 2}
	if !testing.Short() {
		cfg.EvalSeeds = []uint64{0} // three runs more
	}
	sum, err := RunTiered(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Scenario != "spot/128-single" || !slices.Equal(sum.TrainLoads, []float64{0.8}) || sum.TrainRates != nil ||
		len(sum.Eval) != len(cfg.EvalSeeds) || (len(sum.Eval) > 0 && (sum.Eval[0].Load != 0.8 || sum.Eval[0].Rate != 0 || !(sum.Eval[0].TeacherJCT > 0))) {
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
