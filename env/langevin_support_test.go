package env

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// supportProbe lets Langevin decide (so the run is langevin's) and then
// measures, per decision with two or more candidates, how langevin's
// placement distribution p_L = softmax(-E/T) over its candidates compares
// with p_0, the same governor's without the energy's fragmentation term:
// what langevin's logs can teach an offline learner about placements that
// ignore fragmentation (docs/rl.md, "What langevin's logs hold").
type supportProbe struct {
	Langevin
	e0, pl, p0 []float64
	st         [2]supportStats // [0]: jobs without GPUs, [1]: with GPUs
}

type supportStats struct {
	decisions int     // with 2+ candidates
	entropy   float64 // Σ entropy of p_L, nats
	tv        float64 // Σ total variation distance between p_L and p_0
	differ    int     // decisions whose argmin of E_0 is not the argmin of E
	unlogged  int     // ... where p_L gives that machine less than 1e-3
	logRatio  float64 // Σ over those that differ of log(p_0/p_L) at E_0's argmin
}

func (p *supportProbe) Decide(obs *Observation, rng *rand.Rand) Action {
	a := p.Langevin.Decide(obs, rng) // leaves its candidates and their energies in p.cand, p.e
	if a.Node < 0 || len(p.cand) < 2 {
		return a
	}
	v, r := obs.TEG, &obs.Req
	p.e0 = p.e0[:0]
	for k, c := range p.cand {
		e := p.e[k]
		if wf := v.Config.Weights.Frag; wf > 0 && v.sim.c.Machines[c].GPUs > 0 && v.sim.state.Target != nil {
			e -= wf * v.sim.fragAdded(&v.sim.jobs[obs.Job.ID], r, c) / MilliGPU
		}
		p.e0 = append(p.e0, e)
	}
	t := v.Temperature()
	st := &p.st[0]
	if r.GPUs > 0 {
		st = &p.st[1]
	}
	p.pl, p.p0 = PlacementProbs(p.e, t, p.pl), PlacementProbs(p.e0, t, p.p0)
	st.decisions++
	for i, q := range p.pl {
		if q > 0 {
			st.entropy -= q * math.Log(q)
		}
		st.tv += math.Abs(q-p.p0[i]) / 2
	}
	if m0 := argminF(p.e0); m0 != argminF(p.e) {
		st.differ++
		if p.pl[m0] < 1e-3 {
			st.unlogged++
		}
		st.logRatio += math.Log(p.p0[m0]) - math.Log(max(p.pl[m0], math.SmallestNonzeroFloat64))
	}
	return a
}

func argminF(e []float64) int {
	b := 0
	for i := range e {
		if e[i] < e[b] {
			b = i
		}
	}
	return b
}

// TestLangevinLogSupport pins down why offline learning from langevin's
// logs cannot find the placements that beat it on mean slowdown (docs/rl.md):
// without the fragmentation term the governor places GPU jobs elsewhere in
// most decisions, yet langevin gives those machines almost no probability,
// so its logs hardly ever contain them; where langevin does randomise
// (jobs without GPUs), its choices spread over several machines. The run
// is langevin's own: its metrics equal Langevin's.
func TestLangevinLogSupport(t *testing.T) {
	var tot [2]supportStats
	for seed := uint64(3001); seed <= 3010; seed++ {
		c, err := NewSyntheticCluster(96, seed)
		if err != nil {
			t.Fatal(err)
		}
		wc := DefaultWorkload
		wc.Load, wc.Horizon = 1.1, 3600
		w, err := NewSyntheticWorkload(c, wc, seed)
		if err != nil {
			t.Fatal(err)
		}
		p := &supportProbe{}
		cfg := SimConfig{Seed: seed, Duration: 3600}
		ps, err := NewSim(c, w, p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := NewSim(c, w, &Langevin{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if pm, lm := ps.Run(), ls.Run(); !reflect.DeepEqual(pm, lm) {
			t.Fatalf("seed %d: the probe's run differs from langevin's: %+v vs %+v", seed, pm, lm)
		}
		for g := range tot {
			s, d := p.st[g], &tot[g]
			d.decisions += s.decisions
			d.entropy += s.entropy
			d.tv += s.tv
			d.differ += s.differ
			d.unlogged += s.unlogged
			d.logRatio += s.logRatio
		}
	}
	for g, name := range []string{"jobs without GPUs", "GPU jobs"} {
		s := tot[g]
		n, d := float64(s.decisions), float64(max(1, s.differ))
		t.Logf("%s: %d decisions; langevin's entropy %.3f nats, TV(p_L, p_0) %.3f; E_0's choice differs in %.1f%%, and p_L < 1e-3 on it in %.1f%% of those (mean log p_0/p_L %.0f)",
			name, s.decisions, s.entropy/n, s.tv/n, 100*float64(s.differ)/n, 100*float64(s.unlogged)/d, s.logRatio/d)
	}
	cpu, gpu := tot[0], tot[1]
	if cpu.decisions < 1000 || gpu.decisions < 500 {
		t.Fatalf("too few decisions to measure: %d without GPUs, %d with", cpu.decisions, gpu.decisions)
	}
	if h := cpu.entropy / float64(cpu.decisions); h < 0.7 {
		t.Errorf("jobs without GPUs: langevin's mean entropy %.3f nats, want >= 0.7 (it randomises there)", h)
	}
	if f := float64(gpu.differ) / float64(gpu.decisions); f < 0.5 {
		t.Errorf("GPU jobs: the fragmentation term changes the likeliest machine in %.2f of decisions, want >= 0.5", f)
	}
	if f := float64(gpu.unlogged) / float64(gpu.differ); f < 0.9 {
		t.Errorf("GPU jobs: p_L < 1e-3 on the fragmentation-free choice in %.2f of the decisions where it differs, want >= 0.9", f)
	}
}

// TestPlacementProbs checks the distribution by hand and against the
// draws langevin makes from it.
func TestPlacementProbs(t *testing.T) {
	const T = 0.5
	e := []float64{1 + T*math.Ln2, 1, 1 + 2*T*math.Ln2, 1}
	// Weights 1/2, 1, 1/4, 1: total 11/4.
	want := []float64{2.0 / 11, 4.0 / 11, 1.0 / 11, 4.0 / 11}
	got := PlacementProbs(e, T, nil)
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Fatalf("p = %v, want %v", got, want)
		}
	}
	// In place, with the least energy after the first candidate.
	if in := PlacementProbs(append([]float64(nil), e...), T, nil); !reflect.DeepEqual(in, got) {
		t.Fatalf("reference %v", in)
	}
	alias := append([]float64(nil), e...)
	if in := PlacementProbs(alias, T, alias); !reflect.DeepEqual(in, got) {
		t.Errorf("in place: p = %v, want %v", in, got)
	}
	if got := PlacementProbs(e, 0, got); !reflect.DeepEqual(got, []float64{0, 1, 0, 0}) {
		t.Errorf("T 0: p = %v, want all on the first least energy", got)
	}
	if got := PlacementProbs(nil, T, got); len(got) != 0 {
		t.Errorf("no candidates: p = %v", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	var count [4]int
	for range n {
		count[boltzmann(e, T, rng)]++
	}
	for i, c := range count {
		// Four standard deviations of a binomial count.
		if sd := math.Sqrt(n * want[i] * (1 - want[i])); math.Abs(float64(c)-n*want[i]) > 4*sd {
			t.Errorf("candidate %d drawn %d times in %d, want %.0f ± %.0f", i, c, n, n*want[i], 4*sd)
		}
	}
}
