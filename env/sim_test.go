package env

import (
	"encoding/json"
	"math"
	"testing"
)

func smallSim(t *testing.T, sched string, seed uint64) *Sim {
	t.Helper()
	c, err := NewSyntheticCluster(120, seed)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultWorkload
	cfg.Horizon = 2 * 3600
	w, err := NewSyntheticWorkload(c, cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewScheduler(sched)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := NewSim(c, w, s, SimConfig{Seed: seed, Duration: cfg.Horizon, MTBF: 2 * 86400})
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

// TestSimDeterministic: same seed and config, byte-identical JSON metrics,
// for every scheduler; a different seed gives a different run.
func TestSimDeterministic(t *testing.T) {
	for _, name := range SchedulerNames {
		a, _ := json.Marshal(smallSim(t, name, 7).Run())
		b, _ := json.Marshal(smallSim(t, name, 7).Run())
		if string(a) != string(b) {
			t.Errorf("%s: same seed, different metrics:\n%s\n%s", name, a, b)
		}
		c, _ := json.Marshal(smallSim(t, name, 8).Run())
		if string(a) == string(c) {
			t.Errorf("%s: seeds 7 and 8 gave identical metrics", name)
		}
	}
}

// TestSimConservation checks invariants while stepping: resources in use
// equal the sum of running allocations, nothing exceeds capacity, and every
// submitted job is accounted for exactly once.
func TestSimConservation(t *testing.T) {
	for _, name := range []string{"fgd", "random", "p2c"} {
		sim := smallSim(t, name, 3)
		for !sim.Done() {
			sim.Step()
			st := sim.State()
			var cpu, mem, gpu int64
			for id := range sim.jobs {
				r := &sim.jobs[id]
				if r.state != running {
					continue
				}
				cpu += r.alloc.CPU
				mem += r.alloc.Mem
				n := int64(0)
				for m := r.alloc.GPUMask; m != 0; m &= m - 1 {
					n++
				}
				gpu += n * int64(r.alloc.Milli)
				if !st.M[r.alloc.Machine].Up {
					t.Fatalf("%s: job %d runs on down machine %d", name, id, r.alloc.Machine)
				}
			}
			if cpu != st.UsedCPU || mem != st.UsedMem || gpu != st.UsedGPU {
				t.Fatalf("%s t=%v: used (%d,%d,%d), running sum (%d,%d,%d)", name, sim.Now(), st.UsedCPU, st.UsedMem, st.UsedGPU, cpu, mem, gpu)
			}
			for i := range st.M {
				if st.M[i].FreeCPU < 0 || st.M[i].FreeMem < 0 || st.M[i].IdleGPU < 0 {
					t.Fatalf("%s: machine %d over-committed", name, i)
				}
			}
		}
		m := sim.Metrics()
		if got := m.JobsCompleted + m.JobsFailed + m.JobsRunning + m.JobsQueued; got != m.JobsSubmitted {
			t.Errorf("%s: completed+failed+running+queued = %d, submitted %d", name, got, m.JobsSubmitted)
		}
		if m.JobsCompleted == 0 || m.UtilCPU <= 0 || m.EnergyKWh <= 0 || m.MachineFailures == 0 {
			t.Errorf("%s: implausible metrics %+v", name, m)
		}
	}
}

// TestSimHandBuilt runs a two-machine cluster with three jobs whose
// schedule can be worked out by hand.
func TestSimHandBuilt(t *testing.T) {
	c := &Cluster{
		Machines: []Machine{
			newMachine("a", 4000, 8192, 0, "", 0),
			newMachine("b", 2000, 8192, 0, "", 0),
		},
		Racks:  []Rack{{Name: "r", Leaf: 0}},
		Leaves: []Leaf{{Name: "l"}},
		Zones:  []Zone{{Name: "z"}},
	}
	c.finish()
	w := &Workload{Name: "hand", Jobs: []Job{
		{ID: 0, Name: "j0", Arrival: 0, Duration: 100, CPU: 3000, Mem: 1024, Service: -1, Deadline: 1000},
		{ID: 1, Name: "j1", Arrival: 5, Duration: 50, CPU: 3000, Mem: 1024, Service: -1, Deadline: 60},
		{ID: 2, Name: "j2", Arrival: 5, Duration: 10, CPU: 5000, Mem: 1024, Service: -1},
	}}
	sim, err := NewSim(c, w, &BestFit{}, SimConfig{Seed: 1, Tick: 10, MTBF: -1})
	if err != nil {
		t.Fatal(err)
	}
	m := sim.Run()
	// j0 arrives at 0, is seen at tick t=10 and starts on a (only a has
	// 3000m): ends at 110. j1 is queued at t=10 (a is full, b too small)
	// and starts at 110, ends at 160. j2 never fits any machine: rejected.
	// JCTs: 110 and 155; waits 10 and 105; j1 misses its 60 s deadline.
	want := Metrics{
		Scheduler: "bestfit", Seed: 1, Workload: "hand", Machines: 2,
		SimTimeS: 160, Ticks: 16, JobsSubmitted: 3, JobsCompleted: 2, JobsFailed: 1, JobsRejected: 1,
		MeanJCTS: 132.5, P95JCTS: 155, MeanSlowdown: (110.0/100 + 155.0/50) / 2,
		MeanWaitS: 57.5, P95WaitS: 105,
		SLAViolationRate: 2.0 / 3, // j1 late, j2 rejected; j0 on time
	}
	got := m
	// Utilisation, queue, energy, tokens, reward: check separately.
	got.UtilCPU, got.UtilMem, got.MeanQueueLen, got.EnergyKWh = 0, 0, 0, 0
	got.TokenSupply, got.TokenSupplyBound = 0, 0
	got.RewardMean, got.RewardSuccess, got.RewardEnergy, got.RewardLatency = 0, 0, 0, 0
	if got != want {
		t.Errorf("metrics\n got %+v\nwant %+v", got, want)
	}
	// CPU busy 3000m from 10 to 160 on 6000m capacity over 160 s.
	if wantCPU := 3000.0 * 150 / 6000 / 160; math.Abs(m.UtilCPU-wantCPU) > 1e-12 {
		t.Errorf("util cpu %v, want %v", m.UtilCPU, wantCPU)
	}
	// Queue: j1 waits from t=10 to t=110 (the queue is integrated per tick
	// before arrivals, so it counts ticks 20..110: 10 ticks of 10 s).
	if wantQ := 100.0 / 160; math.Abs(m.MeanQueueLen-wantQ) > 1e-12 {
		t.Errorf("mean queue %v, want %v", m.MeanQueueLen, wantQ)
	}
}

func TestSimConfigErrors(t *testing.T) {
	c, _ := NewSyntheticCluster(10, 1)
	w := &Workload{}
	for _, cfg := range []SimConfig{{Tick: -1}, {Tick: math.NaN()}, {Duration: -5}, {MTBF: 10, MTTR: -1}, {ScanLimit: -1}} {
		if _, err := NewSim(c, w, &Random{}, cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	bad := &Workload{Jobs: []Job{{Arrival: 10}, {Arrival: 5}}}
	if _, err := NewSim(c, bad, &Random{}, SimConfig{}); err == nil {
		t.Error("unsorted workload accepted")
	}
}

// TestSkippedTicksJudgeNothing: ticks skipped while the cluster idles carry
// no SLA judgements. One job misses its deadline at t=20 (S = 0 in that
// tick), the next arrives at t=1000; every other tick, skipped or not, has
// S = 1, so the mean success term is exactly 100/101 over 101 ticks.
func TestSkippedTicksJudgeNothing(t *testing.T) {
	c := &Cluster{
		Machines: []Machine{newMachine("a", 8000, 8192, 0, "", 0)},
		Racks:    []Rack{{Name: "r", Leaf: 0}},
		Leaves:   []Leaf{{Name: "l"}},
		Zones:    []Zone{{Name: "z"}},
	}
	c.finish()
	w := &Workload{Name: "gap", Jobs: []Job{
		{ID: 0, Name: "late", Arrival: 0, Duration: 10, CPU: 1000, Mem: 1024, Service: -1, Deadline: 1},
		{ID: 1, Name: "ok", Arrival: 1000, Duration: 10, CPU: 1000, Mem: 1024, Service: -1, Deadline: 1000},
	}}
	sim, err := NewSim(c, w, &BestFit{}, SimConfig{Seed: 1, Tick: 10, MTBF: -1})
	if err != nil {
		t.Fatal(err)
	}
	m := sim.Run()
	if m.Ticks != 101 || m.JobsCompleted != 2 {
		t.Fatalf("ticks %d, completed %d; want 101 and 2", m.Ticks, m.JobsCompleted)
	}
	if want := 100.0 / 101; math.Abs(m.RewardSuccess-want) > 1e-12 {
		t.Errorf("mean success term %v, want %v", m.RewardSuccess, want)
	}
}
