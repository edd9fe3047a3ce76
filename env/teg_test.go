package env

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Tests of the TEG mechanisms (docs/teg.md) on hand-built states
// whose expected values are worked out in the comments.

// tegFixed is a TEG configuration spelled out field by field (docs/teg.md
// defaults), so that hand-computed tests do not move when DefaultTEG is
// re-tuned. Fields added later stay at their zero value (off).
func tegFixed() TEGConfig {
	return TEGConfig{
		Weights:    FieldWeights{CPU: 1, Mem: 1, GPU: 1, Net: 0.5, Pow: 0.5},
		FieldEvery: 5, Staleness: 2, ColdList: 64,
		Mobility: 0.05, MoveCandidates: 2, PlaceCandidates: 8,
		MigrationCost: 0.2, MigrationDowntime: 30, Gamma0: 0.05, GangPenalty: 1, Affinity: 0.5,
		Safety: true, Alpha: 0.5, Horizon: 60, GrowthMax: 1.0 / 600,
		MemOveruse: 0.3, OveruseShare: 0.1,
		DMax: 10, PhiC: 0.3, Width: 0.05, KChi: 1, Chi0: 0.1, Beta: 0.2, Window: 30, CTax: 0.1,
		Tokens: true, HalfLife: 3600, GPUWeight: 10, AgeScale: 600,
		Contention: true, NashEvery: 60, NashSample: 32,
		Reward: RewardWeights{Success: 0.5, Energy: 0.3, Latency: 0.2, WaitSLA: 200},
	}
}

// tegCluster builds a cluster of the given racks (one leaf, one zone) and
// machines, and checks that it validates.
func tegCluster(t testing.TB, racks []Rack, machines ...Machine) *Cluster {
	t.Helper()
	c := &Cluster{Machines: machines, Racks: racks, Leaves: []Leaf{{Name: "l0", UplinkGbps: 400}},
		Zones: []Zone{{Name: "z0"}}, Net: DefaultNetwork}
	c.finish()
	if err := c.Validate(); err != nil {
		t.Fatalf("hand-built cluster: %v", err)
	}
	return c
}

// stubSched answers every offer with decide(obs).
type stubSched struct {
	decide func(o *Observation) Action
}

func (*stubSched) Name() string                                 { return "stub" }
func (p *stubSched) Decide(o *Observation, _ *rand.Rand) Action { return p.decide(o) }

// placeAll puts every job on machine node (GPU gpu for share jobs).
func placeAll(node, gpu int) *stubSched {
	return &stubSched{func(*Observation) Action { return Place(node, gpu) }}
}

// batch is a non-service batch job arriving at 0.
func batch(cpu, mem int64, dur float64) Job {
	return Job{Kind: Batch, QoS: BestEffort, CPU: cpu, Mem: mem, Duration: dur, Service: -1}
}

// tegSim runs jobs (IDs and names assigned here) on c under sched with a
// 10 s tick, no failures and the given TEG configuration.
func tegSim(t testing.TB, c *Cluster, jobs []Job, sched Scheduler, teg TEGConfig, seed uint64) *Sim {
	t.Helper()
	for i := range jobs {
		jobs[i].ID = i
		if jobs[i].Name == "" {
			jobs[i].Name = "j" + itoa(int64(i))
		}
	}
	s, err := NewSim(c, &Workload{Name: "hand", Jobs: jobs}, sched, SimConfig{Seed: seed, Tick: 10, MTBF: -1, TEG: &teg})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*max(1, math.Abs(b)) }

// ---------------------------------------------------------------- field

func TestPressure(t *testing.T) {
	for _, c := range []struct{ rho, want float64 }{
		{0, 0},
		{-0.5, 0},              // clipped to 0
		{0.5, 0.5 / 0.52},      // 0.961538…
		{0.25, 0.25 / 0.77},    // 0.324675…
		{0.98, 0.98 / 0.04},    // 24.5
		{1, 50},                // 1/0.02
		{1.7, 50},              // clipped to 1
		{math.Inf(1), 50},      // clipped
		{1e-9, 1e-9 / 1.02},    // flat near idle
		{0.75, 0.75 / (0.27)},  // 2.777…
		{0.8, 0.8 / (0.22)},    // 3.636…
		{0.125, 0.125 / 0.895}, // 0.139664…
	} {
		if got := pressure(c.rho); !near(got, c.want, 1e-12) {
			t.Errorf("p(%v) = %v, want %v", c.rho, got, c.want)
		}
	}
	// Monotone on [0, 1].
	prev := -1.0
	for k := 0; k <= 1000; k++ {
		p := pressure(float64(k) / 1000)
		if p < prev {
			t.Fatalf("p not monotone at %v", float64(k)/1000)
		}
		prev = p
	}
}

// fieldCluster: rack 0 (uplink 100 Gbit/s, budget 2000 W) holds m0 (10
// cores, 8 GiB, 4 A100) and m1 (4 cores, 4 GiB); rack 1 (uplink 50, no
// power budget) holds m2 (8 cores, 16 GiB).
func fieldCluster(t testing.TB) *Cluster {
	return tegCluster(t,
		[]Rack{{Name: "r0", UplinkGbps: 100, PowerBudgetW: 2000}, {Name: "r1", UplinkGbps: 50}},
		newMachine("m0", 10000, 8192, 4, "A100", 0),
		newMachine("m1", 4000, 4096, 0, "", 0),
		newMachine("m2", 8000, 16384, 0, "", 1),
	)
}

// TestFieldHandComputed sets the loads of a hand-built cluster directly and
// checks V_i = w·p(ρ) term by term.
func TestFieldHandComputed(t *testing.T) {
	c := fieldCluster(t)
	teg := tegFixed()
	s := tegSim(t, c, nil, placeAll(0, -1), teg, 1)
	// m0: CPU 5000/10000 = 0.5, memory 2048/8192 = 0.25, 2 of 4 GPUs = 0.5.
	// m1: CPU 4800/4000 = 1.2 (clipped to 1), memory 0.
	// m2: CPU 2000/8000 = 0.25, memory 12288/16384 = 0.75.
	s.ld.cpuUse = []float64{5000, 4800, 2000}
	for i, sat := range []float64{2048, 0, 12288} {
		s.ld.hot[i].memAgg.sat = sat
	}
	r2 := Request{GPUs: 2, Milli: MilliGPU, Class: 3}
	if _, err := s.state.allocate(0, &r2, -1); err != nil {
		t.Fatal(err)
	}
	// Rack 0: traffic 25 of 100 (κ = 0.25), power 1600 of 2000 (π = 0.8).
	// Rack 1: traffic 60 of 50 (κ = 1.2, clipped), no budget (π = 0).
	s.ld.rackTraffic = []float64{25, 60}
	s.ld.rackPower = []float64{1600, 500}
	f := newField(3, 2, teg.ColdList)
	s.computeField(f)

	// V0 = p(.5) + p(.25) + p(.5) + .5·p(.25) + .5·p(.8)
	//    = 0.961538 + 0.324675 + 0.961538 + 0.162338 + 1.818182 = 4.228271
	// V1 = p(1) + 0 + 0 (no GPUs) + rack 0 terms = 50 + 1.980519 = 51.980519
	// V2 = p(.25) + p(.75) + 0 + .5·p(1) + 0 = 0.324675 + 2.777778 + 25 = 28.102453
	want := []float64{
		0.5/0.52 + 0.25/0.77 + 0.5/0.52 + 0.5*0.25/0.77 + 0.5*0.8/0.22,
		50 + 0.5*0.25/0.77 + 0.5*0.8/0.22,
		0.25/0.77 + 0.75/0.27 + 0.5*50,
	}
	lit := []float64{4.228271, 51.980519, 28.102453}
	for i := range want {
		if !near(float64(f.V[i]), want[i], 1e-6) || !near(want[i], lit[i], 1e-6) {
			t.Errorf("V[%d] = %v, want %v (%v by hand)", i, f.V[i], want[i], lit[i])
		}
	}
	wantRho := []float32{0.5, 0.25, 0.5, 1.2, 0, 0, 0.25, 0.75, 0}
	if !slices.Equal(f.Rho, wantRho) {
		t.Errorf("Rho = %v, want %v", f.Rho, wantRho)
	}
	if !slices.Equal(f.Kappa, []float32{0.25, 1.2}) || !slices.Equal(f.Pi, []float32{0.8, 0}) {
		t.Errorf("Kappa %v Pi %v, want [0.25 1.2] [0.8 0]", f.Kappa, f.Pi)
	}
	if !slices.Equal(f.Cold, []int32{0, 2, 1}) || !slices.Equal(f.ColdGPU, []int32{0}) {
		t.Errorf("Cold %v ColdGPU %v, want [0 2 1] [0]", f.Cold, f.ColdGPU)
	}
	// potentialWith with nothing added is V; with 2000m more CPU on m2 its
	// CPU term becomes p(0.5): 28.102453 - 0.324675 + 0.961538.
	if got := potentialWith(&teg.Weights, f, 2, 1, 0, 0, 0, 0, 0); !near(got, want[2], 1e-6) {
		t.Errorf("potentialWith(m2, 0) = %v, want %v", got, want[2])
	}
	if got, w := potentialWith(&teg.Weights, f, 2, 1, 0.25, 0, 0, 0, 0), want[2]-0.25/0.77+0.5/0.52; !near(got, w, 1e-6) {
		t.Errorf("potentialWith(m2, +0.25 cpu) = %v, want %v", got, w)
	}
	// Weights scale their terms: only the network weight, doubled.
	s.teg.Weights = FieldWeights{Net: 1}
	s.computeField(f)
	if got := []float64{float64(f.V[0]), float64(f.V[1]), float64(f.V[2])}; !near(got[0], 0.25/0.77, 1e-6) ||
		!near(got[1], 0.25/0.77, 1e-6) || !near(got[2], 50, 1e-6) {
		t.Errorf("net-only V = %v, want [0.324675 0.324675 50]", got)
	}
	// A machine that is down is unreachable and never cold.
	s.teg.Weights = teg.Weights
	s.state.setUp(2, false)
	s.computeField(f)
	if !math.IsInf(float64(f.V[2]), 1) || !slices.Equal(f.Cold, []int32{0, 1}) {
		t.Errorf("down m2: V %v, Cold %v; want +Inf and [0 1]", f.V[2], f.Cold)
	}
	if got := potentialWith(&teg.Weights, f, 2, 1, 0, 0, 0, 0, 0); !math.IsInf(got, 1) {
		t.Errorf("potentialWith on a down machine = %v, want +Inf", got)
	}
}

// TestFieldFromPlacement places a job through the simulation and checks
// the field against the job's own drawn usage.
func TestFieldFromPlacement(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0", UplinkGbps: 100, PowerBudgetW: 2000}, {Name: "r1", UplinkGbps: 50, PowerBudgetW: 1000}},
		newMachine("m0", 10000, 8192, 0, "", 0),
		newMachine("m1", 8000, 16384, 0, "", 1),
	)
	teg := tegFixed()
	teg.FieldEvery, teg.Staleness = 1, 0
	j := batch(2000, 2048, 1000)
	j.NetGbps = 10
	s := tegSim(t, c, []Job{j}, placeAll(1, -1), teg, 3)
	s.Step() // t = 10: placed on m1, field computed after
	r := &s.jobs[0]
	if r.state != running || r.alloc.Machine != 1 {
		t.Fatalf("job not running on m1: %+v", r)
	}
	u, f0 := r.use.cpu, r.use.f0
	// m1 (8 cores: idle 68 W, peak 96 W, host dynamic range 28 W):
	// ρcpu = u·2000/8000, ρmem = f0·2048/16384 (the run just started),
	// κ = 10/50, π = (68 + 28·u·2000/8000)/1000.
	pi := (68 + 28*u*2000/8000) / 1000
	want := pressure(u*2000/8000) + pressure(f0*2048/16384) + 0.5*pressure(10.0/50) + 0.5*pressure(pi)
	f := s.fields.latest
	if f.Tick != 1 || !near(float64(f.V[1]), want, 1e-6) {
		t.Errorf("V[m1] = %v at tick %d, want %v at tick 1", f.V[1], f.Tick, want)
	}
	// m0: empty, its rack idle at 70 W of 2000.
	if w0 := 0.5 * pressure(70.0/2000); !near(float64(f.V[0]), w0, 1e-6) {
		t.Errorf("V[m0] = %v, want %v", f.V[0], w0)
	}
	if s.ld.rackTraffic[1] != 10 || s.ld.rackTraffic[0] != 0 {
		t.Errorf("rack traffic %v, want [0 10]", s.ld.rackTraffic)
	}
}

// TestFieldStaleness: with FieldEvery K and Staleness s, after tick t the
// newest snapshot is from tick ⌊t/K⌋·K and the visible one from the newest
// multiple c of K with c + s <= t (the initial snapshot of tick 0 before).
func TestFieldStaleness(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 4000, 4096, 0, "", 0), newMachine("m1", 4000, 4096, 0, "", 0))
	for _, ks := range [][2]int{{5, 2}, {1, 0}, {1, 3}, {2, 5}, {3, 3}, {4, 0}} {
		k, st := ks[0], ks[1]
		teg := tegFixed()
		teg.FieldEvery, teg.Staleness = k, st
		teg.Controller = true // no idle skipping: every tick is stepped
		s := tegSim(t, c, []Job{batch(1000, 1024, 1e5)}, placeAll(0, -1), teg, 1)
		saved := map[int][]float32{}
		for tick := 1; tick <= 30; tick++ {
			s.Step()
			if s.ticks != tick {
				t.Fatalf("K=%d s=%d: ticks %d, want %d", k, st, s.ticks, tick)
			}
			if got, want := s.fields.latest.Tick, tick/k*k; got != want {
				t.Errorf("K=%d s=%d tick %d: newest snapshot from %d, want %d", k, st, tick, got, want)
			}
			if tick%k == 0 {
				saved[tick] = slices.Clone(s.fields.latest.V)
			}
			want := 0
			for c := 0; c+st <= tick; c += k {
				want = c
			}
			vis := s.visibleField()
			if vis.Tick != want {
				t.Errorf("K=%d s=%d tick %d: visible snapshot from %d, want %d", k, st, tick, vis.Tick, want)
			}
			// The visible copy is the snapshot as computed then (the
			// job placed at tick 1 is invisible before).
			if want == 0 {
				if vis.V[0] != 0 {
					t.Errorf("K=%d s=%d tick %d: visible V0 = %v before the job's snapshot", k, st, tick, vis.V[0])
				}
			} else if !slices.Equal(vis.V, saved[want]) {
				t.Errorf("K=%d s=%d tick %d: visible V %v, snapshot of tick %d was %v", k, st, tick, vis.V, want, saved[want])
			}
		}
		if s.fields.latest.V[0] <= 0 {
			t.Errorf("K=%d s=%d: newest V0 = %v with a job running", k, st, s.fields.latest.V[0])
		}
		// Snapshots in flight are bounded: ⌈s/K⌉ pending plus the visible one.
		if n, lim := len(s.fields.bufs), (st+k-1)/k+1; n > lim {
			t.Errorf("K=%d s=%d: %d snapshots held, want <= %d", k, st, n, lim)
		}
	}
}

// ---------------------------------------------------------------- Langevin

// TestAcceptZeroTemperature: with γ0 = 0 (T_eff = 0) a move is accepted
// exactly when it lowers the energy: drift only, no noise.
func TestAcceptZeroTemperature(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 4000, 4096, 0, "", 0))
	teg := tegFixed()
	teg.Gamma0 = 0
	s := tegSim(t, c, nil, placeAll(0, -1), teg, 1)
	if T := s.view.Temperature(); T != 0 {
		t.Fatalf("T_eff = %v, want 0", T)
	}
	for _, dE := range []float64{-1e9, -1, -1e-12, math.Inf(-1), 0, 1e-12, 1, 1e9, math.Inf(1)} {
		for k := 0; k < 100; k++ {
			if got := s.accept(dE); got != (dE < 0) {
				t.Fatalf("T=0: accept(%v) = %v, want %v", dE, got, dE < 0)
			}
		}
	}
	// T_eff = γ0/(1+D): γ0 = 0.5, D = 4 gives 0.1.
	s.teg.Gamma0, s.ctl.d = 0.5, 4
	if T := s.view.Temperature(); !near(T, 0.1, 1e-15) {
		t.Errorf("T_eff = %v, want 0.1", T)
	}
}

// TestAcceptHeatBath: at T > 0 the acceptance of a fixed ΔE is a Bernoulli
// draw with p = 1/(1+exp(ΔE/T)); the count of accepted moves out of n is
// Binomial(n, p): its mean n·p and variance n·p·(1-p) are checked on
// batches of draws.
func TestAcceptHeatBath(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 4000, 4096, 0, "", 0))
	for _, tc := range []struct{ gamma0, dE float64 }{
		{1, 0.5},    // p = 1/(1+e^0.5) = 0.377541
		{1, -1},     // p = 0.731059
		{0.05, 0.1}, // p = 1/(1+e^2) = 0.119203
		{1e6, 5},    // large temperature: p -> 1/2 (0.4999988)
		{1e6, -5},   // 0.5000013
		{1e9, 0.2},  // 0.5
	} {
		teg := tegFixed()
		teg.Gamma0 = tc.gamma0
		s := tegSim(t, c, nil, placeAll(0, -1), teg, 11)
		p := 1 / (1 + math.Exp(tc.dE/tc.gamma0))
		if tc.gamma0 >= 1e6 && math.Abs(p-0.5) > 2e-6 {
			t.Errorf("γ0 %v: p = %v, want about 1/2", tc.gamma0, p)
		}
		const batches, n = 2000, 50
		counts := make([]float64, batches)
		total := 0.0
		for b := range counts {
			for k := 0; k < n; k++ {
				if s.accept(tc.dE) {
					counts[b]++
				}
			}
			total += counts[b]
		}
		N := float64(batches * n)
		// Mean: within 4 binomial standard deviations of N·p.
		if sd := math.Sqrt(N * p * (1 - p)); math.Abs(total-N*p) > 4*sd {
			t.Errorf("γ0 %v ΔE %v: %v accepted of %v, want %v ± %v", tc.gamma0, tc.dE, total, N, N*p, 4*sd)
		}
		// Spread: the sample variance of the per-batch counts estimates
		// n·p·(1-p); its standard error is about σ²·sqrt(2/(B-1)).
		m := total / batches
		v := 0.0
		for _, x := range counts {
			v += (x - m) * (x - m)
		}
		v /= batches - 1
		want := n * p * (1 - p)
		if se := want * math.Sqrt(2.0/(batches-1)); math.Abs(v-want) > 4*se {
			t.Errorf("γ0 %v ΔE %v: variance of accepted counts %v, want %v ± %v", tc.gamma0, tc.dE, v, want, 4*se)
		}
	}
}

// TestZeroTemperatureMove: two 8-core machines in one rack; a hot,
// immovable job (6 cores) and a small migratable one (1 core) both start on
// m0. At T = 0 the small job moves to the cold m1 as soon as the field
// shows m0 hot, exactly once, and its completion is pushed back by the
// migration downtime.
func TestZeroTemperatureMove(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}},
		newMachine("m0", 8000, 16384, 0, "", 0),
		newMachine("m1", 8000, 16384, 0, "", 0))
	teg := tegFixed()
	teg.Gamma0, teg.Moves, teg.Mobility = 0, true, 0.1 // every job attempts every tick
	teg.FieldEvery, teg.Staleness, teg.ColdList = 1, 0, 1
	teg.Contention = false
	hot, mover := batch(6000, 8192, 1e4), batch(1000, 1024, 1e4)
	mover.Migratable = true
	s := tegSim(t, c, []Job{hot, mover}, placeAll(0, -1), teg, 5)

	s.Step() // t = 10: both start on m0; the visible field (tick 0) is flat
	r := &s.jobs[1]
	if r.state != running || r.alloc.Machine != 0 || s.jobs[0].alloc.Machine != 0 {
		t.Fatalf("placement: mover on %d, hot on %d", r.alloc.Machine, s.jobs[0].alloc.Machine)
	}
	if s.acc.migrations != 0 {
		t.Fatalf("moved on a flat field: %d migrations", s.acc.migrations)
	}
	endBefore := r.end // 10 + 10000
	if endBefore != 10010 {
		t.Errorf("end %v, want 10010", endBefore)
	}
	// The field of tick 1 is visible now. Energy of the mover:
	// at m0 (its own load included) E0 = V0 = p(ρcpu0) + p(ρmem0);
	// at m1 E1 = p(u1·1000/8000) + p(frac1(20)·1024/16384) (m1 is empty, same
	// rack: no rack terms added); ΔE = E1 - E0 + 0.2.
	h := &s.jobs[0]
	f := s.visibleField()
	rc0 := (h.use.cpu*6000 + r.use.cpu*1000) / 8000
	rm0 := (h.use.frac(10)*8192 + r.use.frac(10)*1024) / 16384
	e0 := pressure(rc0) + pressure(rm0)
	if !near(float64(f.V[0]), e0, 1e-6) || f.Cold[0] != 1 {
		t.Fatalf("visible V0 = %v (want %v), cold list %v (want [1])", f.V[0], e0, f.Cold)
	}
	// The energy is evaluated with the job's memory now (t = 10) here, and
	// at t = 20 when the move is tried.
	e1 := pressure(r.use.cpu*1000/8000) + pressure(r.use.frac(10)*1024/16384)
	req := s.state.Request(&s.w.Jobs[1])
	if got := s.view.energy(f, &s.w.Jobs[1], &req, 1); !near(got, e1, 1e-6) {
		t.Errorf("E(m1) = %v, want %v", got, e1)
	}
	if got := s.view.energy(f, &s.w.Jobs[1], &req, 0); !near(got, e0, 1e-6) {
		t.Errorf("E(m0) = %v, want %v", got, e0)
	}
	if dE := pressure(r.use.cpu*1000/8000) + pressure(r.use.frac(20)*1024/16384) - e0 + 0.2; dE >= 0 {
		t.Fatalf("hand-computed ΔE = %v, want < 0 (E0 %v, E1 %v)", dE, e0, e1)
	}

	s.Step() // t = 20: the mover descends to m1
	if r.alloc.Machine != 1 || s.acc.migrations != 1 {
		t.Fatalf("after the drift: mover on m%d, %d migrations; want m1, 1", r.alloc.Machine, s.acc.migrations)
	}
	// 10 s of progress done, 9990 left, resumed after 30 s of downtime:
	// end = 20 + 30 + 9990 = 10040 = old end + 30.
	if !near(r.end, endBefore+30, 1e-12) {
		t.Errorf("end after the move %v, want %v", r.end, endBefore+30)
	}
	// The job's energy on the newest field is lower than before the move.
	if got := s.view.energy(s.fields.latest, &s.w.Jobs[1], &req, 1); got >= e0 {
		t.Errorf("energy after the move %v, before %v: not lower", got, e0)
	}
	for k := 0; k < 20; k++ {
		s.Step()
	}
	if m := s.Metrics(); m.Migrations != 1 || r.alloc.Machine != 1 {
		t.Errorf("after 20 more ticks: %d migrations, mover on m%d; want 1 and m1 (no uphill moves at T=0)", m.Migrations, r.alloc.Machine)
	}
}

// ---------------------------------------------------------------- Landau

func landau(window int) (*controller, *TEGConfig) {
	cfg := tegFixed()
	cfg.Window = window
	var c controller
	c.init(&cfg)
	return &c, &cfg
}

func logistic(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// TestLandauTargetMonotone: with χ fixed (constant windows: Var = 0, χ = 0)
// the target D* = D_max·σ((φ-φc)/w + kχ(0-χ0)) rises strictly with φ.
func TestLandauTargetMonotone(t *testing.T) {
	prev := -1.0
	for k := 0; k <= 60; k++ {
		phi := float64(k) * 0.01
		c, cfg := landau(10)
		for n := 0; n < 10; n++ {
			c.observe(phi)
		}
		st := c.stats()
		if !near(st.Mean, phi, 1e-12) || st.Var > 1e-15 || st.Chi > 1e-12 {
			t.Fatalf("φ %v: constant window gave mean %v var %v χ %v", phi, st.Mean, st.Var, st.Chi)
		}
		want := cfg.DMax * logistic((phi-0.3)/0.05-0.1)
		if !near(st.Target, want, 1e-12) {
			t.Errorf("φ %v: D* = %v, want %v", phi, st.Target, want)
		}
		if st.Target <= prev && st.Target < cfg.DMax {
			t.Errorf("D* not rising: φ %v gives %v after %v", phi, st.Target, prev)
		}
		prev = st.Target
	}
	// Known points: φ = φc gives 10·σ(-0.1) = 4.750208; φ = 0 gives
	// 10·σ(-6.1) = 0.022378; φ = 0.6 gives 10·σ(5.9) = 9.972680.
	for _, p := range []struct{ phi, want float64 }{{0.3, 4.750208}, {0, 0.022378}, {0.6, 9.972680}} {
		c, _ := landau(5)
		c.observe(p.phi)
		if got := c.stats().Target; math.Abs(got-p.want) > 1e-6 {
			t.Errorf("D*(φ=%v) = %v, want %v", p.phi, got, p.want)
		}
	}
	// χ raises D* at fixed mean: window {0.2, 0.4} has mean 0.3, Var 0.01,
	// χ = 0.01/0.3, so D* = 10·σ(0 + 0.0333 - 0.1) = 4.833395.
	c, _ := landau(2)
	c.observe(0.2)
	c.observe(0.4)
	if got := c.stats().Target; math.Abs(got-10*logistic(0.01/0.3-0.1)) > 1e-9 || got <= 4.750208 {
		t.Errorf("D* with χ = 1/30: %v, want %v", got, 10*logistic(0.01/0.3-0.1))
	}
}

// TestLandauSmoothing: from D = 0, constant φ gives a constant target D*,
// and D_n = D*(1 - (1-β)^n).
func TestLandauSmoothing(t *testing.T) {
	c, _ := landau(30)
	const phi = 0.35
	target := 10 * logistic((phi-0.3)/0.05-0.1) // 7.109495
	for n := 1; n <= 60; n++ {
		c.update(phi)
		want := target * (1 - math.Pow(0.8, float64(n)))
		if !near(c.d, want, 1e-12) {
			t.Fatalf("step %d: D = %v, want %v", n, c.d, want)
		}
	}
	if math.Abs(c.d-target) > 1e-4 {
		t.Errorf("D = %v did not converge to D* = %v", c.d, target)
	}
	// Cooling: φ = 0 pulls D back down towards 10·σ(-6.1) = 0.02234.
	for n := 0; n < 200; n++ {
		c.update(0)
	}
	if math.Abs(c.d-10*logistic(-6.1)) > 1e-9 {
		t.Errorf("cooled D = %v, want %v", c.d, 10*logistic(-6.1))
	}
}

func TestLandauOverride(t *testing.T) {
	c, _ := landau(5)
	for _, tc := range []struct{ in, want float64 }{
		{4, 4}, {-3, 0}, {25, 10}, {10, 10}, {0, 0}, {2.5, 2.5},
	} {
		c.override(tc.in)
		if c.d != tc.want || !c.overridden {
			t.Errorf("override(%v): D = %v, want %v", tc.in, c.d, tc.want)
		}
	}
	c.override(math.NaN()) // ignored
	c.override(math.Inf(1))
	if c.d != 2.5 {
		t.Errorf("override(NaN), override(+Inf) changed D to %v", c.d)
	}
	// Through the simulation: an action's Damping overrides the controller.
	cl := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 4000, 4096, 0, "", 0))
	for _, tc := range []struct{ d, want float64 }{{25, 10}, {-1, 0}, {3, 3}} {
		teg := tegFixed()
		a := Place(0, -1)
		a.Damping = float32(tc.d)
		s := tegSim(t, cl, []Job{batch(100, 100, 1000)}, &stubSched{func(*Observation) Action { return a }}, teg, 1)
		s.Step()
		if s.ctl.d != tc.want {
			t.Errorf("action damping %v: D = %v, want %v", tc.d, s.ctl.d, tc.want)
		}
	}
}

// TestLandauStatistics: rolling mean, variance, χ and lag-1
// autocorrelation on hand-made sequences (window 4).
func TestLandauStatistics(t *testing.T) {
	c, _ := landau(4)
	for _, x := range []float64{1, 2, 3, 4} {
		c.observe(x)
	}
	// mean 2.5, Var = 30/4 - 6.25 = 1.25, χ = 0.5;
	// lag: Σφtφt-1 = 2+6+12 = 20, cov = 20/3 - 6.25 = 0.416667, r1 = 1/3.
	check := func(what string, st Stats, mean, v, chi, lag float64) {
		t.Helper()
		if !near(st.Mean, mean, 1e-12) || !near(st.Var, v, 1e-12) || !near(st.Chi, chi, 1e-12) || !near(st.Lag1, lag, 1e-12) {
			t.Errorf("%s: mean %v var %v χ %v lag1 %v; want %v %v %v %v", what, st.Mean, st.Var, st.Chi, st.Lag1, mean, v, chi, lag)
		}
	}
	check("1,2,3,4", c.stats(), 2.5, 1.25, 0.5, 1.0/3)
	// Rolling: window 2,3,4,5: mean 3.5, Var 54/4 - 12.25 = 1.25, χ = 1.25/3.5;
	// Σ = 6+12+20 = 38, cov = 38/3 - 12.25 = 0.416667, r1 = 1/3.
	c.observe(5)
	check("2,3,4,5", c.stats(), 3.5, 1.25, 1.25/3.5, 1.0/3)
	if st := c.stats(); st.Phi != 5 {
		t.Errorf("Phi = %v, want the last sample 5", st.Phi)
	}
	// Alternating 1,3,1,3 (after rolling): mean 2, Var 1, χ 0.5;
	// Σ = 3+3+3 = 9, cov = 9/3 - 4 = -1, r1 = -1.
	c2, _ := landau(4)
	for _, x := range []float64{7, 7, 1, 3, 1, 3} {
		c2.observe(x)
	}
	check("1,3,1,3", c2.stats(), 2, 1, 0.5, -1)
	// A long sequence rolled through a window of 8 against a direct
	// computation on the last 8 values.
	c3, _ := landau(8)
	rng := rand.New(rand.NewPCG(1, 2))
	var xs []float64
	for k := 0; k < 100; k++ {
		x := rng.Float64()
		xs = append(xs, x)
		c3.observe(x)
	}
	w := xs[len(xs)-8:]
	m, sq, lag := 0.0, 0.0, 0.0
	for k, x := range w {
		m += x / 8
		sq += x * x / 8
		if k > 0 {
			lag += w[k-1] * x
		}
	}
	v := sq - m*m
	check("random window", c3.stats(), m, v, v/m, (lag/7-m*m)/v)
}

// ---------------------------------------------------------------- tokens

// TestTokenEvaporation: dB/dt = u - λB with λ = ln2/HalfLife.
func TestTokenEvaporation(t *testing.T) {
	c := fieldCluster(t) // 10 + 4 + 8 cores and 4 GPUs
	cfg := tegFixed()
	var tk tokens
	tk.init(c, &cfg, 0)
	lambda := math.Ln2 / 3600
	if !near(tk.lambda, lambda, 1e-15) {
		t.Fatalf("λ = %v, want %v", tk.lambda, lambda)
	}
	// Supply bound: (22 cores + 10·4 GPUs)/λ = 62·3600/ln2 = 322,007.3.
	if b := tk.SupplyBound(); !near(b, 62/lambda, 1e-12) {
		t.Errorf("SupplyBound = %v, want %v", b, 62/lambda)
	}
	a, b := tk.index(7), tk.index(3)
	if a != 0 || b != 1 || tk.index(7) != 0 {
		t.Fatalf("tenant indices %d %d", a, b)
	}
	// No earnings: one half-life halves the supply, in one step or many.
	tk.bal[a], tk.bal[b] = 1000, 250
	tk.decay(3600)
	if !near(tk.bal[a], 500, 1e-9) || !near(tk.supply(), 625, 1e-9) {
		t.Errorf("after one half-life: %v, supply %v; want 500, 625", tk.bal[a], tk.supply())
	}
	for k := 0; k < 360; k++ {
		tk.decay(10)
	}
	if !near(tk.supply(), 312.5, 1e-9) {
		t.Errorf("after two half-lives in 10 s steps: supply %v, want 312.5", tk.supply())
	}
	// Earning: a job with 2 cores and half a GPU earns 2 + 10·0.5 = 7/s.
	j := Job{CPU: 2000, Mem: 1, GPUs: 1, GPUMilli: 500, Service: -1}
	tk.bal[a], tk.bal[b] = 0, 0
	tk.earn(a, &j, +1)
	if tk.rate[a] != 7 {
		t.Fatalf("earning rate %v, want 7", tk.rate[a])
	}
	// From 0, after one half-life: (u/λ)(1 - 1/2).
	tk.decay(3600)
	if want := 7 / lambda / 2; !near(tk.bal[a], want, 1e-9) {
		t.Errorf("earning for one half-life: %v, want %v", tk.bal[a], want)
	}
	// Constant earning tends to u/λ = 36,357.6 (60 half-lives: 2^-60 off).
	tk.decay(60 * 3600)
	if want := 7 / lambda; !near(tk.bal[a], want, 1e-12) {
		t.Errorf("steady balance %v, want u/λ = %v", tk.bal[a], want)
	}
	if tk.supply() > tk.SupplyBound() {
		t.Errorf("supply %v above bound %v", tk.supply(), tk.SupplyBound())
	}
	tk.earn(a, &j, -1)
	if tk.rate[a] != 0 {
		t.Errorf("rate after the job left: %v", tk.rate[a])
	}

	// No evaporation (HalfLife 0): the balance grows linearly, unbounded.
	cfg0 := tegFixed()
	cfg0.HalfLife = 0
	var t0 tokens
	t0.init(c, &cfg0, 0)
	k := t0.index(1)
	t0.earn(k, &j, +1)
	for n := 1; n <= 100; n++ {
		t0.decay(10)
		if t0.bal[k] != 70*float64(n) {
			t.Fatalf("λ = 0, step %d: balance %v, want %v", n, t0.bal[k], 70*float64(n))
		}
	}
	if !math.IsInf(t0.SupplyBound(), 1) {
		t.Errorf("λ = 0: bound %v, want +Inf", t0.SupplyBound())
	}
}

// TestTokenPriority: a tenant that consumed much recently waits behind one
// that did not, though its job is older; without tokens the queue is FIFO.
func TestTokenPriority(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 4000, 8192, 0, "", 0))
	for _, tokensOn := range []bool{true, false} {
		teg := tegFixed()
		teg.Tokens, teg.Safety, teg.Contention = tokensOn, false, false
		// j0 (tenant 0) holds the machine from 10 to 1010; j1 (tenant 0,
		// arrived at 5) and j2 (tenant 1, arrived at 8) wait.
		j0, j1, j2 := batch(4000, 1024, 1000), batch(4000, 1024, 100), batch(4000, 1024, 100)
		j1.Arrival, j2.Arrival, j2.Tenant = 5, 8, 1
		s := tegSim(t, c, []Job{j0, j1, j2}, &BestFit{}, teg, 1)
		s.Run()
		// With tokens at t = 1010: B_0 = 4·(1 - 2^(-1000/3600))/λ = 3642,
		// S = capRate/2/λ = 2/λ = 10388, so j1's priority is
		// 2^(-0.35) + 1005/600 = 2.46 and j2's 1 + 1002/600 = 2.67: j2 first.
		first, second := 2, 1
		if !tokensOn {
			first, second = 1, 2
		}
		if s.jobs[first].firstRun != 1010 || s.jobs[second].firstRun != 1110 {
			t.Errorf("tokens %v: j%d started at %v, j%d at %v; want 1010 and 1110", tokensOn,
				first, s.jobs[first].firstRun, second, s.jobs[second].firstRun)
		}
	}
}

// ---------------------------------------------------------------- Nash gap

// nashSim: two identical 8-core machines in one rack, two identical
// migratable jobs (2 cores, 4 GiB), placed by where.
func nashSim(t *testing.T, where func(id int) int, cost float64) *Sim {
	c := tegCluster(t, []Rack{{Name: "r0"}},
		newMachine("m0", 8000, 16384, 0, "", 0),
		newMachine("m1", 8000, 16384, 0, "", 0))
	teg := tegFixed()
	teg.MigrationCost = cost
	teg.FieldEvery, teg.Staleness = 1, 0
	jobs := []Job{batch(2000, 4096, 1e4), batch(2000, 4096, 1e4)}
	for i := range jobs {
		jobs[i].Migratable = true
	}
	s := tegSim(t, c, jobs, &stubSched{func(o *Observation) Action { return Place(where(o.Job.ID), -1) }}, teg, 9)
	s.Step()
	for id := range jobs {
		if r := &s.jobs[id]; r.state != running || r.alloc.Machine != where(id) {
			t.Fatalf("job %d not running on m%d", id, where(id))
		}
	}
	return s
}

func TestNashGap(t *testing.T) {
	// Equilibrium: one job per machine. Moving j to the other machine
	// raises every pressure there (ρ_c + ρ_j >= ρ_j), so no move gains
	// anything, even at zero migration cost.
	for _, cost := range []float64{0.2, 0} {
		s := nashSim(t, func(id int) int { return id }, cost)
		s.sampleNash()
		if s.acc.nashSamples != 1 || s.acc.nashMax != 0 || s.acc.nashMean != 0 {
			t.Errorf("equilibrium, cost %v: gap max %v mean %v (%d samples), want 0", cost, s.acc.nashMax, s.acc.nashMean, s.acc.nashSamples)
		}
	}
	// Unbalanced: both on m0. gap_j = V0 - E_j(m1) - 0.2, with
	// V0 = p((u0+u1)·2000/8000) + p((f0+f1)·4096/16384) and
	// E_j(m1) = p(u_j·2000/8000) + p(f_j·4096/16384).
	s := nashSim(t, func(int) int { return 0 }, 0.2)
	now := s.now
	r0, r1 := &s.jobs[0], &s.jobs[1]
	v0 := pressure((r0.use.cpu+r1.use.cpu)*2000/8000) + pressure((r0.use.frac(now)+r1.use.frac(now))*4096/16384)
	gap := func(r *jobRec) float64 {
		return max(0, v0-pressure(r.use.cpu*2000/8000)-pressure(r.use.frac(now)*4096/16384)-0.2)
	}
	g0, g1 := gap(r0), gap(r1)
	s.sampleNash()
	// NashSample 32 draws among 2 jobs: both are sampled.
	if want := max(g0, g1); want <= 0 || !near(s.acc.nashMax, want, 1e-5) {
		t.Errorf("unbalanced: gap max %v, want %v (> 0)", s.acc.nashMax, want)
	}
	if s.acc.nashMean <= 0 || s.acc.nashMean > s.acc.nashMax+1e-12 || s.acc.nashMean < min(g0, g1)-1e-5 {
		t.Errorf("unbalanced: gap mean %v outside [%v, %v]", s.acc.nashMean, min(g0, g1), s.acc.nashMax)
	}
	if m := s.Metrics(); m.NashGap != s.acc.nashMax || m.NashGapMean != s.acc.nashMean {
		t.Errorf("metrics nash %v/%v, acc %v/%v", m.NashGap, m.NashGapMean, s.acc.nashMax, s.acc.nashMean)
	}
}

// ---------------------------------------------------------------- reward

// TestRewardTerms sets the reward's inputs by hand.
func TestRewardTerms(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 4000, 8192, 0, "", 0))
	s := tegSim(t, c, nil, placeAll(0, -1), tegFixed(), 1)
	type in struct {
		judged, met int
		power, peak float64
		queued      int
		arrSum, now float64
	}
	for _, tc := range []struct {
		in   in
		want RewardTerms
	}{
		// S = 3/4, E = 1 - 300/1000 = 0.7, W = 250 - 300/2 = 100, L = 0.5:
		// r = 0.5·0.75 + 0.3·0.7 + 0.2·0.5 = 0.685.
		{in{4, 3, 300, 1000, 2, 300, 250}, RewardTerms{0.685, 0.75, 0.7, 0.5}},
		// Nothing judged, empty queue, idle at 0 W: r = 0.5 + 0.3 + 0.2 = 1.
		{in{0, 0, 0, 1000, 0, 0, 100}, RewardTerms{1, 1, 1, 1}},
		// All violated, at peak, mean wait 300 > W_sla: r = 0.
		{in{2, 0, 1000, 1000, 1, 0, 300}, RewardTerms{0, 0, 0, 0}},
		// S = 1/2, E = 1 - 780/1200 = 0.35, W = 50, L = 0.75:
		// r = 0.25 + 0.105 + 0.15 = 0.505.
		{in{2, 1, 780, 1200, 3, 3 * 150, 200}, RewardTerms{0.505, 0.5, 0.35, 0.75}},
	} {
		s.tickJudged, s.tickMet = tc.in.judged, tc.in.met
		s.power, s.peak = tc.in.power, tc.in.peak
		s.tq.n, s.queuedArrivalSum, s.now = tc.in.queued, tc.in.arrSum, tc.in.now
		s.acc = metricsAcc{}
		s.reward(3)
		got := s.LastReward()
		if !near(got.Total, tc.want.Total, 1e-12) || !near(got.Success, tc.want.Success, 1e-12) ||
			!near(got.Energy, tc.want.Energy, 1e-12) || !near(got.Latency, tc.want.Latency, 1e-12) {
			t.Errorf("%+v: reward %+v, want %+v", tc.in, got, tc.want)
		}
		if s.acc.rewardTicks != 3 || !near(s.acc.reward, 3*tc.want.Total, 1e-12) {
			t.Errorf("%+v: accumulated %v over %d ticks, want 3×%v", tc.in, s.acc.reward, s.acc.rewardTicks, tc.want.Total)
		}
	}
	// Weights are configurable.
	s.teg.Reward = RewardWeights{Success: 1, WaitSLA: 200}
	s.tickJudged, s.tickMet, s.tq.n = 4, 1, 0
	s.reward(1)
	if got := s.LastReward().Total; got != 0.25 {
		t.Errorf("success-only reward %v, want 0.25", got)
	}
	s.tq.n = 0
}

// TestRewardInSimulation follows a one-machine run tick by tick. m0 (4
// cores: idle 64 W, peak 78 W) hosts one 8 GiB job at a time; jobs use no
// CPU, so the draw stays at 64 W and E = 1 - 64/78 = 7/39.
// j0 (arrives 0, 30 s, deadline 50) runs 10..40; j1 (arrives 0, 10 s,
// deadline 20) runs 40..50, late; j2 (arrives 15, 10 s, deadline 100) runs
// 50..60.
func TestRewardInSimulation(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 4000, 8192, 0, "", 0))
	teg := tegFixed()
	teg.Safety, teg.OveruseShare = false, 0
	j0, j1, j2 := batch(0, 8192, 30), batch(0, 8192, 10), batch(0, 8192, 10)
	j0.Deadline, j1.Deadline, j2.Deadline, j2.Arrival = 50, 20, 100, 15
	s := tegSim(t, c, []Job{j0, j1, j2}, &BestFit{}, teg, 1)
	const e = 1 - 64.0/78
	want := []RewardTerms{
		// t=10: queue {j1}: wait 10, L = 0.95.
		{0.5 + 0.3*e + 0.2*0.95, 1, e, 0.95},
		// t=20: queue {j1, j2}: mean arrival 7.5, wait 12.5, L = 0.9375.
		{0.5 + 0.3*e + 0.2*0.9375, 1, e, 0.9375},
		// t=30: wait 22.5, L = 0.8875.
		{0.5 + 0.3*e + 0.2*0.8875, 1, e, 0.8875},
		// t=40: j0 done on time (S = 1); j1 starts; queue {j2}: wait 25.
		{0.5 + 0.3*e + 0.2*0.875, 1, e, 0.875},
		// t=50: j1 done late (S = 0); j2 starts; queue empty.
		{0.3*e + 0.2, 0, e, 1},
		// t=60: j2 done on time.
		{0.5 + 0.3*e + 0.2, 1, e, 1},
	}
	sum := 0.0
	for k, w := range want {
		s.Step()
		got := s.LastReward()
		if !near(got.Total, w.Total, 1e-12) || got.Success != w.Success || !near(got.Energy, w.Energy, 1e-12) || !near(got.Latency, w.Latency, 1e-12) {
			t.Errorf("t=%v: reward %+v, want %+v", s.now, got, w)
		}
		if s.now != float64(10*(k+1)) {
			t.Fatalf("step %d at t=%v", k, s.now)
		}
		sum += w.Total
	}
	m := s.Metrics()
	if !s.Done() || m.JobsCompleted != 3 || !near(m.RewardMean, sum/6, 1e-12) {
		t.Errorf("done %v, completed %d, reward mean %v; want true, 3, %v", s.Done(), m.JobsCompleted, m.RewardMean, sum/6)
	}
}

// ---------------------------------------------------------------- contention

// TestContentionCPU: two jobs of 2 cores each burst to 1.25× their request
// on a 4-core machine: ρ = 5000/4000 = 1.25, rate = 1/(1 + 0.25) = 0.8.
// j0 (100 s) started at 10 ends at 10 + 100/0.8 = 135, seen at tick 140;
// j1 (200 s) has done 0.8·130 = 104 by then, runs alone at rate 1
// (ρ = 0.625) and ends at 140 + 96 = 236, seen at tick 240.
func TestContentionCPU(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 4000, 8192, 0, "", 0))
	for _, on := range []bool{true, false} {
		teg := tegFixed()
		teg.Contention, teg.Safety, teg.OveruseShare = on, false, 0
		s := tegSim(t, c, []Job{batch(2000, 1024, 100), batch(2000, 1024, 200)}, placeAll(0, -1), teg, 1)
		s.Step()
		for id := range 2 {
			s.addUsage(id, 0, -1)
			s.jobs[id].use.cpu = 1.25
			s.addUsage(id, 0, +1)
		}
		if !near(s.ld.cpuUse[0], 5000, 1e-12) {
			t.Fatalf("cpu use %v, want 5000", s.ld.cpuUse[0])
		}
		s.ld.cpuUse[0] = 5000 // drop float residue of the swap
		s.rerate(0)
		wantRate, wantEnds, wantJCT := 0.8, [2]float64{135, 260}, 190.0 // JCTs 140 and 240
		if !on {
			wantRate, wantEnds, wantJCT = 1, [2]float64{110, 210}, 160 // 110 and 210
		}
		for id := range 2 {
			if r := &s.jobs[id]; !near(r.rate, wantRate, 1e-14) || !near(s.jobRate(id, 0), wantRate, 1e-14) || !near(r.end, wantEnds[id], 1e-12) {
				t.Errorf("contention %v job %d: rate %v, end %v; want %v, %v", on, id, r.rate, r.end, wantRate, wantEnds[id])
			}
		}
		for s.now < 140 {
			s.Step()
		}
		if on {
			// j0 done at 140; j1 sped back up: 96 s of work left.
			if r := &s.jobs[1]; s.jobs[0].state != completed || r.rate != 1 || !near(r.end, 236, 1e-9) {
				t.Errorf("after j0: j0 %v, j1 rate %v end %v; want completed, 1, 236", s.jobs[0].state, r.rate, r.end)
			}
		}
		m := s.Run()
		if m.JobsCompleted != 2 || m.MeanJCTS != wantJCT {
			t.Errorf("contention %v: %d completed, mean JCT %v; want 2, %v", on, m.JobsCompleted, m.MeanJCTS, wantJCT)
		}
	}
}

// TestContentionGPUSharing: n share jobs (100 milli) on one GPU run at
// 1 - 0.1(n-1), floored at 0.5. With 4 sharers a 50 s job started at 10
// ends at 10 + 50/0.7 = 81.43, seen at tick 90.
func TestContentionGPUSharing(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("g", 16000, 65536, 2, "T4", 0))
	for _, tc := range []struct {
		n    int
		want float64
	}{{1, 1}, {2, 0.9}, {4, 0.7}, {6, 0.5}, {8, 0.5}} {
		jobs := make([]Job, tc.n)
		for k := range jobs {
			jobs[k] = shareJob(100, 512, 100)
			jobs[k].Duration = 50
		}
		teg := tegFixed()
		s := tegSim(t, c, jobs, placeAll(0, 1), teg, 1)
		s.Step()
		if got := s.state.Sharers(0); int(got[1]) != tc.n || got[0] != 0 {
			t.Fatalf("n=%d: sharers %v", tc.n, got)
		}
		for id := range jobs {
			if r := &s.jobs[id]; !near(r.rate, tc.want, 1e-15) || !near(s.jobRate(id, 0), tc.want, 1e-15) {
				t.Errorf("n=%d job %d: rate %v, want %v", tc.n, id, r.rate, tc.want)
			}
		}
		m := s.Run()
		// All start at 10; end 10 + 50/rate: 60, 65.6, 81.4, 110, 110 -> ticks 60, 70, 90, 110, 110.
		want := math.Ceil((10+50/tc.want)/10-1e-9) * 10
		if m.MeanJCTS != want {
			t.Errorf("n=%d: JCT %v, want %v", tc.n, m.MeanJCTS, want)
		}
	}
}

// TestContentionGang: on an 8-GPU box (NVLink groups 0-3 and 4-7) a 3-GPU
// gang takes GPUs 0-2; a 2-GPU gang then gets GPUs 3 and 4, spanning both
// groups: rate 0.7, and its energy carries the gang penalty.
func TestContentionGang(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("a", 96000, 1<<20, 8, "A100", 0))
	j3, j2 := wholeJob(8000, 32768, 3), wholeJob(8000, 32768, 2)
	j3.Duration, j2.Duration, j2.Arrival = 50, 50, 10
	teg := tegFixed()
	teg.GangPenalty = 1
	s := tegSim(t, c, []Job{j3, j2}, placeAll(0, -1), teg, 1)
	// Before anything runs, a 2-GPU gang would get GPUs 0 and 1: no split.
	req := s.state.Request(&s.w.Jobs[1])
	if gangSplits(s.state, 0, &req) {
		t.Errorf("empty machine: 2-GPU gang reported split")
	}
	s.Step() // t=10: both placed (j2 arrives at 10)
	if s.jobs[0].alloc.GPUMask != 0b111 || s.jobs[1].alloc.GPUMask != 0b11000 {
		t.Fatalf("masks %b %b, want 111 and 11000", s.jobs[0].alloc.GPUMask, s.jobs[1].alloc.GPUMask)
	}
	if r0, r1 := s.jobs[0].rate, s.jobs[1].rate; r0 != 1 || !near(r1, 0.7, 1e-15) {
		t.Errorf("rates %v %v, want 1 and 0.7", r0, r1)
	}
	// End: 10 + 50/0.7 = 81.43, completion seen at tick 90.
	if !near(s.jobs[1].end, 10+50/0.7, 1e-12) {
		t.Errorf("split gang end %v, want %v", s.jobs[1].end, 10+50/0.7)
	}
	// The penalty term: E with g = 1 minus E with g = 0 is 1 for the split
	// gang in place, 0 for the whole one.
	f := s.visibleField()
	for id, wantX := range []float64{0, 1} {
		j := &s.w.Jobs[id]
		r := s.state.Request(j)
		e1 := s.view.energy(f, j, &r, 0)
		s.teg.GangPenalty = 0
		e0 := s.view.energy(f, j, &r, 0)
		s.teg.GangPenalty = 1
		if !near(e1-e0, wantX, 1e-12) {
			t.Errorf("job %d: penalty term %v, want %v", id, e1-e0, wantX)
		}
	}
	m := s.Run()
	if s.jobs[0].state != completed || s.jobs[1].state != completed || m.MeanJCTS != (60.0+80)/2 {
		t.Errorf("JCTs mean %v, want (60 + 80)/2 (j3 done at 60, j2 arrived at 10 and done at 90)", m.MeanJCTS)
	}
}

// ---------------------------------------------------------------- determinism, actions

func langevinRun(t *testing.T, seed uint64) ([]byte, Metrics) {
	c, err := NewSyntheticCluster(100, seed)
	if err != nil {
		t.Fatal(err)
	}
	wc := DefaultWorkload
	wc.Horizon = 3600
	wc.Load = 1.1
	w, err := NewSyntheticWorkload(c, wc, seed)
	if err != nil {
		t.Fatal(err)
	}
	teg := GovernorTEG("langevin")
	// Mobile enough that the run has moves whatever the tuned defaults.
	teg.NashEvery, teg.Mobility, teg.MigrationCost = 6, 0.05, 0.2
	s, err := NewSim(c, w, &Langevin{}, SimConfig{Seed: seed, Duration: wc.Horizon, MTBF: 86400, TEG: &teg})
	if err != nil {
		t.Fatal(err)
	}
	m := s.Run()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b, m
}

func TestLangevinDeterministic(t *testing.T) {
	a, m := langevinRun(t, 21)
	b, _ := langevinRun(t, 21)
	if string(a) != string(b) {
		t.Errorf("same seed, different metrics:\n%s\n%s", a, b)
	}
	c, _ := langevinRun(t, 22)
	if string(a) == string(c) {
		t.Errorf("seeds 21 and 22 gave identical metrics")
	}
	// The run exercised the governor: moves, damping, Nash samples, tokens.
	if m.Migrations == 0 || m.MeanDamping <= 0 || m.TokenSupply <= 0 || m.JobsCompleted == 0 {
		t.Errorf("governor idle: %+v", m)
	}
}

// svcJob is a replica of service 0 (1 core, 1 GiB, 1000 s).
func svcJob() Job {
	return Job{Kind: Service, QoS: LatencySensitive, CPU: 1000, Mem: 1024, Duration: 1000, Service: 0, Migratable: true}
}

// TestReplicaAdd: an action with ReplicaDelta +2 for a service queues two
// new replicas: submitted 3, added 2, all three eventually complete.
func TestReplicaAdd(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 8000, 16384, 0, "", 0))
	done := false
	sched := &stubSched{func(o *Observation) Action {
		a := Place(0, -1)
		if !done {
			done = true
			a.ReplicaDelta = 2
		}
		return a
	}}
	w := []Job{svcJob()}
	s := tegSim(t, c, w, sched, tegFixed(), 1)
	s.Step() // t=10: j0 placed; replicas 1 and 2 join the queue at 10
	m := s.Metrics()
	if m.ReplicasAdded != 2 || m.JobsSubmitted != 3 || m.JobsRunning+m.JobsQueued != 3 || s.tok.replicas[0] != 3 {
		t.Fatalf("after +2: added %d submitted %d running %d queued %d replicas %d; want 2, 3, 3 in all, 3",
			m.ReplicasAdded, m.JobsSubmitted, m.JobsRunning, m.JobsQueued, s.tok.replicas[0])
	}
	for id := 1; id <= 2; id++ {
		if j := &s.w.Jobs[id]; j.ID != id || j.Service != 0 || j.Arrival != 10 {
			t.Errorf("replica %d: %+v", id, *j)
		}
	}
	s.Step()
	if m := s.Metrics(); m.JobsSubmitted != 3 || m.JobsRunning != 3 || m.JobsQueued != 0 {
		t.Errorf("t=20: submitted %d running %d queued %d; want 3, 3, 0", m.JobsSubmitted, m.JobsRunning, m.JobsQueued)
	}
	for k := 0; k < 1000 && !s.Done(); k++ { // bounded: a corrupt state may never drain
		s.Step()
	}
	m = s.Metrics()
	if !s.Done() || m.JobsCompleted != 3 || m.JobsSubmitted != 3 || s.tok.replicas[0] != 0 {
		t.Errorf("end: completed %d submitted %d replicas %d; want 3, 3, 0", m.JobsCompleted, m.JobsSubmitted, s.tok.replicas[0])
	}
}

// TestReplicaAddKeepsWorkload: replicas added during a run must not leak
// into the caller's Workload, which simulate shares between schedulers.
func TestReplicaAddKeepsWorkload(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 8000, 16384, 0, "", 0))
	a := Place(0, -1)
	a.ReplicaDelta = 1
	w := &Workload{Name: "hand", Jobs: []Job{svcJob()}}
	w.Jobs[0].Name = "svc"
	teg := tegFixed()
	s, err := NewSim(c, w, &stubSched{func(*Observation) Action { return a }}, SimConfig{Seed: 1, MTBF: -1, Duration: 100, TEG: &teg})
	if err != nil {
		t.Fatal(err)
	}
	s.Run()
	if len(w.Jobs) != 1 {
		t.Errorf("caller's workload grew to %d jobs", len(w.Jobs))
	}
}

// TestReplicaRemove: ReplicaDelta -1 removes the youngest other replica:
// a queued one first, else a running one.
func TestReplicaRemove(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 8000, 16384, 0, "", 0))
	for _, n := range []int{3, 2} {
		t.Run(itoa(int64(n))+" queued", func(t *testing.T) {
			// n replicas arrive at 0; the first offer (j0) scales down by one.
			jobs := make([]Job, n)
			for k := range jobs {
				jobs[k] = svcJob()
			}
			first := true
			sched := &stubSched{func(o *Observation) Action {
				a := Place(0, -1)
				if first {
					first = false
					a.ReplicaDelta = -1
				}
				return a
			}}
			s := tegSim(t, c, jobs, sched, tegFixed(), 1)
			s.Step()
			m := s.Metrics()
			victim := n - 1 // youngest queued replica (ties: the last queued)
			if m.ReplicasRemoved != 1 || m.JobsCancelled != 1 || s.jobs[victim].state != cancelled || s.tok.replicas[0] != n-1 {
				t.Errorf("removed %d cancelled %d, victim state %v, replicas %d", m.ReplicasRemoved, m.JobsCancelled, s.jobs[victim].state, s.tok.replicas[0])
			}
			if m.JobsRunning != n-1 || m.JobsQueued != 0 {
				t.Errorf("running %d queued %d, want %d, 0", m.JobsRunning, m.JobsQueued, n-1)
			}
		})
	}
	t.Run("running", func(t *testing.T) {
		// j0, j1 run from 10; j2 arrives at 15 and scales down: the youngest
		// running replica other than j2 (start ties: lowest ID, j0) stops.
		jobs := []Job{svcJob(), svcJob(), svcJob()}
		jobs[2].Arrival = 15
		sched := &stubSched{func(o *Observation) Action {
			a := Place(0, -1)
			if o.Job.ID == 2 {
				a.ReplicaDelta = -1
			}
			return a
		}}
		s := tegSim(t, c, jobs, sched, tegFixed(), 1)
		s.Step()
		s.Step()
		m := s.Metrics()
		if m.ReplicasRemoved != 1 || s.jobs[0].state != cancelled || m.JobsRunning != 2 || s.tok.replicas[0] != 2 {
			t.Errorf("removed %d, j0 %v, running %d, replicas %d; want 1, cancelled, 2, 2", m.ReplicasRemoved, s.jobs[0].state, m.JobsRunning, s.tok.replicas[0])
		}
		if s.state.Jobs(0) != 2 || s.state.M[0].FreeCPU != 6000 {
			t.Errorf("machine holds %d jobs, %d free CPU; want 2, 6000", s.state.Jobs(0), s.state.M[0].FreeCPU)
		}
	})
}

// TestAffinityClamped: the action's affinity weight is clamped to [0, 1].
func TestAffinityClamped(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 8000, 16384, 0, "", 0))
	for _, tc := range []struct{ in, want float32 }{
		{1.7, 1}, {-0.5, 0}, {0.3, 0.3}, {1, 1}, {0, 0}, {float32(math.Inf(1)), 1},
	} {
		a := Place(0, -1)
		a.Affinity = tc.in
		s := tegSim(t, c, []Job{svcJob()}, &stubSched{func(*Observation) Action { return a }}, tegFixed(), 1)
		s.Step()
		if got := s.tok.affinity[0]; got != tc.want {
			t.Errorf("affinity %v: stored %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestAffinityNaN(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 8000, 16384, 0, "", 0))
	a := Place(0, -1)
	a.Affinity = float32(math.NaN())
	s := tegSim(t, c, []Job{svcJob()}, &stubSched{func(*Observation) Action { return a }}, tegFixed(), 1)
	s.Step()
	if got := s.tok.affinity[0]; !(got >= 0 && got <= 1) {
		t.Errorf("affinity NaN stored as %v, want a value in [0, 1]", got)
	}
}

// TestSafetyBigJobPlaceable: a job that fits an empty machine by its
// request must eventually run (or be rejected), safety layer on or off.
// With α = 0.5 the barrier admits a new job only if 0.7·request (start
// bound 0.6 plus 60 s of growth at 1/600 per s) <= α·headroom, so on an
// empty machine any request above 0.5/0.7 = 71.4% of its memory is refused
// for ever: the job is neither placed nor rejected and starves.
func TestSafetyBigJobPlaceable(t *testing.T) {
	c := tegCluster(t, []Rack{{Name: "r0"}}, newMachine("m0", 8000, 16384, 0, "", 0))
	s := tegSim(t, c, []Job{batch(1000, 13107, 100)}, &Kube{}, tegFixed(), 1) // 80% of the memory
	for k := 0; k < 100 && !s.Done(); k++ {
		s.Step()
	}
	if m := s.Metrics(); m.JobsCompleted+m.JobsRejected != 1 {
		t.Errorf("80%%-memory job: completed %d, rejected %d, queued %d; want it run or rejected", m.JobsCompleted, m.JobsRejected, m.JobsQueued)
	}
}
