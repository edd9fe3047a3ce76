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
	if !data.Last[data.Len()-1] || data.Gamma != 0.99 {
		t.Fatalf("run ends or discount not recorded: last %v, gamma %v", data.Last[data.Len()-1], data.Gamma)
	}
	ends := 0
	for _, l := range data.Last {
		if l {
			ends++
		}
	}
	if ends != 2 {
		t.Fatalf("%d run ends for 2 runs", ends)
	}
	cfg.Lambda = 0.9
	if awr, err = TrainOffline(pol, &data, cfg); err != nil {
		t.Fatal(err)
	}
	if w := awr[len(awr)-1].MeanWeight; !(w > 0 && w <= cfg.MaxWeight) {
		t.Fatalf("AWR(λ 0.9) mean weight %v", w)
	}
	cfg.Lambda = 1.5
	if _, err := TrainOffline(pol, &data, cfg); err == nil {
		t.Fatal("λ 1.5 accepted")
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

// TestOfflineAdvantages: TD(λ) advantages stop at each run's end, and λ 1
// gives the Monte Carlo returns' R - V.
func TestOfflineAdvantages(t *testing.T) {
	// Two runs: decisions 0-2 and 3-4; γ 0.5.
	d := OfflineData{Reward: []float32{1, 2, 4, 8, 16}, Last: []bool{false, false, true, false, true}, Gamma: 0.5}
	d.Return = []float32{1 + 0.5*(2+0.5*4), 2 + 0.5*4, 4, 8 + 0.5*16, 16}
	v := []float32{1, 1, 1, 2, 2}
	adv, target := make([]float32, 5), make([]float32, 5)
	d.advantages(adv, target, v, 1)
	for i, want := range []float32{2, 3, 3, 14, 14} {
		if adv[i] != want {
			t.Errorf("λ 1: advantage %d = %v, want %v", i, adv[i], want)
		}
	}
	// λ 0: one-step TD errors r + γV(s') - V(s), with V(s') 0 after a run's end.
	d.advantages(adv, target, v, 0)
	for i, want := range []float32{0.5, 1.5, 3, 7, 14} {
		if adv[i] != want || target[i] != want+v[i] {
			t.Errorf("λ 0: advantage %d = %v, target %v, want %v and %v", i, adv[i], target[i], want, want+v[i])
		}
	}
	// λ 0.5: A_t = δ_t + γλ A_{t+1} within a run.
	d.advantages(adv, target, v, 0.5)
	a2 := float32(3)
	a1 := 1.5 + 0.25*a2
	a0 := 0.5 + 0.25*a1
	a4 := float32(14)
	a3 := 7 + 0.25*a4
	for i, want := range []float32{a0, a1, a2, a3, a4} {
		if adv[i] != want {
			t.Errorf("λ 0.5: advantage %d = %v, want %v", i, adv[i], want)
		}
	}
}
