package rl

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/tegrl/tegrl/env"
)

// benchTrain is the small preset's network on a 96-machine cluster with
// one-hour episodes.
func benchTrain(transport string, actors int) TrainConfig {
	c := tinyTrain(transport, actors, false)
	c.Env = EnvSpec{Machines: 96, Load: 0.9, Episode: 3600, Reward: RewardSlowdown, Baseline: "langevin"}
	c.Policy = PolicyConfig{Candidates: 16, Hidden: 32, DampingMax: 2, ReplicaZeroBias: 4}
	c.SegmentLen, c.BatchSize, c.TotalSteps = 100, 2000, 6000
	c.MaxLag = 1000 // count every decision the actors make
	return c
}

// BenchmarkTrain measures a whole run: decisions learned per second and
// decisions the actors produced per second, over NATS and over channels,
// with 1, 2 and 4 actors (on this machine's cores).
// A process's first run over a transport is 10-40% slower than the next
// ones (the heap grows, pages fault in, the first NATS server starts), so
// an untimed run over each comes first: otherwise, at -benchtime 1x, the
// first sub-benchmark pays for it.
func BenchmarkTrain(b *testing.B) {
	for _, tr := range []string{"nats", "chan"} {
		if _, err := Train(context.Background(), benchTrain(tr, 1)); err != nil {
			b.Fatal(err)
		}
	}
	for _, tr := range []string{"nats", "chan"} {
		for _, actors := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("transport=%s/actors=%d", tr, actors), func(b *testing.B) {
				var learned, produced float64
				var wall time.Duration
				for i := 0; i < b.N; i++ {
					start := time.Now()
					res, err := Train(context.Background(), benchTrain(tr, actors))
					if err != nil {
						b.Fatal(err)
					}
					wall += time.Since(start)
					learned += float64(res.Log[len(res.Log)-1].Steps)
					for _, a := range res.Actors {
						produced += float64(a.SegmentsPublished * 100)
					}
				}
				b.ReportMetric(learned/wall.Seconds(), "learned/s")
				b.ReportMetric(produced/wall.Seconds(), "env_steps/s")
			})
		}
	}
}

// BenchmarkActorStep is one actor's decision loop without a learner: the
// environment step, featurisation and the policy's sampling.
func BenchmarkActorStep(b *testing.B) {
	p, err := NewPolicy(PolicyConfig{Candidates: 16, Hidden: 32, DampingMax: 2, ReplicaZeroBias: 4}, 1)
	if err != nil {
		b.Fatal(err)
	}
	e, err := NewClusterEnv(EnvSpec{Machines: 96, Load: 0.9, Episode: 3600, Baseline: "langevin"}.Config())
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	seed := uint64(1)
	d := mustReset(b, e, seed)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a, _, _, ok := p.Act(d, rng, false)
		if !ok {
			a = env.Wait
		}
		var done bool
		if d, _, done = e.Step(a); done || d.Obs == nil {
			seed++
			d = mustReset(b, e, seed)
		}
	}
}

// BenchmarkLearnerUpdate is one PPO update (4 epochs × 4 minibatches) on a
// batch of 2000 decisions with 16 candidates each: samples per second of
// the learner alone.
func BenchmarkLearnerUpdate(b *testing.B) {
	cfg := benchTrain("chan", 1)
	p, err := NewPolicy(cfg.Policy, 1)
	if err != nil {
		b.Fatal(err)
	}
	var s Samples
	s.K = cfg.Policy.Candidates
	e, err := NewClusterEnv(cfg.Env.Config())
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	d := mustReset(b, e, 1)
	var logp, val []float32
	for s.Len() < cfg.BatchSize {
		if d.Obs == nil {
			d = mustReset(b, e, uint64(s.Len()+2))
			continue
		}
		if !p.Featurize(d, &s) {
			d, _, _ = e.Step(env.Wait)
			continue
		}
		a, lp, v := p.Sample(&s, s.Len()-1, rng, false)
		logp, val = append(logp, lp), append(val, v)
		d, _, _ = e.Step(a)
	}
	adv := make([]float32, len(logp))
	for i := range adv {
		adv[i] = float32(rng.NormFloat64())
	}
	ppo, err := NewPPO(batchModel{p, &s}, cfg.PPO, 1)
	if err != nil {
		b.Fatal(err)
	}
	batch := &Batch{OldLogP: logp, Values: val, Adv: adv, Returns: adv}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ppo.Update(batch, 1e-4); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*cfg.BatchSize)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkSaturationDecision is one decision of the saturate preset's
// actor on the Alibaba GPU trace (1,213 GPU machines), halfway to 130%
// arrival: FGD's ranking of the machines (cached scores), the features of
// the 8 best and the policy's greedy sample.
func BenchmarkSaturationDecision(b *testing.B) {
	spec := SaturateSpec{Nodes: "alibaba-gpu", Pods: "alibaba-gpu", Tune: 1.3} // the bundled trace
	cfg := DefaultPolicyConfig()
	cfg.Candidates, cfg.Features = 8, FeaturesSaturation
	p, err := NewPolicy(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	e, err := NewClusterEnv(EnvSpec{Saturate: &spec}.Config())
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	d, err := e.Reset(42)
	if err != nil {
		b.Fatal(err)
	}
	for k := 0; k < 5000; k++ { // about 60% of the GPU capacity arrived
		a, _, _, ok := p.Act(d, rng, true)
		if !ok {
			a = env.Wait
		}
		d, _, _ = e.Step(a)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Act(d, rng, true)
	}
}

// BenchmarkPolicySample measures one decision's network pass and sampling
// (featurisation excluded, as distillation's latency figure): the small
// preset's MLP and GNN encoders at width 32, and a width-8 MLP student.
func BenchmarkPolicySample(b *testing.B) {
	gnnCfg := DefaultPolicyConfig()
	gnnCfg.Encoder = EncoderGNN
	student := DefaultPolicyConfig()
	student.Hidden = 8
	reluStudent := student
	reluStudent.Activation = ActivationReLU
	for _, c := range []struct {
		name string
		cfg  PolicyConfig
	}{{"mlp-32", DefaultPolicyConfig()}, {"gnn-32", gnnCfg}, {"student-mlp-8", student}, {"student-relu-8", reluStudent}} {
		b.Run("policy="+c.name, func(b *testing.B) {
			p, err := NewPolicy(c.cfg, 1)
			if err != nil {
				b.Fatal(err)
			}
			e, err := NewClusterEnv(ClusterEnvConfig{Source: SyntheticSource(96, 0.9, 3600), Duration: 3600})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			var s Samples
			s.Configure(gnnCfg) // graph rows for every policy
			rng := rand.New(rand.NewPCG(1, 1))
			for d := mustReset(b, e, 1); s.Len() < 256 && d.Obs != nil; {
				if !p.Featurize(d, &s) {
					d, _, _ = e.Step(env.Wait)
					continue
				}
				a, _, _ := p.Sample(&s, s.Len()-1, rng, false)
				d, _, _ = e.Step(a)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p.Sample(&s, i%s.Len(), rng, false)
				i++
			}
		})
	}
}

// BenchmarkPolicyDecide: one whole evaluation-mode decision
// (Policy.Decide: candidate draw, featurisation, network, action) of the
// committed policies, on the state of a 1,523-machine synthetic cluster
// after 300 decisions at load 0.9; each iteration draws other candidates.
// The GNN teacher against its student is the latency ratio docs/PERFORMANCE.md reports.
func BenchmarkPolicyDecide(b *testing.B) {
	for _, name := range []string{"small", "small-gnn", "student-gnn"} {
		b.Run("policy="+name, func(b *testing.B) {
			payload, err := os.ReadFile("../docs/policies/" + name + ".safetensors")
			if err != nil {
				b.Fatal(err)
			}
			p, _, err := LoadPolicy(payload)
			if err != nil {
				b.Fatal(err)
			}
			e, err := NewClusterEnv(EnvSpec{Machines: 1523, Load: 0.9, Episode: 3600}.Config())
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			d, err := e.Reset(1)
			if err != nil {
				b.Fatal(err)
			}
			for k := 0; k < 300 && d.Obs != nil; k++ {
				a, ok := p.Decide(d)
				if !ok {
					a = env.Wait
				}
				d, _, _ = e.Step(a)
			}
			if d.Obs == nil {
				b.Fatal("episode ended during the warm-up")
			}
			pcg := rand.NewPCG(0, 0)
			d.RNG = rand.New(pcg)
			b.ReportAllocs()
			i := uint64(0)
			for b.Loop() {
				pcg.Seed(i, 1)
				p.Decide(d)
				i++
			}
		})
	}
}
