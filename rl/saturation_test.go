package rl

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/tegrl/tegrl/env"
)

// satWorkload is a small saturation workload: the GPU machines of a
// synthetic cluster and its synthetic trace.
func satWorkload(t testing.TB) *SaturationWorkload {
	t.Helper()
	c, err := env.NewSyntheticCluster(120, 5)
	if err != nil {
		t.Fatal(err)
	}
	w, err := env.NewSyntheticWorkload(c, env.DefaultWorkload, 5)
	if err != nil {
		t.Fatal(err)
	}
	return &SaturationWorkload{Cluster: c.GPUMachines(), Trace: w.Jobs, Tune: 1.3}
}

// satEpisode runs one saturation episode choosing candidate pick(n) of n
// and returns the run, the rewards and the waits.
func satEpisode(t *testing.T, sw *SaturationWorkload, seed uint64, pick func(n int) int) (env.SaturationRun, []float64, int) {
	t.Helper()
	e, err := NewClusterEnv(ClusterEnvConfig{Saturation: func() (*SaturationWorkload, error) { return sw, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	f := Featurizer{Force: -1, Saturation: true}
	s := Samples{K: 8}
	d, err := e.Reset(seed)
	if err != nil {
		t.Fatal(err)
	}
	var rewards []float64
	waits := 0
	for done := false; !done; {
		s.Reset()
		a := env.Wait
		if f.Append(d, &s) {
			a = f.placeGPU(env.Place(int(s.Nodes[pick(int(s.Valid[0]))]), -1))
			for k := 0; k < int(s.Valid[0]); k++ {
				row := s.Cand[k*CandFeatures : (k+1)*CandFeatures]
				for c, x := range row {
					if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || c >= satCandUsed && x != 0 {
						t.Fatalf("step %d candidate %d feature %d = %v", len(rewards), k, c, x)
					}
				}
			}
		} else {
			waits++
		}
		var r float64
		d, r, done = e.Step(a)
		rewards = append(rewards, r)
	}
	return e.SaturationRun(), rewards, waits
}

// TestSaturationEnvFGDFirst: always choosing the first candidate (FGD's
// choice, with its GPU) reproduces FGD's saturation run exactly, so every
// reward, relative to FGD's run, is 0; another policy's return is its
// final allocation minus fragmentation relative to FGD's, in GPUs.
func TestSaturationEnvFGDFirst(t *testing.T) {
	sw := satWorkload(t)
	const seed = 42
	want, err := env.Saturate(sw.Cluster, sw.Trace, &env.FGD{}, seed, sw.Tune)
	if err != nil {
		t.Fatal(err)
	}
	got, rewards, waits := satEpisode(t, sw, seed, func(int) int { return 0 })
	if !reflect.DeepEqual(got.Bins, want.Bins) || got.Dropped != want.Dropped || got.Pods != want.Pods {
		t.Fatalf("FGD-first: dropped %d of %d, alloc at 130%% %.4f; FGD: dropped %d of %d, %.4f",
			got.Dropped, got.Pods, got.Bins[len(got.Bins)-1].AllocPct, want.Dropped, want.Pods, want.Bins[len(want.Bins)-1].AllocPct)
	}
	if len(rewards) != want.Pods || waits != want.Dropped {
		t.Fatalf("%d steps with %d waits, want %d pods with %d dropped", len(rewards), waits, want.Pods, want.Dropped)
	}
	for k, r := range rewards {
		if r != 0 {
			t.Fatalf("step %d: reward %v relative to FGD's own run", k, r)
		}
	}
	t.Logf("%d pods, %d dropped, %.2f%% allocated at the end", want.Pods, want.Dropped, want.Bins[len(want.Bins)-1].AllocPct)

	last, rewards, _ := satEpisode(t, sw, seed, func(n int) int { return n - 1 })
	var ret float64
	for _, r := range rewards {
		ret += r
	}
	gpus := float64(sw.Cluster.TotalGPUs()) / 100 // GPUs per percent of capacity
	end := func(r env.SaturationRun) float64 { b := r.Bins[len(r.Bins)-1]; return (b.AllocPct - b.FragPct) * gpus }
	if wantRet := end(last) - end(want); math.Abs(ret-wantRet) > 1e-6 || ret == 0 {
		t.Fatalf("last-candidate return %.6f GPUs, want %.6f (allocation - fragmentation relative to FGD's)", ret, wantRet)
	}
}

// TestSaturationPolicy: a saturation policy acts as a scheduler in the
// saturation experiment, deterministically, and its file records the
// features it was trained on.
func TestSaturationPolicy(t *testing.T) {
	sw := satWorkload(t)
	cfg := DefaultPolicyConfig()
	cfg.Features = FeaturesSaturation
	p, err := NewPolicy(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := p.EncodeParams(nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func() env.SaturationRun {
		q, _, err := LoadPolicy(payload)
		if err != nil {
			t.Fatal(err)
		}
		if q.Cfg.Features != FeaturesSaturation {
			t.Fatalf("loaded features %q", q.Cfg.Features)
		}
		r, err := env.Saturate(sw.Cluster, sw.Trace, NewScheduler(q, SchedulerConfig{Name: "policy"}), 7, sw.Tune)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs of the same policy and seed differ")
	}
	if a.Pods == 0 || a.Dropped == a.Pods || a.Bins[len(a.Bins)-1].AllocPct <= 0 {
		t.Fatalf("policy run placed nothing: %+v", a.Bins[len(a.Bins)-1])
	}
}

// TestSaturationBroadcast: a remote actor configures itself from a
// saturate run's broadcast, and refuses one whose spec is out of range.
func TestSaturationBroadcast(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.Features = FeaturesSaturation
	p, err := NewPolicy(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env string
		ok  bool
	}{
		{`{"machines":0,"load":0,"episode_s":0,"reward":"","reward_scale":1,"reward_baseline":"","mtbf_s":0,"saturate":{"nodes":"n.csv","pods":"p.csv","tune":1.3}}`, true},
		{`{"machines":0,"load":0,"episode_s":0,"reward":"","reward_scale":1,"reward_baseline":"","mtbf_s":0,"saturate":{"nodes":"","pods":"p.csv","tune":1.3}}`, false},
		{`{"machines":0,"load":0,"episode_s":0,"reward":"","reward_scale":1,"reward_baseline":"","mtbf_s":0,"saturate":{"nodes":"n.csv","pods":"p.csv","tune":-1}}`, false},
		{`{"machines":0,"load":0,"episode_s":0,"reward":"","reward_scale":1,"reward_baseline":"","mtbf_s":0}`, false},
	} {
		b, err := p.EncodeParams(map[string]string{metaEnv: c.env, metaActor: `{"seed":1,"segment_len":10}`})
		if err != nil {
			t.Fatal(err)
		}
		a, err := actorConfigFromParams(b)
		if (err == nil) != c.ok {
			t.Fatalf("%s: err %v, want ok %v", c.env, err, c.ok)
		}
		if c.ok && (a.Env.Saturation == nil || a.Policy.Features != FeaturesSaturation) {
			t.Fatalf("%s: actor config %+v", c.env, a)
		}
	}
}

// TestSaturationActAllocs: once warm, a policy's decision allocates
// nothing (ranking, features, the network on the tape, sampling).
func TestSaturationActAllocs(t *testing.T) {
	sw := satWorkload(t)
	cfg := DefaultPolicyConfig()
	cfg.Candidates, cfg.Features = 8, FeaturesSaturation
	p, err := NewPolicy(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewClusterEnv(ClusterEnvConfig{Saturation: func() (*SaturationWorkload, error) { return sw, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	d, err := e.Reset(3)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for k := 0; k < 50; k++ {
		a, _, _, _ := p.Act(d, rng, false)
		d, _, _ = e.Step(a)
	}
	for _, greedy := range []bool{true, false} {
		if n := testing.AllocsPerRun(200, func() { p.Act(d, rng, greedy) }); n != 0 {
			t.Errorf("greedy %v: %v allocations a decision", greedy, n)
		}
	}
}

// TestPolicyParamCount: the count LoadPolicy checks a file against is
// what NewPolicy makes, and a file whose metadata claims another width
// than its tensors hold is refused.
func TestPolicyParamCount(t *testing.T) {
	for _, h := range []int{1, 8, 32, 64} {
		cfg := DefaultPolicyConfig()
		cfg.Hidden = h
		p, err := NewPolicy(cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cfg.paramCount(), p.Params().Count(); got != want {
			t.Fatalf("hidden %d: paramCount %d, NewPolicy made %d", h, got, want)
		}
	}
	cfg := DefaultPolicyConfig()
	p, _ := NewPolicy(cfg, 1)
	_, payload := reload(t, p)
	// The same tensors under metadata that claims another width (same
	// length, so that the header still parses).
	big := strings.Replace(string(payload), `\"hidden\":32`, `\"hidden\":99`, 1)
	if big == string(payload) {
		t.Fatal("test file has no hidden width to rewrite")
	}
	if _, _, err := LoadPolicy([]byte(big)); err == nil || !strings.Contains(err.Error(), "parameters") {
		t.Fatalf("width 99 over width-32 tensors: err %v", err)
	}
}
