package rl

import (
	"context"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/tegrl/tegrl/env"
)

func TestLookahead(t *testing.T) {
	c, w, err := SyntheticSource(96, 1.1, 7200)(102)
	if err != nil {
		t.Fatal(err)
	}
	sim := env.SimConfig{Seed: 102, Duration: 3600}
	changed := 0
	everies := []int{1, 3}
	if testing.Short() {
		everies = everies[1:] // a quarter of the rollouts: the race detector slows them ten times
	}
	for _, base := range []string{"kube", "langevin"} {
		for _, every := range everies {
			cfg := LookaheadConfig{Base: func() env.Scheduler { s, _ := env.NewScheduler(base); return s }, Every: every, Candidates: 8, Seed: 1}
			res, err := Lookahead(context.Background(), c, w, sim, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s every %d: decisions %d evaluated %d changed %d rollouts %d; accrued slowdown %.3f -> %.3f",
				base, every, res.Decisions, res.Evaluated, res.Changed, res.Rollouts, res.BaseAccrued, res.LookaheadAccrued)
			if res.Evaluated == 0 || len(res.Best) != res.Evaluated {
				t.Fatalf("%s: %d decisions evaluated, %d best values", base, res.Evaluated, len(res.Best))
			}
			// The first rollout of the base's own choice is the base run.
			if res.Best[0] > res.BaseAccrued {
				t.Errorf("%s every %d: first best %v above the base's %v", base, every, res.Best[0], res.BaseAccrued)
			}
			for i := 1; i < len(res.Best); i++ {
				if res.Best[i] > res.Best[i-1] {
					t.Fatalf("%s every %d: best value rose at evaluated decision %d: %v -> %v (a rollout did not replay the run)",
						base, every, i, res.Best[i-1], res.Best[i])
				}
			}
			// After the last evaluated decision the run follows the base,
			// as that decision's best rollout did: the same trajectory.
			if last := res.Best[len(res.Best)-1]; last != res.LookaheadAccrued {
				t.Errorf("%s every %d: run accrued %v, its last best rollout %v", base, every, res.LookaheadAccrued, last)
			}
			if res.LookaheadAccrued > res.BaseAccrued {
				t.Errorf("%s every %d: lookahead %v worse than the base %v", base, every, res.LookaheadAccrued, res.BaseAccrued)
			}
			changed += res.Changed
			if every == 3 && base == "kube" {
				par := cfg
				par.Workers = 3
				again, err := Lookahead(context.Background(), c, w, sim, par)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(again, res) {
					t.Error("a run with three workers differs from the serial one")
				}
			}
		}
	}
	if changed == 0 {
		t.Error("no decision changed: the test does not exercise the replay of changed decisions")
	}
	// Visit sees each evaluated decision: the values of its candidates,
	// the least of which is the decision's best, and the base's machine
	// among the candidates.
	var visits []float64
	cfg := LookaheadConfig{Base: func() env.Scheduler { return &env.Kube{} }, Every: 5, Candidates: 8, Seed: 2,
		Visit: func(obs *env.Observation, s *Samples, a env.Action, values []float64) {
			if len(values) != int(s.Valid[0]) || obs.Job == nil {
				t.Fatalf("visit: %d values for %d candidates", len(values), s.Valid[0])
			}
			found := false
			for k := range values {
				found = found || int(s.Nodes[k]) == a.Node
			}
			if !found {
				t.Fatalf("visit: the base's machine %d is not among the candidates %v", a.Node, s.Nodes[:s.Valid[0]])
			}
			visits = append(visits, slices.Min(values))
		}}
	res, err := Lookahead(context.Background(), c, w, sim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(visits, res.Best) {
		t.Errorf("visited minima %v, best values %v", visits, res.Best)
	}
	if _, err := Lookahead(context.Background(), c, w, sim, LookaheadConfig{Every: 1, Candidates: 8}); err == nil {
		t.Error("no base accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Lookahead(ctx, c, w, sim, LookaheadConfig{Base: func() env.Scheduler { return &env.BestFit{} }, Every: 1, Candidates: 8}); err == nil {
		t.Error("a cancelled context was not reported")
	}
}

// TestLookaheadSupport checks the support filter exactly: each evaluated
// decision rolls out the base's choice and the candidates whose
// probability under langevin's Boltzmann distribution over the candidate
// set reaches the support, and only those.
func TestLookaheadSupport(t *testing.T) {
	c, w, err := SyntheticSource(96, 1.1, 7200)(102)
	if err != nil {
		t.Fatal(err)
	}
	sim := env.SimConfig{Seed: 102, Duration: 3600}
	const support = 0.05
	var skipped, tried int
	cfg := LookaheadConfig{Base: func() env.Scheduler { return &env.Langevin{} }, Every: 3, Candidates: 8, Seed: 1, Support: support,
		Visit: func(obs *env.Observation, s *Samples, a env.Action, values []float64) {
			n := int(s.Valid[0])
			e := make([]float64, n)
			for k := range e {
				e[k] = obs.TEG.Energy(obs.Job, &obs.Req, int(s.Nodes[k]))
			}
			best, z := slices.Min(e), 0.0
			for k := range e {
				e[k] = math.Exp(-(e[k] - best) / obs.TEG.Temperature())
				z += e[k]
			}
			for k := range e {
				want := int(s.Nodes[k]) == a.Node || e[k]/z >= support
				if got := !math.IsInf(values[k], 1); got != want {
					t.Fatalf("candidate %d (p %.4g, base's choice %v): rolled out %v, want %v", s.Nodes[k], e[k]/z, int(s.Nodes[k]) == a.Node, got, want)
				}
				if want {
					tried++
				} else {
					skipped++
				}
			}
		}}
	res, err := Lookahead(context.Background(), c, w, sim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("support %g: %d candidates rolled out, %d skipped; changed %d of %d; accrued slowdown %.3f -> %.3f",
		support, tried, skipped, res.Changed, res.Evaluated, res.BaseAccrued, res.LookaheadAccrued)
	if skipped == 0 || tried <= res.Evaluated || res.Rollouts != tried {
		t.Errorf("%d rolled out (rollouts %d), %d skipped over %d decisions: the filter is not exercised both ways", tried, res.Rollouts, skipped, res.Evaluated)
	}
	if res.LookaheadAccrued > res.BaseAccrued {
		t.Errorf("lookahead %v worse than the base %v", res.LookaheadAccrued, res.BaseAccrued)
	}
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		cfg := cfg
		cfg.Support, cfg.Visit = bad, nil
		if _, err := Lookahead(context.Background(), c, w, sim, cfg); err == nil {
			t.Errorf("support %v accepted", bad)
		}
	}
}
