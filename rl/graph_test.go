package rl

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/nn"
)

func gnnConfig() PolicyConfig {
	return PolicyConfig{Candidates: 8, Hidden: 8, DampingMax: 2, ReplicaZeroBias: 4, Encoder: EncoderGNN}
}

// TestGNNFeatures: a GNN policy's samples carry each candidate's history
// as the observation holds it and its place in the topology; the
// log-probability Sample reports is the one the learner recomputes; and
// the policy file round-trips.
func TestGNNFeatures(t *testing.T) {
	p, err := NewPolicy(gnnConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	e := smallEnv(t)
	defer e.Close()
	d := mustReset(t, e, 5)
	rng := rand.New(rand.NewPCG(1, 2))
	var tens env.Tensors
	checked := 0
	for k := 0; k < 30 && d.Obs != nil; k++ {
		var s Samples
		s.Configure(p.Cfg)
		if !p.Featurize(d, &s) {
			d, _, _ = e.Step(env.Wait)
			continue
		}
		d.Obs.FillTensors(&tens)
		c := d.Obs.State.C
		g := s.graphRows(0)
		for k := 0; k < int(s.Valid[0]); k++ {
			i := int(s.Nodes[k])
			row := g[k*GraphFeatures : (k+1)*GraphFeatures]
			for f := 0; f < graphHistory; f++ {
				if row[f] != tens.History[i*graphHistory+f] {
					t.Fatalf("candidate %d history %d = %v, observation %v", k, f, row[f], tens.History[i*graphHistory+f])
				}
			}
			rack := c.Machines[i].Rack
			if int(row[graphRack]) != rack || int(row[graphLeaf]) != c.Racks[rack].Leaf || c.Racks[rack].Machines[int(row[graphPos])] != i {
				t.Fatalf("candidate %d (machine %d): rack %v leaf %v position %v", k, i, row[graphRack], row[graphLeaf], row[graphPos])
			}
			checked++
		}
		a, logp, _ := p.Sample(&s, 0, rng, false)
		lp, _, _ := p.evaluate(nn.NewTape[float32](), &s, []int{0})
		if lp.Data[0] != logp {
			t.Fatalf("Sample log-prob %v, evaluate %v", logp, lp.Data[0])
		}
		d, _, _ = e.Step(a)
	}
	if checked == 0 {
		t.Fatal("no candidate checked")
	}
	if got, want := p.Cfg.paramCount(), p.Params().Count(); got != want {
		t.Fatalf("paramCount %d, NewPolicy made %d", got, want)
	}
	if q, _ := reload(t, p); q.Cfg.Encoder != EncoderGNN {
		t.Fatalf("loaded encoder %q", q.Cfg.Encoder)
	}
}

// TestGNNMessagePassing: a candidate's score depends on the histories of
// the candidates it is linked to (its own and its rack-mates' and
// rail-mates'), and on no other candidate's; the encoder's parameters all
// receive gradient.
func TestGNNMessagePassing(t *testing.T) {
	p, err := NewPolicy(gnnConfig(), 3)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	// Messages start at zero (gnnEncoder.init); give them weights.
	for _, name := range []string{"enc.net.neigh", "enc.job.neigh"} {
		w := p.Params().Get(name)
		for i := range w.Data {
			w.Data[i] = float32(rng.NormFloat64()) / 4
		}
	}
	var s Samples
	s.Configure(p.Cfg)
	cand, _, ctx := s.grow()
	for i := range cand {
		cand[i] = float32(rng.NormFloat64())
	}
	for i := range ctx {
		ctx[i] = float32(rng.NormFloat64())
	}
	g := s.graphRows(0)
	// Eight candidates: racks 0,0,1,1,2,2,3,3 in leaf 0 (positions 0,1 in
	// each rack), except that rack 3 sits in leaf 1. Links: rack-mates, and
	// equal positions within leaf 0.
	for k := 0; k < 8; k++ {
		row := g[k*GraphFeatures : (k+1)*GraphFeatures]
		for f := 0; f < graphHistory; f++ {
			row[f] = rng.Float32()
		}
		row[graphRack], row[graphPos] = float32(k/2), float32(k%2)
		if k >= 6 {
			row[graphLeaf] = 1
		}
	}
	s.Valid[0] = 8
	logits := func() []float32 {
		o := p.forward(nn.NewTape[float32](), &s, []int{0}, true)
		return append([]float32(nil), o.node.Data...)
	}
	base := logits()
	g[0*GraphFeatures] += 0.5 // candidate 0's oldest CPU step
	moved := logits()
	for k := 0; k < 8; k++ {
		// 0 is linked to 1 (its rack) and to 2 and 4 (position 0 in leaf
		// 0); 6 (position 0, but leaf 1) and the others are not.
		want := k == 0 || k == 1 || k == 2 || k == 4
		if changed := moved[k] != base[k]; changed != want {
			t.Errorf("candidate %d: logit %v -> %v; linked to the change: %v", k, base[k], moved[k], want)
		}
	}
	tp := nn.NewTape[float32]()
	p.Params().ZeroGrad()
	o := p.forward(tp, &s, []int{0}, true)
	tp.Backward(tp.SumAll(tp.Mul(o.node, o.node)))
	for _, name := range []string{"enc.temporal.kernel", "enc.in.weight", "enc.net.neigh", "enc.net.root", "enc.job.neigh"} {
		w := p.Params().Get(name)
		if w == nil {
			t.Fatalf("no parameter %s", name)
		}
		nz := false
		for _, v := range w.Grad {
			nz = nz || v != 0
		}
		if !nz {
			t.Errorf("%s gets no gradient", name)
		}
	}
}

// TestGNNTrainDeterministic: training a GNN policy with one actor in sync
// mode over NATS gives the same log twice, without dropped segments (the
// segments carry the graph rows).
func TestGNNTrainDeterministic(t *testing.T) {
	var first []UpdateLog
	for run := 0; run < 2; run++ {
		cfg := tinyTrain("nats", 1, true)
		cfg.TotalSteps = 400
		cfg.Policy.Encoder = EncoderGNN
		res, err := Train(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Stats.LostSegments != 0 || res.Log[len(res.Log)-1].BadSegments != 0 {
			t.Fatalf("dropped segments: %+v", res.Stats)
		}
		log := stable(res.Log)
		if run == 0 {
			first = log
			continue
		}
		for i := range first {
			if log[i] != first[i] {
				t.Fatalf("update %d differs:\n%+v\n%+v", i, log[i], first[i])
			}
		}
	}
}
