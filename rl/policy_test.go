package rl

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/nn"
)

func smallEnv(t testing.TB) *ClusterEnv {
	t.Helper()
	e, err := NewClusterEnv(ClusterEnvConfig{Source: SyntheticSource(48, 0.9, 1800), Duration: 1800})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestClusterEnvEpisode: an untrained policy runs whole episodes; the
// slowdown reward sums to minus the accrued slowdown; same seed, same
// episode.
func TestClusterEnvEpisode(t *testing.T) {
	run := func() (int, float64, env.Metrics) {
		p, err := NewPolicy(DefaultPolicyConfig(), 1)
		if err != nil {
			t.Fatal(err)
		}
		e := smallEnv(t)
		defer e.Close()
		sched := NewScheduler(p, SchedulerConfig{Name: "policy", Sample: true, Seed: 9})
		d := mustReset(t, e, 3)
		steps, ret := 0, 0.0
		for d.Obs != nil {
			a, _, _, ok := p.Act(d, sched.rng, false)
			if !ok {
				a = env.Wait
			}
			var r float64
			var done bool
			d, r, done = e.Step(a)
			ret += r
			steps++
			if done {
				break
			}
		}
		if got := -e.Sim().Accrued().Slowdown; abs(got-ret) > 1e-9*max(1, abs(got)) {
			t.Fatalf("return %v, accrued %v", ret, got)
		}
		return steps, ret, e.Sim().Metrics()
	}
	start := time.Now()
	s1, r1, m1 := run()
	t.Logf("%d decisions in %v, return %.2f, slowdown %.3f, completed %d/%d", s1, time.Since(start), r1, m1.MeanSlowdown, m1.JobsCompleted, m1.JobsSubmitted)
	if s1 < 50 || m1.JobsCompleted == 0 || m1.SafetyViolations != 0 {
		t.Fatalf("episode: %d decisions, metrics %+v", s1, m1)
	}
	s2, r2, m2 := run()
	if s1 != s2 || r1 != r2 || m1 != m2 {
		t.Fatalf("not deterministic: %d %v vs %d %v", s1, r1, s2, r2)
	}
}

// reload saves p, loads the file as a new policy, checks that the new one
// saves the same bytes, and returns it with the file.
func reload(t *testing.T, p *Policy) (*Policy, []byte) {
	t.Helper()
	payload, err := p.EncodeParams(nil)
	if err != nil {
		t.Fatal(err)
	}
	q, _, err := LoadPolicy(payload)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := q.EncodeParams(nil); string(b) != string(payload) {
		t.Fatal("a loaded policy differs from the saved one")
	}
	return q, payload
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestFeatures: the sample of a decision holds the admitted machines (all
// of them when they are at most K), each row starting with the machine's
// observation row; the fit and contention features agree with the state;
// and the log-probability Act reports is the one the learner recomputes.
func TestFeatures(t *testing.T) {
	p, err := NewPolicy(PolicyConfig{Candidates: 64, Hidden: 8, DampingMax: 2, ReplicaZeroBias: 4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := smallEnv(t)
	defer e.Close()
	d := mustReset(t, e, 5)
	rng := rand.New(rand.NewPCG(1, 2))
	var tens env.Tensors
	checked := 0
	for k := 0; k < 40 && d.Obs != nil; k++ {
		var s Samples
		s.K = p.Cfg.Candidates
		d.Obs.FillTensors(&tens)
		admitted := 0
		for _, ok := range tens.Mask {
			if ok {
				admitted++
			}
		}
		if !p.Featurize(d, &s) {
			if admitted != 0 {
				t.Fatalf("decision %d: %d machines admit the job but no sample", k, admitted)
			}
			d, _, _ = e.Step(env.Wait)
			continue
		}
		if int(s.Valid[0]) != admitted {
			t.Fatalf("decision %d: %d candidates, %d admitted", k, s.Valid[0], admitted)
		}
		for c := 0; c < int(s.Valid[0]); c++ {
			i := int(s.Nodes[c])
			row := s.Cand[c*CandFeatures : (c+1)*CandFeatures]
			for f := 0; f < env.MachineFeatures; f++ {
				if row[f] != tens.Machine[i*env.MachineFeatures+f] {
					t.Fatalf("candidate %d (machine %d) feature %d = %v, observation has %v", c, i, f, row[f], tens.Machine[i*env.MachineFeatures+f])
				}
			}
			x := row[env.MachineFeatures+2*env.HistoryChannels:]
			m := d.Obs.State.M[i]
			if want := float32(float64(m.FreeCPU-d.Obs.Req.CPU) / fitCPUNorm); x[0] != want {
				t.Fatalf("CPU left %v, want %v", x[0], want)
			}
			if !(x[7] > 0 && x[7] <= 1) || x[8] < 0 || x[4] > 0 {
				t.Fatalf("rate %v, oversubscription %v, log Boltzmann %v", x[7], x[8], x[4])
			}
			checked++
		}
		a, logp, _ := p.Sample(&s, 0, rng, false)
		tp := nn.NewTape[float32]()
		lp, _, _ := p.evaluate(tp, &s, []int{0})
		if lp.Data[0] != logp {
			t.Fatalf("Act log-prob %v, evaluate %v", logp, lp.Data[0])
		}
		d, _, _ = e.Step(a)
	}
	if checked == 0 {
		t.Fatal("no candidate checked")
	}
}

// TestPolicyActivation: "relu" is taken with the MLP encoder only, and
// anything else is refused by name; a ReLU policy's heads are those of
// its weights under ReLU (not tanh), survive a save and load bit for
// bit, and a decision allocates nothing.
func TestPolicyActivation(t *testing.T) {
	for _, c := range []struct {
		act, enc, want string
	}{{"gelu", "", `unknown activation "gelu"`}, {ActivationReLU, EncoderGNN, "needs the MLP encoder"}} {
		cfg := DefaultPolicyConfig()
		cfg.Activation, cfg.Encoder = c.act, c.enc
		if _, err := NewPolicy(cfg, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("activation %q, encoder %q: err %v, want %q", c.act, c.enc, err, c.want)
		}
	}
	cfg := DefaultPolicyConfig()
	cfg.Hidden, cfg.Activation = 8, ActivationReLU
	p, err := NewPolicy(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	tanhCfg := cfg
	tanhCfg.Activation = ""
	th, err := NewPolicy(tanhCfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Same weights, so only the nonlinearity differs.
	for k := 0; k < p.Params().Len(); k++ {
		copy(th.Params().At(k).Data, p.Params().At(k).Data)
	}
	q, _ := reload(t, p)
	if q.Cfg.Activation != ActivationReLU {
		t.Fatalf("loaded activation %q", q.Cfg.Activation)
	}

	e := smallEnv(t)
	defer e.Close()
	var s Samples
	s.Configure(cfg)
	rng := rand.New(rand.NewPCG(1, 1))
	for d := mustReset(t, e, 1); s.Len() < 32 && d.Obs != nil; {
		a := env.Wait
		if p.Featurize(d, &s) {
			a, _, _ = p.Sample(&s, s.Len()-1, rng, false)
		}
		d, _, _ = e.Step(a)
	}
	idx := make([]int, s.Len())
	for i := range idx {
		idx[i] = i
	}
	heads := func(p *Policy) []float32 {
		tp := nn.NewTape[float32]()
		h := p.Forward(tp, &s, idx)
		var out []float32
		for _, x := range []*nn.Tensor[float32]{h.Node, h.Replica, h.AffA, h.AffB, h.DampA, h.DampB, h.Value} {
			out = append(out, x.Data...)
		}
		return out
	}
	hp, hq, ht := heads(p), heads(q), heads(th)
	if !slices.Equal(hp, hq) {
		t.Fatal("the loaded ReLU policy computes other heads")
	}
	same := 0
	for k := range hp {
		if hp[k] == ht[k] {
			same++
		}
	}
	if same > len(hp)/10 {
		t.Fatalf("%d of %d head outputs equal under ReLU and tanh: the activation is not applied", same, len(hp))
	}
	// The context embedding by hand: ReLU of the context layer, on the
	// first sample's context row.
	tp := nn.NewTape[float32]()
	_, xg, _, _, _ := s.gather(idx[:1])
	got := tp.Activate(p.ctx.Forward(tp, xg), nn.ActReLU).Data
	l := p.ctx.Layers[0]
	for o := 0; o < cfg.Hidden; o++ {
		var z float64
		for i := 0; i < CtxFeatures; i++ {
			z += float64(xg.Data[i]) * float64(l.W.Data[i*cfg.Hidden+o])
		}
		z = max(0, z+float64(l.B.Data[o]))
		if d := abs(float64(got[o]) - z); d > 1e-5*max(1, abs(z)) {
			t.Fatalf("context unit %d: %v, by hand %v", o, got[o], z)
		}
	}
	d := mustReset(t, e, 2)
	for n := 0; n < 5 && d.Obs != nil; n++ {
		d, _, _ = e.Step(env.Wait)
	}
	for _, greedy := range []bool{true, false} {
		if n := testing.AllocsPerRun(100, func() { p.Act(d, rng, greedy) }); n != 0 {
			t.Errorf("greedy %v: %v allocations a decision", greedy, n)
		}
	}
}

// TestPolicyDecide: Decide gives Act's greedy action exactly (the MLP
// policy, a ReLU student, the GNN encoder and a saturation policy, whose
// action carries FGD's GPU), on the same candidate draws, and allocates
// nothing.
func TestPolicyDecide(t *testing.T) {
	student := DefaultPolicyConfig()
	student.Hidden, student.Activation = 8, ActivationReLU
	gnnCfg := DefaultPolicyConfig()
	gnnCfg.Encoder = EncoderGNN
	sat := DefaultPolicyConfig()
	sat.Candidates, sat.Features = 8, FeaturesSaturation
	sw := satWorkload(t)
	satEnv := func(t testing.TB) *ClusterEnv {
		e, err := NewClusterEnv(ClusterEnvConfig{Saturation: func() (*SaturationWorkload, error) { return sw, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, c := range []struct {
		cfg PolicyConfig
		env func(testing.TB) *ClusterEnv
	}{{DefaultPolicyConfig(), smallEnv}, {student, smallEnv}, {gnnCfg, smallEnv}, {sat, satEnv}} {
		cfg := c.cfg
		p, err := NewPolicy(cfg, 3)
		if err != nil {
			t.Fatal(err)
		}
		e := c.env(t)
		rng := rand.New(rand.NewPCG(1, 1))
		n, placed, gpu := 0, 0, 0
		d, err := e.Reset(5)
		if err != nil {
			t.Fatal(err)
		}
		for ; d.Obs != nil && n < 300; n++ {
			d1, d2 := d, d
			d1.RNG, d2.RNG = rand.New(rand.NewPCG(uint64(n), 7)), rand.New(rand.NewPCG(uint64(n), 7))
			a1, _, _, ok1 := p.Act(d1, rng, true)
			a2, ok2 := p.Decide(d2)
			if ok1 != ok2 || (ok1 && a1 != a2) { // Wait's damping is NaN
				t.Fatalf("%+v, decision %d: Act %+v %v, Decide %+v %v", cfg, n, a1, ok1, a2, ok2)
			}
			if ok1 {
				placed++
			}
			if a1.GPU > 0 {
				gpu++
			}
			var done bool
			if d, _, done = e.Step(a1); done {
				break
			}
		}
		if placed < 50 || (cfg.Features == FeaturesSaturation && gpu == 0) {
			t.Fatalf("%+v: %d decisions placed, %d on a chosen GPU other than 0", cfg, placed, gpu)
		}
		d, _ = e.Reset(6)
		if n := testing.AllocsPerRun(100, func() { p.Decide(d) }); n != 0 {
			t.Errorf("%+v: %v allocations a decision", cfg, n)
		}
		e.Close()
	}
}

// TestClusterEnvShaping: with shaping, each reward is the unshaped one
// plus γ·Φ(s') − Φ(s), Φ the horizon times the baseline run's slowdown
// rate at the decision (0 at the end), on the same run step by step.
func TestClusterEnvShaping(t *testing.T) {
	const horizon, gamma = 200.0, 0.9
	newEnv := func(shaping float64) *ClusterEnv {
		e, err := NewClusterEnv(ClusterEnvConfig{Source: SyntheticSource(48, 0.9, 1800), Duration: 1800,
			Baseline: "langevin", Shaping: shaping, ShapingGamma: gamma})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	p, err := NewPolicy(DefaultPolicyConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	plain, shaped := newEnv(0), newEnv(horizon)
	defer plain.Close()
	defer shaped.Close()
	rng := rand.New(rand.NewPCG(4, 4))
	d, ds := mustReset(t, plain, 3), mustReset(t, shaped, 3)
	prev := horizon * shaped.Baseline().SlowdownRate()
	steps, nonzero := 0, 0
	for d.Obs != nil && ds.Obs != nil {
		a, _, _, ok := p.Act(d, rng, false)
		if !ok {
			a = env.Wait
		}
		var r, rs float64
		var done, dones bool
		d, r, done = plain.Step(a)
		ds, rs, dones = shaped.Step(a)
		if done != dones {
			t.Fatalf("step %d: done %v and %v", steps, done, dones)
		}
		phi := 0.0
		if !done {
			phi = horizon * shaped.Baseline().SlowdownRate()
		}
		if want := r + (gamma*phi - prev); rs != want {
			t.Fatalf("step %d: shaped reward %v, want %v (unshaped %v, Φ %v → %v)", steps, rs, want, r, prev, phi)
		}
		if phi != 0 {
			nonzero++
		}
		prev = phi
		steps++
		if done {
			break
		}
	}
	if steps < 50 || nonzero < steps/2 {
		t.Fatalf("%d steps, %d with a nonzero potential", steps, nonzero)
	}
}
