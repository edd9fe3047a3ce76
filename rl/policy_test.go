package rl

import (
	"testing"
	"time"

	"github.com/tegrl/tegrl/env"
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

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
