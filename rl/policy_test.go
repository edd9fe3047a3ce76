package rl

import (
	"math/rand/v2"
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
		sched := NewScheduler(p, "policy", false, 9)
		d := e.Reset(3)
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
	d := e.Reset(5)
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
