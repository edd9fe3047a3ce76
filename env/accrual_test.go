package env

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// TestAccruedSlowdown: with no failures and a run that drains, the accrued
// slowdown equals the sum of the jobs' slowdowns up to the tick rounding
// of arrivals (each job is counted from the end of its arrival tick, at
// most one tick late).
func TestAccruedSlowdown(t *testing.T) {
	c, err := NewSyntheticCluster(40, 7)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultWorkload
	cfg.Horizon = 1800
	w, err := NewSyntheticWorkload(c, cfg, 4)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := NewSim(c, w, &Langevin{}, SimConfig{Seed: 7, MTBF: -1})
	if err != nil {
		t.Fatal(err)
	}
	prev := sim.Accrued()
	for !sim.Done() {
		sim.Step()
		a := sim.Accrued()
		if a.Slowdown < prev.Slowdown || a.Total < prev.Total {
			t.Fatalf("accrual decreased: %+v -> %+v", prev, a)
		}
		prev = a
	}
	m := sim.Metrics()
	if m.JobsCompleted == 0 || m.JobsQueued+m.JobsRunning != 0 {
		t.Fatalf("run did not drain: %+v", m)
	}
	var want, slack float64
	for i := range sim.w.Jobs {
		j := &sim.w.Jobs[i]
		if sim.jobs[i].state == completed {
			slack += sim.cfg.Tick / max(j.Duration, 1)
		}
	}
	want = m.MeanSlowdown * float64(m.JobsCompleted)
	got := prev.Slowdown
	if got > want+1e-6 || got < want-slack-1e-6 {
		t.Fatalf("accrued slowdown %.4f, want within [%.4f, %.4f]", got, want-slack, want)
	}
	if sim.inSystem != 0 {
		t.Fatalf("jobs in system after the run: Σ1/T = %g", sim.inSystem)
	}
	// The reward accrual matches the metrics' time average.
	if r := prev.Total / float64(m.Ticks); math.Abs(r-m.RewardMean) > 1e-9 {
		t.Fatalf("accrued reward / ticks = %.12f, metrics reward_mean %.12f", r, m.RewardMean)
	}
}

// scaleOut adds one replica at every decision for a service, under
// langevin's placement.
type scaleOut struct{ Langevin }

func (p *scaleOut) Decide(obs *Observation, rng *rand.Rand) Action {
	a := p.Langevin.Decide(obs, rng)
	if obs.Job.Service >= 0 {
		a.ReplicaDelta = 1
	}
	return a
}

// TestReplicaDoesFullWork: a replica added by an action runs for the
// service's full duration (it used to complete as soon as it started,
// which let a policy buy low slowdown with replicas).
func TestReplicaDoesFullWork(t *testing.T) {
	c, err := NewSyntheticCluster(60, 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultWorkload
	cfg.Horizon = 3600
	w, err := NewSyntheticWorkload(c, cfg, 4)
	if err != nil {
		t.Fatal(err)
	}
	n := len(w.Jobs)
	sim, err := NewSim(c, w, &scaleOut{}, SimConfig{Seed: 3, MTBF: -1, Duration: 7200, Series: SeriesConfig{Every: 100}})
	if err != nil {
		t.Fatal(err)
	}
	m := sim.Run()
	if m.ReplicasAdded == 0 {
		t.Fatal("no replicas added")
	}
	replicas := 0
	for _, o := range sim.Series().Jobs {
		if o.ID >= n {
			replicas++
		}
		if o.Slowdown < 1-1e-9 {
			t.Fatalf("job %d (replica %v) completed with slowdown %.3f < 1: %+v", o.ID, o.ID >= n, o.Slowdown, o)
		}
	}
	if replicas == 0 {
		t.Fatal("no replica completed")
	}
}

// probing is langevin that also reads every machine's fragmentation and
// contention at each decision, as a learned policy's features do.
type probing struct{ Langevin }

func (p *probing) Decide(obs *Observation, rng *rand.Rand) Action {
	var t Tensors
	obs.FillTensors(&t)
	// A few machines, as a policy reads its candidates: a subset is what
	// moves the refresh times.
	for i := int(obs.Time/10) % 7; i < len(obs.State.M); i += 7 {
		if obs.State.Admit(i, &obs.Req) {
			obs.TEG.FragAdded(obs.Job, &obs.Req, i)
			obs.TEG.Contention(obs.Job, &obs.Req, i)
		}
	}
	return p.Langevin.Decide(obs, rng)
}

// TestReadingDoesNotChangeARun: a scheduler that reads the fragmentation
// and contention of every machine makes the same run, metrics byte for
// byte (the fragmentation total used to be a running sum whose last bits
// depended on when machines were refreshed).
func TestReadingDoesNotChangeARun(t *testing.T) {
	run := func(s Scheduler) string {
		c, _ := NewSyntheticCluster(96, 4)
		cfg := DefaultWorkload
		cfg.Horizon = 3600
		w, _ := NewSyntheticWorkload(c, cfg, 4)
		teg := GovernorTEG("langevin")
		sim, err := NewSim(c, w, s, SimConfig{Seed: 4, Duration: 3600, TEG: &teg})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(sim.Run())
		return string(b)
	}
	if a, b := run(&Langevin{}), run(&probing{}); a != b {
		t.Fatalf("reading changed the run:\n%s\n%s", a, b)
	}
}

// twoViews observes each decision in full and pending-only and compares.
type twoViews struct {
	Langevin
	t         *testing.T
	full, pen Tensors
	n         int
}

func (p *twoViews) Decide(obs *Observation, rng *rand.Rand) Action {
	p.pen.PendingOnly = true
	obs.FillTensors(&p.full)
	obs.FillTensors(&p.pen)
	eq := func(name string, a, b []float32) {
		if len(a) != len(b) {
			p.t.Fatalf("decision %d: %s lengths %d and %d", p.n, name, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				p.t.Fatalf("decision %d: %s[%d] = %v in full, %v pending-only", p.n, name, i, a[i], b[i])
			}
		}
	}
	eq("machine", p.full.Machine, p.pen.Machine)
	eq("gpu", p.full.GPU, p.pen.GPU)
	eq("history", p.full.History, p.pen.History)
	eq("global", p.full.Global, p.pen.Global)
	eq("pending", p.full.Pending, p.pen.Pending)
	for i := range p.full.Mask {
		if p.full.Mask[i] != p.pen.Mask[i] {
			p.t.Fatalf("decision %d: mask[%d] differs", p.n, i)
		}
	}
	if p.pen.Jobs != 1 || p.pen.PendingRow != 0 || p.pen.Edges[RelRunsOnMachine].Len() != 0 {
		p.t.Fatalf("pending-only: %d job rows, pending row %d, %d runs-on edges", p.pen.Jobs, p.pen.PendingRow, p.pen.Edges[RelRunsOnMachine].Len())
	}
	p.n++
	return p.Langevin.Decide(obs, rng)
}

// TestPendingOnlyObservation: a pending-only refresh has every block but
// the running jobs exactly as a full one, decision after decision.
func TestPendingOnlyObservation(t *testing.T) {
	c, _ := NewSyntheticCluster(48, 6)
	cfg := DefaultWorkload
	cfg.Horizon = 1800
	w, _ := NewSyntheticWorkload(c, cfg, 6)
	p := &twoViews{t: t}
	teg := GovernorTEG("langevin")
	sim, err := NewSim(c, w, p, SimConfig{Seed: 6, Duration: 1800, TEG: &teg})
	if err != nil {
		t.Fatal(err)
	}
	sim.Run()
	if p.n < 50 {
		t.Fatalf("%d decisions checked", p.n)
	}
}

// sparseViews compares a sparse refresh on langevin's candidates with a
// full one at every decision.
type sparseViews struct {
	Langevin
	t         *testing.T
	full, spr Tensors
	cand      []int
	n, cold   int // decisions, and candidates flagged cold
}

func (p *sparseViews) Decide(obs *Observation, rng *rand.Rand) Action {
	draw := rand.New(rand.NewPCG(uint64(p.n), 1))
	p.cand = obs.TEG.Candidates(&obs.Req, 8, draw, p.cand[:0])
	obs.FillTensors(&p.full)
	obs.FillSparse(&p.spr, p.cand, obs.TEG.Draws)
	row := func(name string, a, b []float32, i, w int) {
		for k := i * w; k < (i+1)*w; k++ {
			if a[k] != b[k] {
				p.t.Fatalf("decision %d machine %d: %s column %d = %v full, %v sparse", p.n, i, name, k-i*w, a[k], b[k])
			}
		}
	}
	for _, i := range p.cand {
		row("machine", p.full.Machine, p.spr.Machine, i, MachineFeatures)
		row("history", p.full.History, p.spr.History, i, HistoryLen*HistoryChannels)
		if p.spr.Machine[i*MachineFeatures+mCold] == 1 {
			p.cold++
		}
		if p.full.Mask[i] != p.spr.Mask[i] {
			p.t.Fatalf("decision %d: mask of candidate %d differs", p.n, i)
		}
	}
	admitted := 0
	for _, ok := range p.spr.Mask {
		if ok {
			admitted++
		}
	}
	if admitted != len(p.cand) { // Candidates returns admitting machines only
		p.t.Fatalf("decision %d: %d mask entries set for %d candidates", p.n, admitted, len(p.cand))
	}
	row("pending", p.full.Pending, p.spr.Pending, 0, JobFeatures)
	for k := range p.full.Global {
		if k != oGPUFrag && k != oFeasible && p.full.Global[k] != p.spr.Global[k] {
			p.t.Fatalf("decision %d: global %d = %v full, %v sparse", p.n, k, p.full.Global[k], p.spr.Global[k])
		}
	}
	p.n++
	return p.Langevin.Decide(obs, rng)
}

// TestSparseObservation: a sparse refresh gives the candidates the rows,
// history and mask a full refresh gives them, and the same global vector
// but for its two estimates.
func TestSparseObservation(t *testing.T) {
	c, _ := NewSyntheticCluster(64, 8)
	cfg := DefaultWorkload
	cfg.Horizon = 1800
	w, _ := NewSyntheticWorkload(c, cfg, 8)
	p := &sparseViews{t: t}
	teg := GovernorTEG("langevin")
	sim, err := NewSim(c, w, p, SimConfig{Seed: 8, Duration: 1800, TEG: &teg})
	if err != nil {
		t.Fatal(err)
	}
	sim.Run()
	if p.n < 50 || p.cold < p.n {
		t.Fatalf("%d decisions checked, %d cold candidates", p.n, p.cold)
	}
}

// energyFragChecker is langevin that, at every decision, compares
// EnergyFrag on each admitting machine with Energy and FragAdded.
type energyFragChecker struct {
	Langevin
	checks, gpu, bad int
}

func (p *energyFragChecker) Decide(obs *Observation, rng *rand.Rand) Action {
	for i := range obs.State.M {
		if !obs.State.Admit(i, &obs.Req) {
			continue
		}
		e, frag := obs.TEG.EnergyFrag(obs.Job, &obs.Req, i)
		we, wf := obs.TEG.Energy(obs.Job, &obs.Req, i), obs.TEG.FragAdded(obs.Job, &obs.Req, i)
		if math.Float64bits(e) != math.Float64bits(we) || frag != wf {
			p.bad++
		}
		p.checks++
		if obs.Req.GPUs > 0 && frag != 0 {
			p.gpu++
		}
	}
	return p.Langevin.Decide(obs, rng)
}

// TestEnergyFrag: EnergyFrag is (Energy, FragAdded) bit for bit, with the
// energy's fragmentation weight on (the value is shared) and off.
func TestEnergyFrag(t *testing.T) {
	for _, wf := range []float64{DefaultTEG.Weights.Frag, 0} {
		c, _ := NewSyntheticCluster(96, 1)
		cfg := DefaultWorkload
		cfg.Horizon = 7200
		w, _ := NewSyntheticWorkload(c, cfg, 1)
		teg := GovernorTEG("langevin")
		teg.Weights.Frag = wf
		p := &energyFragChecker{}
		sim, err := NewSim(c, w, p, SimConfig{Seed: 1, Duration: 7200, TEG: &teg})
		if err != nil {
			t.Fatal(err)
		}
		sim.Run()
		t.Logf("frag weight %g: %d placements checked, %d with GPU fragmentation", wf, p.checks, p.gpu)
		if p.bad != 0 || p.checks < 1000 || p.gpu < 100 {
			t.Fatalf("frag weight %g: %d of %d differ; %d with fragmentation", wf, p.bad, p.checks, p.gpu)
		}
	}
}
