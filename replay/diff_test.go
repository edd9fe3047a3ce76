package replay

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// TestDiffSame: a scheduler against itself differs nowhere.
func TestDiffSame(t *testing.T) {
	dir, rec := record(t, "fgd")
	tr := openTrace(t, dir)
	d, err := Diff(context.Background(), tr, newSched(t, "fgd"), newSched(t, "fgd"), DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Aligned != rec.Transitions || d.Differing != 0 || d.OnlyA != 0 || d.OnlyB != 0 || len(d.Differences) != 0 {
		t.Fatalf("fgd vs fgd: aligned %d of %d, differing %d, only %d/%d", d.Aligned, rec.Transitions, d.Differing, d.OnlyA, d.OnlyB)
	}
	if !d.A.Verification.Reproduced || !d.B.Verification.Reproduced {
		t.Fatal("both runs of the recorded scheduler should reproduce the recording")
	}
	for _, m := range d.Metrics {
		if m.Delta != 0 || m.Better != "" {
			t.Fatalf("metric %s differs: %+v", m.Name, m)
		}
	}
}

// TestDiffOther: fgd against langevin on an fgd recording: differences
// found, each a real difference between the two runs' decision lists,
// sorted by time, cut at the limit; every metric with A, B and B - A.
func TestDiffOther(t *testing.T) {
	dir, _ := record(t, "fgd")
	tr := openTrace(t, dir)
	full, err := Diff(context.Background(), tr, newSched(t, "fgd"), newSched(t, "langevin"), DiffOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if full.Differing == 0 || int64(len(full.Differences)) != full.Differing+full.OnlyA+full.OnlyB {
		t.Fatalf("fgd vs langevin: %d differing, %d/%d unmatched, %d listed", full.Differing, full.OnlyA, full.OnlyB, len(full.Differences))
	}
	if full.A.NumDecisions != full.Aligned+full.OnlyA || full.B.NumDecisions != full.Aligned+full.OnlyB {
		t.Fatalf("counts: A %d B %d aligned %d only %d/%d", full.A.NumDecisions, full.B.NumDecisions, full.Aligned, full.OnlyA, full.OnlyB)
	}
	if !full.A.Verification.Reproduced || full.B.Verification.Checked {
		t.Fatalf("verification: A %+v, B %+v", full.A.Verification, full.B.Verification)
	}
	if full.B.TEG.Moves != true || full.A.TEG.Moves != false {
		t.Fatal("langevin should run under its own governor (moves on), fgd under the recorded one")
	}
	if !slices.IsSortedFunc(full.Differences, compareDiffs) {
		t.Fatal("differences not sorted by time")
	}
	// Every listed difference is checked against the runs' decisions by
	// brute force.
	nth := func(ds []Decision, job, k int32) *Decision {
		for i := range ds {
			if ds[i].JobID == job {
				if k == 0 {
					return &ds[i]
				}
				k--
			}
		}
		return nil
	}
	for _, x := range full.Differences {
		a, b := nth(full.A.Decisions, x.JobID, x.Occurrence), nth(full.B.Decisions, x.JobID, x.Occurrence)
		if (a == nil) != (x.A == nil) || (b == nil) != (x.B == nil) || a != nil && !a.Same(x.A) || b != nil && !b.Same(x.B) {
			t.Fatalf("difference %+v does not match the runs", x)
		}
		if a != nil && b != nil && sameAction(&a.Action, &b.Action) {
			t.Fatalf("difference %+v lists equal actions", x)
		}
	}
	// The limit keeps the first differences.
	cut, err := Diff(context.Background(), tr, newSched(t, "fgd"), newSched(t, "langevin"), DiffOptions{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(cut.Differences) != 5 || cut.Differing != full.Differing {
		t.Fatalf("limit 5: %d listed, %d differing (full %d)", len(cut.Differences), cut.Differing, full.Differing)
	}
	for i := range cut.Differences {
		if compareDiffs(cut.Differences[i], full.Differences[i]) != 0 {
			t.Fatalf("limited difference %d is %+v, want %+v", i, cut.Differences[i], full.Differences[i])
		}
	}
	// Metrics: every numeric metric, in report's order, with B - A.
	names := report.MetricNames()
	if len(full.Metrics) != len(names) {
		t.Fatalf("%d metrics, want %d", len(full.Metrics), len(names))
	}
	for i, m := range full.Metrics {
		if m.Name != names[i] || m.Delta != m.B-m.A || m.Direction != report.MetricDirection(m.Name) {
			t.Fatalf("metric %d: %+v", i, m)
		}
	}
	byName := map[string]MetricDelta{}
	for _, m := range full.Metrics {
		byName[m.Name] = m
	}
	if m := byName["mean_jct_s"]; m.A != full.A.Metrics.MeanJCTS || m.B != full.B.Metrics.MeanJCTS {
		t.Fatalf("mean_jct_s %+v, runs %v and %v", m, full.A.Metrics.MeanJCTS, full.B.Metrics.MeanJCTS)
	}
	if m := byName["machine_failures"]; m.A == 0 || m.Delta != 0 {
		t.Fatalf("machine failures come from the seed, the same for both runs: %+v", m)
	}
	if _, err := json.Marshal(full); err != nil {
		t.Fatalf("JSON: %v", err)
	}
}

// TestAlign: alignment by (job, occurrence) on hand-made decision lists.
func TestAlign(t *testing.T) {
	nan := float32(math.NaN())
	dec := func(step int64, tm float64, job int32, node int) Decision {
		return Decision{Step: step, TimeS: tm, JobID: job, Action: env.Action{Node: node, GPU: -1, Damping: nan}}
	}
	a := []Decision{dec(0, 10, 1, 3), dec(1, 10, 2, -1), dec(2, 20, 2, 4), dec(3, 30, 5, 1)}
	b := []Decision{dec(0, 10, 1, 3), dec(1, 10, 2, 6), dec(2, 40, 7, 2)}
	r := alignDecisions(a, b, 0)
	if r.Aligned != 2 || r.Differing != 1 || r.OnlyA != 2 || r.OnlyB != 1 {
		t.Fatalf("aligned %d differing %d only %d/%d", r.Aligned, r.Differing, r.OnlyA, r.OnlyB)
	}
	type row struct {
		job, occ int32
		a, b     int // node, or -9 for none
	}
	var got []row
	for _, d := range r.Differences {
		x := row{d.JobID, d.Occurrence, -9, -9}
		if d.A != nil {
			x.a = d.A.Action.Node
		}
		if d.B != nil {
			x.b = d.B.Action.Node
		}
		got = append(got, x)
	}
	want := []row{{2, 0, -1, 6}, {2, 1, 4, -9}, {5, 0, 1, -9}, {7, 0, -9, 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("differences %+v, want %+v", got, want)
	}
	if r := alignDecisions(a, b, 1); len(r.Differences) != 1 || r.Differences[0].JobID != 2 || r.Differing != 1 {
		t.Fatalf("limit 1: %+v", r.Differences)
	}
}

// TestReportDeterministic: the same trace and schedulers give the same
// report bytes, JSON and text.
func TestReportDeterministic(t *testing.T) {
	dir, _ := record(t, "langevin")
	out := func() (string, string) {
		tr := openTrace(t, dir)
		d, err := Diff(context.Background(), tr, newSched(t, "langevin"), newSched(t, "p2c"), DiffOptions{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		rep := NewReport(tr, nil, d)
		var j, txt strings.Builder
		if err := rep.WriteJSON(&j); err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteText(&txt); err != nil {
			t.Fatal(err)
		}
		if err := rep.Failure(); err != nil {
			t.Fatalf("langevin reproduces its recording: %v", err)
		}
		return j.String(), txt.String()
	}
	j1, t1 := out()
	j2, t2 := out()
	if j1 != j2 || t1 != t2 {
		t.Fatal("two diffs of the same trace and schedulers print different bytes")
	}
	for _, want := range []string{"reproduced  yes", "other       p2c under its own governor", "(first 10 of "} {
		if !strings.Contains(t1, want) {
			t.Fatalf("text lacks %q:\n%s", want, t1)
		}
	}
}
