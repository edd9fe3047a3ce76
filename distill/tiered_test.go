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
// the teacher's most-used columns, within the sizes asked, and the same
// bytes on a second run; the student file is a tiered policy with the
// teacher's parameters.
func TestRunTiered(t *testing.T) {
	run := func(dir string) ([]byte, *TieredSummary) {
		sum, err := RunTiered(context.Background(), TieredConfig{Teacher: tailTeacher, Out: dir, Pairs: 5, Alone: 12, MaxLogLoad: math.Inf(1),
			TrainRates: []float64{4.0}, TrainSeeds: []uint64{100}, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "policy.json"))
		if err != nil {
			t.Fatal(err)
		}
		return b, sum
	}
	a, sum := run(t.TempDir())
	b, _ := run(t.TempDir())
	if !bytes.Equal(a, b) {
		t.Fatal("same teacher and runs, another student")
	}
	if sum.Solves == 0 || sum.AloneKept != min(12, sum.AloneUsed) || sum.PairsKept != min(5, sum.PairsUsed) || sum.PairsUsed == 0 ||
		!(sum.Covered > 0 && sum.Covered <= 1) {
		t.Fatalf("summary %+v", sum)
	}
	student, err := env.ParseTieredPolicy(a)
	if err != nil || student.Support == nil || student.Support.Len() != sum.AloneKept+sum.PairsKept {
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

func TestRunTieredErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		cfg  TieredConfig
		want string
	}{
		{TieredConfig{Out: dir, TrainRates: []float64{4}, TrainSeeds: []uint64{1}}, "a teacher and an output folder"},
		{TieredConfig{Teacher: tailTeacher, Out: dir, Pairs: -1, TrainRates: []float64{4}, TrainSeeds: []uint64{1}}, "want >= 0"},
		{TieredConfig{Teacher: tailTeacher, Out: dir}, "no training rates"},
		{TieredConfig{Teacher: "../docs/policies/gavel-multi.json", Out: dir, TrainRates: []float64{4}, TrainSeeds: []uint64{1}}, "tiered policy"},
		{TieredConfig{Teacher: "/no/such.json", Out: dir, TrainRates: []float64{4}, TrainSeeds: []uint64{1}}, "no such file"},
	} {
		if _, err := RunTiered(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
