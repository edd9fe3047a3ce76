package rl

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/replay"
)

// recordLangevin records one langevin run of the small test environment.
func recordLangevin(t *testing.T, seed uint64) string {
	return recordLangevinAt(t, seed, EnvSpec{Machines: 32, Load: 0.9, Episode: 1800})
}

// recordLangevinAt records one langevin run of spec.
func recordLangevinAt(t *testing.T, seed uint64, spec EnvSpec) string {
	t.Helper()
	c, w, err := spec.Config().Source(seed)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	s, _ := env.NewScheduler("langevin")
	if _, err := datasets.RecordRun(context.Background(), dir, c, w, s, datasets.RecordConfig{RunID: "t", Sim: env.SimConfig{Seed: seed, Duration: spec.Episode}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOfflineFromRecording: a recorded langevin run is re-created
// decision by decision (the re-run reproduces its metrics), every recorded
// choice is among the candidates, and behaviour cloning raises the
// agreement with it; AWR runs on the same data.
func TestOfflineFromRecording(t *testing.T) {
	var data OfflineData
	pol, err := NewPolicy(PolicyConfig{Candidates: 8, Hidden: 16, DampingMax: 2, ReplicaZeroBias: 4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []uint64{1, 2} {
		tr, err := replay.Open(recordLangevin(t, seed))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := env.NewScheduler("langevin")
		if err := LoadRecording(tr, s, nil, pol, 0.99, 1, &data); err != nil {
			t.Fatal(err)
		}
	}
	if data.Episodes != 2 || data.Len() < 100 || len(data.Return) != data.Len() {
		t.Fatalf("%d episodes, %d decisions, %d returns", data.Episodes, data.Len(), len(data.Return))
	}
	for i := 0; i < data.Len(); i++ {
		if data.Reward[i] > 0 {
			t.Fatalf("decision %d: slowdown reward %v > 0", i, data.Reward[i])
		}
	}
	cfg := DefaultOfflineConfig()
	cfg.Epochs = 6
	bc, err := TrainOffline(pol, &data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	first, last := bc[0], bc[len(bc)-1]
	t.Logf("BC agreement %.3f -> %.3f, loss %.3f -> %.3f", first.Agreement, last.Agreement, first.PolicyLoss, last.PolicyLoss)
	if !(last.Agreement > first.Agreement) || !(last.PolicyLoss < first.PolicyLoss) {
		t.Fatalf("behaviour cloning did not fit: %+v -> %+v", first, last)
	}
	cfg.Method = "awr"
	awr, err := TrainOffline(pol, &data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if w := awr[len(awr)-1].MeanWeight; !(w > 0 && w <= cfg.MaxWeight) {
		t.Fatalf("AWR mean weight %v", w)
	}
	// A recording re-run with another scheduler is refused.
	tr, _ := replay.Open(recordLangevin(t, 3))
	fgd, _ := env.NewScheduler("fgd")
	if err := LoadRecording(tr, fgd, nil, pol, 0.99, 1, &data); err == nil {
		t.Fatal("re-ran a langevin recording with fgd")
	}
}

// TestOfflineReferenceReward: rewards relative to a reference run. With
// the recorded scheduler itself as the reference (same seed, same
// governor), the reference run is the recorded run, so every reward is
// exactly 0; with another reference, on an overloaded cluster where
// placements change the slowdown, they are not, and the rewards sum to
// the difference of the two runs' accrued slowdown.
func TestOfflineReferenceReward(t *testing.T) {
	pol, err := NewPolicy(PolicyConfig{Candidates: 8, Hidden: 16, DampingMax: 2, ReplicaZeroBias: 4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := replay.Open(recordLangevinAt(t, 4, EnvSpec{Machines: 16, Load: 1.3, Episode: 3 * 3600}))
	if err != nil {
		t.Fatal(err)
	}
	load := func(ref string) *OfflineData {
		var data OfflineData
		s, _ := env.NewScheduler("langevin")
		r, _ := env.NewScheduler(ref)
		if err := LoadRecording(tr, s, r, pol, 0.99, 1, &data); err != nil {
			t.Fatal(err)
		}
		return &data
	}
	for i, r := range load("langevin").Reward {
		if r != 0 {
			t.Fatalf("decision %d: reward %v relative to the same run", i, r)
		}
	}
	var sum float64
	nonzero := 0
	for _, r := range load("random").Reward {
		sum += float64(r)
		if r != 0 {
			nonzero++
		}
	}
	// The two runs on their own, to the end of the recorded duration.
	accrued := func(name string, teg *env.TEGConfig) float64 {
		s, _ := env.NewScheduler(name)
		cfg := tr.Config.Sim()
		cfg.TEG = teg
		sim, err := env.NewSim(tr.Cluster, tr.Workload, s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		sim.Run()
		return sim.Accrued().Slowdown
	}
	lv := tr.Config.Sim().TEG
	want := accrued("random", nil) - accrued("langevin", lv)
	t.Logf("%d rewards non-zero; sum %.4f, want %.4f", nonzero, sum, want)
	if nonzero == 0 || math.Abs(sum-want) > 1e-3*math.Max(1, math.Abs(want)) {
		t.Fatalf("rewards relative to random: %d non-zero, sum %v, want %v", nonzero, sum, want)
	}
}
