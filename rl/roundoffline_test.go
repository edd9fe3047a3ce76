package rl

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/replay"
	"github.com/tegrl/tegrl/report"
)

// tinyWorkload draws a tiny recording's jobs: n gangs of 1-8 GPUs at
// rate jobs/h, seed 7.
type tinyWorkload struct {
	rate float64
	n    int
}

var (
	// tinyLight, 40 jobs in about an hour and a half, fills the V100s
	// and spills onto the other types but leaves no job waiting.
	tinyLight = tinyWorkload{30, 40}
	// tinyFull, 80 jobs in 24 minutes, leaves jobs waiting.
	tinyFull = tinyWorkload{200, 80}
)

const tinySeed = 7

// recordTiny runs the scored policy weights on the tiny workload and
// writes it as a recording in dir, as tegrl dataset record would; it
// returns the allocation rows.
func recordTiny(t *testing.T, dir string, wl tinyWorkload, weights []float64) []datasets.Allocation {
	t.Helper()
	tab, err := env.GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	gen, err := env.NewGavelGenerator(tab, env.GavelWorkloadConfig{Rate: wl.rate, Multi: true, Seed: tinySeed})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []env.DLJob
	for range wl.n {
		jobs = append(jobs, gen.Next())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	polPath := filepath.Join(dir, "recorded-policy.json")
	if err := env.WriteScoredPolicy(polPath, weights, nil); err != nil {
		t.Fatal(err)
	}
	jw, err := datasets.CreateDLJobs(filepath.Join(dir, replay.GPUJobsFile), tab, datasets.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if err := jw.Append(j); err != nil {
			t.Fatal(err)
		}
	}
	if err := jw.Close(); err != nil {
		t.Fatal(err)
	}
	aw, err := datasets.CreateAllocations(filepath.Join(dir, replay.GPUAllocationsFile), datasets.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rows []datasets.Allocation
	index := int32(0)
	rc := env.RoundConfig{Seed: tinySeed, MeasureFrom: 4000, MeasureTo: 5000, MaxSeconds: (5000/wl.rate + 500) * 3600,
		OnAllocate: func(s *env.RoundState, x []float64) {
			nt := len(s.Types)
			for i, j := range s.Jobs {
				for k, g := range s.Types {
					if f := x[i*nt+k]; f > 0 {
						a := datasets.Allocation{Index: index, TimeS: s.Time, Job: int32(j.ID), GPUType: g, Fraction: f}
						rows = append(rows, a)
						if err := aw.Append(a); err != nil {
							t.Error(err)
						}
					}
				}
			}
			index++
		}}
	cl, err := env.ParseGPUClusterSpec("36:36:36", tab, 1)
	if err != nil {
		t.Fatal(err)
	}
	list, err := env.NewJobList(tab, jobs)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := env.AllocationPolicyByName(polPath)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := env.NewRoundSim(cl, pol, list, rc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.Run()
	if err != nil {
		t.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	rec := replay.GPURecording{Config: replay.GPURunConfig{Scenario: "gavel-multi", Rate: wl.rate, Policy: polPath, Seed: tinySeed},
		Metrics: report.GPUMetrics{Scenario: "gavel-multi", Scheduler: polPath, Seed: tinySeed, Rate: wl.rate, Jobs: r.Jobs,
			AtBound: r.Saturated, Rounds: r.Rounds, Moves: r.Moves},
		Jobs: int64(len(jobs)), Allocations: aw.Rows()}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, replay.GPURunFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return rows
}

// allFeatureWeights gives every feature a weight, so that a wrong
// feature (the previous round's type above all, which the replay
// rebuilds from the recorded allocations) changes the allocations.
func allFeatureWeights() []float64 {
	return []float64{10, -0.5, 1, -0.3, 1.5, 2, 0.5, 0.2, -1, 0.3}
}

// TestRoundOfflineFeaturesAndLabels: at every replayed allocation of a
// scored policy's recording, allocating greedily by the recorded weights
// over the replay's features (best score first, one gang per job while
// GPUs are free) gives exactly the recorded labels.
func TestRoundOfflineFeaturesAndLabels(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	w := allFeatureWeights()
	rows := recordTiny(t, dir, tinyFull, w)
	allocs, contended, positive := 0, 0, 0
	s := roundSamples{dim: env.NumScoredFeatures}
	s.check = func(st *env.RoundState, fs *env.ScoredFeatureSet, labels []float64) {
		allocs++
		type cand struct {
			score float64
			k     int
		}
		var cs []cand
		for k := range fs.Pairs {
			sc := 0.0
			for i, v := range fs.Row(k) {
				sc += w[i] * v
			}
			if sc > 0 {
				cs = append(cs, cand{sc, k})
			}
		}
		slices.SortStableFunc(cs, func(a, b cand) int {
			switch {
			case a.score > b.score:
				return -1
			case a.score < b.score:
				return 1
			}
			return 0
		})
		free := slices.Clone(st.Capacity)
		done := make([]bool, len(st.Jobs))
		want := make([]float64, len(labels))
		for _, c := range cs {
			q := fs.Pairs[c.k]
			if sc := st.Jobs[q.Job].Scale; !done[q.Job] && free[q.Type] >= sc {
				done[q.Job], free[q.Type], want[c.k] = true, free[q.Type]-sc, 1
			}
		}
		if !slices.Equal(labels, want) {
			t.Fatalf("allocation at %v s: labels %v, the recorded weights on the replayed features give %v", st.Time, labels, want)
		}
		if slices.Contains(done, false) {
			contended++
		}
		for _, y := range labels {
			positive += int(y)
		}
	}
	cfg := DefaultRoundOfflineConfig()
	cfg.Censor = false
	res, err := trainRoundOffline([]string{dir}, cfg, &s)
	if err != nil {
		t.Fatal(err)
	}
	if positive != len(rows) || res.Recordings[0].Positive != len(rows) {
		t.Fatalf("%d positive labels (%d kept), want the %d recorded rows", positive, res.Recordings[0].Positive, len(rows))
	}
	if allocs != res.Recordings[0].Allocs || allocs < 10 || contended == 0 {
		t.Fatalf("%d allocations (%d contended), result says %d: the tiny workload should fill the cluster", allocs, contended, res.Recordings[0].Allocs)
	}
}

// TestRoundOfflineBCReproducesPolicy: BC on the recording of the
// first-come-first-served scored policy (env.DefaultScoredWeights) on a
// light workload, replayed on the same jobs, makes exactly the recorded
// allocations. (On tinyFull it does not: the logistic fit of who gets
// the last GPUs is not the recorded order.)
func TestRoundOfflineBCReproducesPolicy(t *testing.T) {
	tmp := t.TempDir()
	rec := filepath.Join(tmp, "rec")
	want := recordTiny(t, rec, tinyLight, env.DefaultScoredWeights())
	types := map[string]bool{}
	for _, a := range want {
		types[a.GPUType] = true
	}
	if len(types) < 2 {
		t.Fatalf("the recording uses GPU types %v: want a choice between types to learn", types)
	}
	res, err := TrainRoundOffline([]string{rec}, DefaultRoundOfflineConfig())
	if err != nil {
		t.Fatal(err)
	}
	got := recordTiny(t, filepath.Join(tmp, "bc"), tinyLight, res.Weights)
	if len(got) != len(want) {
		t.Fatalf("BC policy: %d allocation rows, the recorded policy %d (weights %v)", len(got), len(want), res.Weights)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("BC policy: row %d is %+v, recorded %+v (weights %v)", i, got[i], want[i], res.Weights)
		}
	}
	// Same inputs, same bytes.
	again, err := TrainRoundOffline([]string{rec}, DefaultRoundOfflineConfig())
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(res)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Fatalf("two fits differ:\n%s\n%s", a, b)
	}
}

// TestRoundOfflineRecordedRun: a recording of tegrl dataset record
// (replay.RecordGPU) replays to its recorded average JCT; its
// allocations under another run's jobs are refused, naming the folder
// and the allocation; AWR weighs the slower run less; gandiva's runs
// are refused.
func TestRoundOfflineRecordedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("two protocol runs")
	}
	tmp := t.TempDir()
	dirs := []string{filepath.Join(tmp, "fifo_perf"), filepath.Join(tmp, "max_min_fairness_perf")}
	var recs []*replay.GPURecording
	for i, p := range []string{"fifo_perf", "max_min_fairness_perf"} {
		r, err := replay.RecordGPU(dirs[i], replay.GPURunConfig{Scenario: "gavel-multi", Rate: 2.0, Policy: p, Seed: 100})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	cfg := DefaultRoundOfflineConfig()
	cfg.Method = "awr"
	res, err := TrainRoundOffline(dirs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res.Recordings {
		if r.AvgJCT == nil || *r.AvgJCT != *recs[i].Metrics.AvgJCT {
			t.Fatalf("%s: replayed avg JCT %v, recorded %v", r.Dir, r.AvgJCT, *recs[i].Metrics.AvgJCT)
		}
	}
	// max_min_fairness_perf is the faster at 2.0 jobs/h seed 100.
	f, m := res.Recordings[0], res.Recordings[1]
	if m.Weight != 1 || !(f.Weight < 1) || f.Weight != max(cfg.MinWeight, math.Exp(f.Advantage/cfg.Beta)) {
		t.Fatalf("AWR weights %v (A %v) and %v (A %v)", f.Weight, f.Advantage, m.Weight, m.Advantage)
	}

	// The other policy's allocations on these jobs leave the recording.
	mixed := filepath.Join(tmp, "mixed")
	if err := os.MkdirAll(mixed, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, name string }{{dirs[0], replay.GPUJobsFile}, {dirs[0], replay.GPURunFile}, {dirs[1], replay.GPUAllocationsFile}} {
		b, err := os.ReadFile(filepath.Join(c.from, c.name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mixed, c.name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = TrainRoundOffline([]string{mixed}, DefaultRoundOfflineConfig())
	if err == nil || !strings.Contains(err.Error(), mixed) || !strings.Contains(err.Error(), "allocation") {
		t.Fatalf("mixed recording: %v, want an error naming %s and the allocation", err, mixed)
	}

	g := filepath.Join(tmp, "gandiva")
	if _, err := replay.RecordGPU(g, replay.GPURunConfig{Scenario: "gavel-multi", Rate: 2.0, Policy: "gandiva", Seed: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := TrainRoundOffline([]string{g}, DefaultRoundOfflineConfig()); err == nil || !strings.Contains(err.Error(), "co-locates") {
		t.Fatalf("gandiva: %v, want the packing refusal", err)
	}
}
