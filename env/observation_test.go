package env

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

var updateObsDoc = flag.Bool("update-obs-doc", false, "rewrite the generated tables of docs/observation.md")

// obsHandCluster: rack 0 holds a 4-GPU A100 machine (NVLink groups
// {0,1} and {2,3}; GPUs alternate NUMA sockets) and a CPU machine; rack 1,
// under the same leaf, one CPU machine behind a 20 Gbit/s uplink.
func obsHandCluster(t testing.TB) *Cluster {
	t.Helper()
	gpu := newMachine("gpu", 32000, 131072, 4, "A100", 0)
	gpu.GPUGroup = []uint8{0, 0, 1, 1}
	gpu.GPUNUMA = []uint8{0, 1, 0, 1}
	c := &Cluster{
		Machines: []Machine{gpu, newMachine("cpu-a", 16000, 65536, 0, "", 0), newMachine("cpu-b", 16000, 65536, 0, "", 1)},
		Racks: []Rack{
			{Name: "r0", Leaf: 0, UplinkGbps: 100, PowerBudgetW: 5000},
			{Name: "r1", Leaf: 0, UplinkGbps: 20, PowerBudgetW: 3000},
		},
		Leaves: []Leaf{{Name: "l0", Zone: 0, UplinkGbps: 400}},
		Zones:  []Zone{{Name: "z0"}},
		Net:    DefaultNetwork,
	}
	c.finish()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// obsFixed places job ID k on machine node[k].
type obsFixed struct{ node map[int]int }

func (*obsFixed) Name() string { return "fixed" }

func (p *obsFixed) Decide(o *Observation, _ *rand.Rand) Action {
	return Place(p.node[o.Job.ID], -1)
}

// obsHandSim runs the hand-built cluster: a 2-GPU training gang (GPUs 0
// and 1) and a half-GPU share job (best fit: GPU 2) on the GPU machine, a
// batch job and one 500m job per tick from t = 10 on cpu-a, a service
// replica on cpu-b. The field is recomputed every tick with no staleness,
// so the visible field is the current one.
func obsHandSim(t testing.TB) *Sim {
	t.Helper()
	c := obsHandCluster(t)
	jobs := []Job{
		{Name: "train", Kind: Training, QoS: Guaranteed, Duration: 2000, CPU: 8000, Mem: 16384, GPUs: 2, GPUMilli: 1000, Deadline: 4000, Service: -1, Tenant: 1, NetGbps: 2},
		{Name: "share", Kind: Batch, QoS: BestEffort, Duration: 1000, CPU: 2000, Mem: 4096, GPUs: 1, GPUMilli: 500, Service: -1, Tenant: 2, Migratable: true, NetGbps: 0.1},
		{Name: "batch", Kind: Batch, QoS: Burstable, Duration: 1500, CPU: 4000, Mem: 8192, Service: -1, Tenant: 2, NetGbps: 0.2},
		{Name: "svc", Kind: Service, QoS: LatencySensitive, Duration: 5000, CPU: 2000, Mem: 2048, Service: 0, LatencySLO: 60, Tenant: 3, NetGbps: 0.5},
	}
	node := map[int]int{0: 0, 1: 0, 2: 1, 3: 2}
	for k := 1; k <= 20; k++ {
		node[len(jobs)] = 1
		jobs = append(jobs, Job{Name: fmt.Sprintf("small%d", k), Arrival: float64(10 * k), Duration: 1e4, CPU: 500, Mem: 512, Service: -1, Tenant: 2})
	}
	for i := range jobs {
		jobs[i].ID = i
	}
	teg := DefaultTEG
	teg.FieldEvery, teg.Staleness = 1, 0
	sim, err := NewSim(c, &Workload{Name: "obs", Jobs: jobs}, &obsFixed{node}, SimConfig{Seed: 1, Tick: 10, MTBF: -1, TEG: &teg})
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

func obsNear(got float32, want float64) bool {
	return math.Abs(float64(got)-want) <= 1e-6*max(1, math.Abs(want))
}

func checkRow(t *testing.T, what string, row []float32, cols []Column, want map[int]float64) {
	t.Helper()
	for k, v := range want {
		if !obsNear(row[k], v) {
			t.Errorf("%s %s = %v, want %v", what, cols[k].Name, row[k], v)
		}
	}
}

func TestObserveHandBuilt(t *testing.T) {
	sim := obsHandSim(t)
	var ts Tensors
	sim.Observe(&ts, nil) // starts the history
	for range 3 {
		sim.Step()
	}
	if sim.Now() != 30 || sim.nrunning != 7 {
		t.Fatalf("t = %v, %d running; want 30 s, 7 running", sim.Now(), sim.nrunning)
	}
	// A what-if request for one whole GPU from tenant 1, arriving now.
	pending := &Job{ID: 1000, Name: "what-if", Kind: Batch, QoS: BestEffort, Arrival: 30, Duration: 600, CPU: 1000, Mem: 1024, GPUs: 1, GPUMilli: 1000, Service: -1, Tenant: 1}
	sim.Observe(&ts, pending)
	if ts.Machines != 3 || ts.GPUs != 4 || ts.Jobs != 8 || ts.PendingRow != 0 {
		t.Fatalf("sizes %d/%d/%d, pending row %d", ts.Machines, ts.GPUs, ts.Jobs, ts.PendingRow)
	}
	f := sim.visibleField()
	if f.Tick != 3 {
		t.Fatalf("visible field of tick %d, want 3 (no staleness)", f.Tick)
	}
	mcols := machineColumns[:]
	mrow := func(i int) []float32 { return ts.Machine[i*MachineFeatures : (i+1)*MachineFeatures] }
	cpuUse := func(i int) float64 {
		u := 0.0
		for _, id := range sim.onMach[i] {
			u += sim.jobs[id].use.cpu * float64(sim.w.Jobs[id].CPU)
		}
		return u
	}
	memUse := func(i int) float64 {
		u := 0.0
		for _, id := range sim.onMach[i] {
			u += sim.jobs[id].use.frac(30) * float64(sim.w.Jobs[id].Mem)
		}
		return u
	}
	st := sim.State()
	// Rack 0 carries 2 + 0.1 + 0.2 + 3·0 Gbit/s over 100; rack 1 0.5 over 20.
	checkRow(t, "gpu machine", mrow(0), mcols, map[int]float64{
		mUp: 1, mCPUCap: 0.5, mMemCap: 0.5, mGPUCap: 0.5, mRackUplink: 1,
		mCPUAlloc: 10000.0 / 32000, mMemAlloc: 20480.0 / 131072, mGPUAlloc: 2500.0 / 4000, mGPUFullFree: 1.0 / 8,
		mCPUUse: cpuUse(0) / 32000, mMemUse: memUse(0) / 131072, mPower: sim.ld.power[0] / sim.c.Machines[0].PeakW,
		mMemBarrier: sim.memHeadroom(0) / 131072, mFrag: st.MachineFrag(0) / 4000, mJobs: 2.0 / 16,
		mPotential: math.Log1p(float64(f.V[0])), mRackCongestion: 2.3 / 100, mRackPower: sim.ld.rackPower[0] / 5000,
	})
	checkRow(t, "cpu-a", mrow(1), mcols, map[int]float64{
		mUp: 1, mCPUCap: 0.25, mMemCap: 0.25, mGPUCap: 0, mRackUplink: 1,
		mCPUAlloc: 5500.0 / 16000, mMemAlloc: (8192 + 3*512) / 65536.0, mGPUAlloc: 0, mGPUFullFree: 0,
		mCPUUse: cpuUse(1) / 16000, mMemUse: memUse(1) / 65536, mFrag: 0, mJobs: 4.0 / 16,
		mPotential: math.Log1p(float64(f.V[1])), mRackCongestion: 2.3 / 100,
	})
	checkRow(t, "cpu-b", mrow(2), mcols, map[int]float64{
		mRackUplink: 0.2, mCPUAlloc: 2000.0 / 16000, mJobs: 1.0 / 16, mRackCongestion: 0.5 / 20, mRackPower: sim.ld.rackPower[1] / 3000,
	})
	// The cold list holds every machine that is up in a 3-machine cluster.
	for i := range 3 {
		if mrow(i)[mCold] != 1 {
			t.Errorf("machine %d not cold", i)
		}
	}

	// GPUs: the gang holds 0 and 1, the share job half of 2, 3 is idle.
	gcols := gpuColumns[:]
	a100 := gModel + slices.Index(gpuModelVocab[:], "A100")
	for g, want := range []map[int]float64{
		{gFree: 0, gIdle: 0, gSharers: 1.0 / 8, gMachineUp: 1, gGroup: 0, gNUMA: 0, a100: 1, gModelOther: 0},
		{gFree: 0, gIdle: 0, gSharers: 1.0 / 8, gGroup: 0, gNUMA: 1, a100: 1},
		{gFree: 0.5, gIdle: 0, gSharers: 1.0 / 8, gGroup: 1, gNUMA: 0, a100: 1},
		{gFree: 1, gIdle: 1, gSharers: 0, gGroup: 1, gNUMA: 1, a100: 1},
	} {
		checkRow(t, fmt.Sprintf("gpu %d", g), ts.GPU[g*GPUFeatures:(g+1)*GPUFeatures], gcols, want)
	}

	// Job rows: the pending job, then gpu's jobs, cpu-a's, cpu-b's.
	if want := []int32{1000, 0, 1, 2, 4, 5, 6, 3}; !slices.Equal(ts.JobID, want) {
		t.Errorf("job IDs %v, want %v", ts.JobID, want)
	}
	jcols := jobColumns[:]
	prio := func(tenant int) float64 {
		k := sim.tok.tenants[tenant]
		return math.Exp2(-sim.tok.bal[k] / sim.tok.share())
	}
	lt := func(s float64) float64 { return math.Log1p(s/60) / 8 }
	checkRow(t, "pending", ts.Job[:JobFeatures], jcols, map[int]float64{
		jCPU: 1000.0 / 64000, jMem: 1024.0 / 262144, jGPU: 1000.0 / 8000, jGPUs: 1.0 / 8, jGPUMilli: 1, jShare: 0,
		jKindBatch: 1, jKindTraining: 0, jQoSBE: 1, jRunning: 0, jWorkLeft: lt(600), jRate: 0, jAge: 0, jPhaseTime: 0,
		jHasDeadline: 0, jPriority: prio(1), jCPUUse: 0, jMemUse: 0,
	})
	if !slices.Equal(ts.Pending, ts.Job[:JobFeatures]) {
		t.Error("Pending differs from job row 0")
	}
	train := &sim.jobs[0]
	checkRow(t, "train", ts.Job[JobFeatures:2*JobFeatures], jcols, map[int]float64{
		jCPU: 0.125, jMem: 0.0625, jGPU: 0.25, jGPUs: 0.25, jGPUMilli: 1, jShare: 0,
		jKindBatch: 0, jKindTraining: 1, jKindService: 0, jQoSGuaranteed: 1, jQoSBE: 0,
		jRunning: 1, jMigrating: 0, jWorkLeft: lt(1980), jRate: 1, jAge: lt(30), jPhaseTime: lt(20),
		jHasDeadline: 1, jDeadlineSlack: (4000 - 30) / 4000.0, jPriority: prio(1), jMigratable: 0, jReplica: 0,
		jNet: 0.2, jRestarts: 0, jCPUUse: train.use.cpu, jMemUse: train.use.frac(30), jModelConstrained: 0,
	})
	checkRow(t, "share", ts.Job[2*JobFeatures:3*JobFeatures], jcols, map[int]float64{
		jGPU: 500.0 / 8000, jGPUs: 1.0 / 8, jGPUMilli: 0.5, jShare: 1, jKindBatch: 1, jQoSBE: 1, jMigratable: 1, jPriority: prio(2),
	})
	checkRow(t, "svc", ts.Job[7*JobFeatures:8*JobFeatures], jcols, map[int]float64{
		jKindService: 1, jQoSLS: 1, jReplica: 1, jNet: 0.05, jPriority: prio(3), jWorkLeft: lt(4980),
	})

	// Static edges.
	wantNet := Edges{
		Src: []int32{0, 0, 1, 2}, Dst: []int32{1, 2, 0, 0},
		// Same rack: the 25G NIC and 5 µs; across racks: the 20G uplink
		// of rack 1 and 15 µs through the leaf.
		Feat: []float32{0.25, 0.05, 1, 0.2, 0.15, 0, 0.25, 0.05, 1, 0.2, 0.15, 0},
	}
	checkEdges(t, RelNetwork, &ts.Edges[RelNetwork], &wantNet)
	checkEdges(t, RelPCIe, &ts.Edges[RelPCIe], &Edges{
		Src: []int32{0, 1, 2, 3}, Dst: []int32{0, 0, 0, 0}, Feat: []float32{0, 1, 0, 1},
	})
	checkEdges(t, RelNVLink, &ts.Edges[RelNVLink], &Edges{
		Src: []int32{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3},
		Dst: []int32{1, 2, 3, 0, 2, 3, 0, 1, 3, 0, 1, 2},
		// (same NVLink group, same NUMA socket)
		Feat: []float32{1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0},
	})
	// Runs-on: rows 1..7 on their machines; the gang on GPUs 0 and 1, the
	// share job on GPU 2.
	checkEdges(t, RelRunsOnMachine, &ts.Edges[RelRunsOnMachine], &Edges{
		Src: []int32{1, 2, 3, 4, 5, 6, 7}, Dst: []int32{0, 0, 1, 1, 1, 1, 2},
		Feat: []float32{
			0.25, 0.125, 0.5,
			2000.0 / 32000, 4096.0 / 131072, 0.125,
			0.25, 0.125, 0,
			500.0 / 16000, 512.0 / 65536, 0,
			500.0 / 16000, 512.0 / 65536, 0,
			500.0 / 16000, 512.0 / 65536, 0,
			2000.0 / 16000, 2048.0 / 65536, 0,
		},
	})
	checkEdges(t, RelRunsOnGPU, &ts.Edges[RelRunsOnGPU], &Edges{
		Src: []int32{1, 1, 2}, Dst: []int32{0, 1, 2}, Feat: []float32{1, 1, 0.5},
	})

	// Mask: only the GPU machine has a whole GPU free.
	if want := []bool{true, false, false}; !slices.Equal(ts.Mask, want) {
		t.Errorf("mask %v, want %v", ts.Mask, want)
	}
	cs := sim.ctl.stats()
	r := sim.LastReward()
	checkRow(t, "global", ts.Global, globalColumns[:], map[int]float64{
		oDamping: 0, oDampingTarget: cs.Target / 10, oDampingOverridden: 0, oTemperature: 1,
		oPhi: cs.Phi, oPhiMean: cs.Mean, oPhiVar: cs.Var, oChi: cs.Chi, oPhiLag1: cs.Lag1,
		oQueue: 0, oQueuePerMachine: 0, oRunningPerMachine: 7.0 / 3 / 16,
		oTokenSupply: sim.tok.supply() / sim.tok.SupplyBound(),
		oUtilCPU:     17500.0 / 64000, oUtilMem: float64(16384+4096+8192+3*512+2048) / (131072 + 2*65536), oUtilGPU: 0.625,
		oUpCPU: 1, oUpGPU: 1, oPower: sim.power / sim.peak, oGPUFrag: st.MachineFrag(0) / 4000,
		oTimeSin: math.Sin(2 * math.Pi * 30 / 86400), oTimeCos: math.Cos(2 * math.Pi * 30 / 86400), oSimTime: 30.0 / 86400,
		oReward: r.Total, oRewardSuccess: r.Success, oRewardEnergy: r.Energy, oRewardLatency: r.Latency,
		oFieldAge: 0, oHistoryValid: 3.0 / 12, oPending: 1, oFeasible: 1.0 / 3,
	})
	if ts.Global[oTokenSupply] <= 0 {
		t.Error("token supply not positive after 30 s of running jobs")
	}

	// History: three ticks recorded, right-aligned; cpu-a gained a 500m
	// job at each of them.
	hist := func(i, k int) []float32 {
		return ts.History[(i*HistoryLen+k)*HistoryChannels : (i*HistoryLen+k+1)*HistoryChannels]
	}
	for k := range HistoryLen - 3 {
		if slices.ContainsFunc(hist(1, k), func(v float32) bool { return v != 0 }) {
			t.Errorf("history step %d not zero: %v", k, hist(1, k))
		}
	}
	for k, want := range []float64{4500.0 / 16000, 5000.0 / 16000, 5500.0 / 16000} {
		if got := hist(1, HistoryLen-3+k)[hCPUAlloc]; !obsNear(got, want) {
			t.Errorf("cpu-a history step %d cpu_alloc %v, want %v", HistoryLen-3+k, got, want)
		}
	}
	if got := hist(0, HistoryLen-1)[hGPUAlloc]; !obsNear(got, 0.625) {
		t.Errorf("gpu machine newest gpu_alloc %v, want 0.625", got)
	}

	// Other requests: a CPU job fits everywhere, three whole GPUs nowhere;
	// without a pending job the mask is empty.
	cpuJob := &Job{ID: -1, CPU: 1000, Mem: 1024, Service: -1}
	sim.Observe(&ts, cpuJob)
	if want := []bool{true, true, true}; !slices.Equal(ts.Mask, want) {
		t.Errorf("cpu mask %v, want %v", ts.Mask, want)
	}
	sim.Observe(&ts, &Job{ID: -1, CPU: 1000, Mem: 1024, GPUs: 3, GPUMilli: 1000, Service: -1})
	if slices.Contains(ts.Mask, true) || ts.Global[oFeasible] != 0 {
		t.Errorf("3-GPU mask %v, feasible %v", ts.Mask, ts.Global[oFeasible])
	}
	sim.Observe(&ts, nil)
	if ts.Jobs != 7 || ts.PendingRow != -1 || slices.Contains(ts.Mask, true) || ts.Global[oPending] != 0 || ts.JobID[0] != 0 {
		t.Errorf("no pending: %d jobs, row %d, mask %v, ids %v", ts.Jobs, ts.PendingRow, ts.Mask, ts.JobID)
	}
	if slices.ContainsFunc(ts.Pending, func(v float32) bool { return v != 0 }) {
		t.Error("Pending not zero without a pending job")
	}
}

func checkEdges(t *testing.T, r Relation, got, want *Edges) {
	t.Helper()
	if !slices.Equal(got.Src, want.Src) || !slices.Equal(got.Dst, want.Dst) {
		t.Errorf("%v edges %v→%v, want %v→%v", r, got.Src, got.Dst, want.Src, want.Dst)
		return
	}
	if len(got.Feat) != len(want.Feat) || len(got.Feat) != got.Len()*EdgeFeatures(r) {
		t.Errorf("%v: %d feature values, want %d", r, len(got.Feat), len(want.Feat))
		return
	}
	for k := range got.Feat {
		if !obsNear(got.Feat[k], float64(want.Feat[k])) {
			t.Errorf("%v edge %d feature %s = %v, want %v", r, k/EdgeFeatures(r), edgeColumns[r][k%EdgeFeatures(r)].Name, got.Feat[k], want.Feat[k])
		}
	}
}

// obsFrame computes one tick's history frame from the state, the way a
// reader of the definitions would.
func obsFrame(s *Sim) []float64 {
	var out []float64
	for i := range s.c.Machines {
		m := &s.c.Machines[i]
		st := s.state
		g := 0.0
		if m.GPUs > 0 {
			g = 1 - float64(st.M[i].IdleGPU)/float64(m.GPUs*MilliGPU)
		}
		out = append(out, 1-float64(st.M[i].FreeCPU)/float64(m.CPU), 1-float64(st.M[i].FreeMem)/float64(m.Mem), g,
			s.ld.cpuUse[i]/float64(m.CPU), s.memUsage(i)/float64(m.Mem), s.ld.power[i]/m.PeakW)
	}
	return out
}

func checkHistory(t *testing.T, ts *Tensors, frames [][]float64) {
	t.Helper()
	n := ts.Machines
	pad := HistoryLen - len(frames)
	for i := range n {
		for k := range HistoryLen {
			for c := range HistoryChannels {
				got := ts.History[(i*HistoryLen+k)*HistoryChannels+c]
				want := 0.0
				if k >= pad {
					want = frames[k-pad][i*HistoryChannels+c]
				}
				if !obsNear(got, want) {
					t.Fatalf("machine %d step %d %s = %v, want %v", i, k, historyColumns[c].Name, got, want)
				}
			}
		}
	}
}

// TestObserveHistoryRing steps past the ring's length and checks that the
// history holds the last HistoryLen ticks, oldest first.
func TestObserveHistoryRing(t *testing.T) {
	sim := obsHandSim(t)
	var frames [][]float64
	var ts Tensors
	sim.Observe(&ts, nil)
	for tick := 1; tick <= 2*HistoryLen+3; tick++ {
		sim.Step()
		frames = append(frames, obsFrame(sim))
		if len(frames) > HistoryLen {
			frames = frames[1:]
		}
		sim.Observe(&ts, nil)
		checkHistory(t, &ts, frames)
		if want := float32(len(frames)) / HistoryLen; ts.Global[oHistoryValid] != want {
			t.Fatalf("tick %d: history_valid %v, want %v", tick, ts.Global[oHistoryValid], want)
		}
	}
}

// TestObserveHistoryOff: a simulation nobody observes records nothing;
// its first observation has an empty history.
func TestObserveHistoryOff(t *testing.T) {
	sim := obsHandSim(t)
	for range 5 {
		sim.Step()
	}
	if sim.hist.buf != nil {
		t.Fatal("history recorded before the first Observe")
	}
	var ts Tensors
	sim.Observe(&ts, nil)
	if ts.Global[oHistoryValid] != 0 || slices.ContainsFunc(ts.History, func(v float32) bool { return v != 0 }) {
		t.Error("first observation has a history")
	}
	sim.Step()
	sim.Observe(&ts, nil)
	if ts.Global[oHistoryValid] != 1.0/HistoryLen {
		t.Errorf("history_valid %v after one observed tick", ts.Global[oHistoryValid])
	}
}

// TestObserveHistorySkip: ticks the loop skips while nothing but time
// changes repeat the newest frame, so the ring stays one frame per tick.
func TestObserveHistorySkip(t *testing.T) {
	c := obsHandCluster(t)
	w := &Workload{Jobs: []Job{
		{ID: 0, Duration: 400, CPU: 4000, Mem: 4096, Service: -1},
		{ID: 1, Arrival: 200, Duration: 50, CPU: 2000, Mem: 2048, Service: -1},
	}}
	sim, err := NewSim(c, w, &obsFixed{map[int]int{0: 1, 1: 2}}, SimConfig{Seed: 1, Tick: 10, MTBF: -1})
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]float64
	var ts Tensors
	sim.Observe(&ts, nil)
	skipped := 0
	for !sim.Done() {
		before := sim.ticks
		last := frames
		sim.Step()
		for k := before + 1; k < sim.ticks; k++ {
			skipped++
			// A skipped tick holds the state of the one before it.
			frames = append(frames, last[len(last)-1])
		}
		frames = append(frames, obsFrame(sim))
		if len(frames) > HistoryLen {
			frames = frames[len(frames)-HistoryLen:]
		}
		sim.Observe(&ts, nil)
		// Memory in use grows over skipped ticks; the ring holds it at
		// the last recorded value, as obsFrame's copies do.
		checkHistory(t, &ts, frames)
	}
	if skipped == 0 {
		t.Fatal("the loop never skipped idle ticks; the test exercises nothing")
	}
}

// obsBytes serialises every exported part of t, for byte comparisons.
func obsBytes(t *Tensors) []byte {
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	w([]int64{int64(t.Machines), int64(t.GPUs), int64(t.Jobs), int64(t.PendingRow)})
	w(t.Machine)
	w(t.GPU)
	w(t.Job[:t.Jobs*JobFeatures])
	w(t.JobID[:t.Jobs])
	w(t.Pending)
	w(t.Mask)
	w(t.Global)
	w(t.History)
	for r := range t.Edges {
		e := &t.Edges[r]
		w(int64(e.Len()))
		w(e.Src)
		w(e.Dst)
		w(e.Feat)
	}
	return b.Bytes()
}

func obsSynthSim(t testing.TB, c *Cluster, seed uint64, sched Scheduler, mtbf float64) *Sim {
	t.Helper()
	cfg := DefaultWorkload
	cfg.Horizon = 3600
	w, err := NewSyntheticWorkload(c, cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	teg := GovernorTEG("langevin")
	sim, err := NewSim(c, w, sched, SimConfig{Seed: seed, Duration: cfg.Horizon, MTBF: mtbf, TEG: &teg})
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

func obsSynthCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := NewSyntheticCluster(n, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestObserveDeterministic(t *testing.T) {
	run := func(seed uint64) []byte {
		sim := obsSynthSim(t, obsSynthCluster(t, 120), seed, &Langevin{}, 86400)
		for range 60 {
			sim.Step()
		}
		var ts Tensors
		sim.Observe(&ts, &sim.w.Jobs[len(sim.w.Jobs)/2])
		return obsBytes(&ts)
	}
	a, b := run(5), run(5)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different observation bytes")
	}
	if bytes.Equal(a, run(6)) {
		t.Error("seeds 5 and 6 gave identical observations")
	}
}

// obsChecker wraps a scheduler and, at every decision, checks that the
// incremental refresh of one long-lived Tensors equals a refresh from
// scratch.
type obsChecker struct {
	Scheduler
	t      *testing.T
	inc    Tensors
	checks int
}

func (c *obsChecker) Decide(o *Observation, rng *rand.Rand) Action {
	var fresh Tensors
	if !o.FillTensors(&c.inc) || !o.FillTensors(&fresh) {
		c.t.Fatal("FillTensors outside a simulation")
	}
	if !bytes.Equal(obsBytes(&c.inc), obsBytes(&fresh)) {
		c.t.Fatalf("t=%v: incremental refresh differs from a full one", o.Time)
	}
	c.checks++
	return c.Scheduler.Decide(o, rng)
}

// TestObserveIncremental runs the Langevin governor with moves and machine
// failures, comparing incremental and full refreshes at every decision and
// after every tick.
func TestObserveIncremental(t *testing.T) {
	chk := &obsChecker{Scheduler: &Langevin{}, t: t}
	sim := obsSynthSim(t, obsSynthCluster(t, 60), 3, chk, 4*3600)
	// Hot and mobile, so that jobs move often.
	sim.teg.Mobility, sim.teg.Gamma0, sim.teg.MigrationCost = 0.05, 1, 0
	ticks := 200
	if testing.Short() {
		ticks = 100
	}
	for range ticks {
		sim.Step()
		var fresh Tensors
		sim.Observe(&chk.inc, nil)
		sim.Observe(&fresh, nil)
		if !bytes.Equal(obsBytes(&chk.inc), obsBytes(&fresh)) {
			t.Fatalf("t=%v: incremental refresh after the tick differs from a full one", sim.Now())
		}
	}
	if m := sim.Metrics(); chk.checks < 50 || m.Migrations == 0 || m.MachineFailures == 0 {
		t.Errorf("%d checks, %d migrations, %d failures: the run exercises too little", chk.checks, m.Migrations, m.MachineFailures)
	}
	var o Observation
	if o.FillTensors(&chk.inc) {
		t.Error("FillTensors without a simulation reported true")
	}
}

func TestObserveZeroAlloc(t *testing.T) {
	c := obsSynthCluster(t, 120)
	a := obsSynthSim(t, c, 1, &P2C{}, -1)
	b := obsSynthSim(t, c, 1, &P2C{}, -1)
	for range 100 {
		a.Step()
	}
	for range 99 {
		b.Step()
	}
	pending := &a.w.Jobs[len(a.w.Jobs)-1]
	var ts Tensors
	a.Observe(&ts, pending)
	b.Observe(&ts, pending)
	if n := testing.AllocsPerRun(20, func() { a.Observe(&ts, pending) }); n != 0 {
		t.Errorf("incremental refresh: %v allocs, want 0", n)
	}
	// Alternating between two simulations of the same cluster forces full
	// refreshes of everything but the static parts.
	if n := testing.AllocsPerRun(20, func() { a.Observe(&ts, pending); b.Observe(&ts, nil) }); n != 0 {
		t.Errorf("full refresh: %v allocs, want 0", n)
	}
}

// TestObserveNetworkBounds: racks larger than the clique bound become
// circulant graphs, rails reach at most obsMaxRailPeers racks, and every
// network edge has its reverse.
func TestObserveNetworkBounds(t *testing.T) {
	c := &Cluster{Leaves: []Leaf{{Name: "l", UplinkGbps: 400}}, Zones: []Zone{{Name: "z"}}, Net: DefaultNetwork}
	sizes := []int{30, 3, 1, 2, 1, 1, 3, 1, 1, 1, 2, 1}
	for r, k := range sizes {
		c.Racks = append(c.Racks, Rack{Name: fmt.Sprint("r", r), UplinkGbps: 100})
		for range k {
			c.Machines = append(c.Machines, newMachine(fmt.Sprint("m", len(c.Machines)), 8000, 8192, 0, "", r))
		}
	}
	c.finish()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	var ts Tensors
	ts.rebuild(&Sim{c: c})
	e := &ts.Edges[RelNetwork]
	type pair struct{ a, b int32 }
	set := map[pair]bool{}
	inRack := make([]int, len(c.Machines))
	rails := make([]int, len(c.Machines))
	for k := range e.Src {
		a, b := e.Src[k], e.Dst[k]
		if a == b || set[pair{a, b}] {
			t.Fatalf("self or duplicate edge %d→%d", a, b)
		}
		set[pair{a, b}] = true
		if k > 0 && (e.Src[k-1] > a || e.Src[k-1] == a && e.Dst[k-1] >= b) {
			t.Fatalf("edges not sorted at %d", k)
		}
		if c.Machines[a].Rack == c.Machines[b].Rack {
			inRack[a]++
		} else {
			rails[a]++
		}
	}
	for p := range set {
		if !set[pair{p.b, p.a}] {
			t.Errorf("edge %d→%d has no reverse", p.a, p.b)
		}
	}
	for i, m := range c.Machines {
		if want := min(sizes[m.Rack]-1, obsMaxRackPeers); inRack[i] != want {
			t.Errorf("machine %d: %d rack peers, want %d", i, inRack[i], want)
		}
	}
	// Machine 0 (position 0 of rack 0) reaches position 0 of the 4 racks
	// on either side of rack 0 in leaf order: racks 1-4 and 8-11.
	if rails[0] != obsMaxRailPeers {
		t.Errorf("machine 0: %d rails, want %d", rails[0], obsMaxRailPeers)
	}
	if slices.Max(rails) > obsMaxRailPeers {
		t.Errorf("a machine has %d rails, bound %d", slices.Max(rails), obsMaxRailPeers)
	}
}

// TestObservationSchemaComplete: every column named, names unique within a
// block, widths as declared.
func TestObservationSchemaComplete(t *testing.T) {
	width := map[string]int{"machine": MachineFeatures, "gpu": GPUFeatures, "job": JobFeatures, "global": GlobalFeatures, "history": HistoryChannels}
	for r := Relation(0); r < NumRelations; r++ {
		width["edge."+r.String()] = EdgeFeatures(r)
	}
	for _, b := range ObservationSchema() {
		seen := map[string]bool{}
		for k, c := range b.Columns {
			if c.Name == "" || c.Unit == "" || c.Norm == "" {
				t.Errorf("%s column %d incomplete: %+v", b.Name, k, c)
			}
			if seen[c.Name] {
				t.Errorf("%s: duplicate column %s", b.Name, c.Name)
			}
			seen[c.Name] = true
			if ColumnIndex(b.Name, c.Name) != k {
				t.Errorf("ColumnIndex(%s, %s) = %d, want %d", b.Name, c.Name, ColumnIndex(b.Name, c.Name), k)
			}
		}
		if w, ok := width[b.Name]; ok && w != len(b.Columns) {
			t.Errorf("%s: %d columns, width %d", b.Name, len(b.Columns), w)
		}
	}
	if ColumnIndex("machine", "nope") != -1 || ColumnIndex("nope", "up") != -1 {
		t.Error("ColumnIndex found a missing column")
	}
}

// obsSchemaGolden is the schema hash of the current layout. It must change
// only with the layout: update it (and docs/observation.md) on purpose,
// knowing that policies and datasets of the old layout will be refused.
const obsSchemaGolden = "17f50fa9b0c55072a1b1e982910f3653bf5edc44646c93f9cfe94a1e91c389f7"

func TestObservationSchemaHash(t *testing.T) {
	h := ObservationSchemaHash()
	if h != obsSchemaGolden {
		t.Errorf("schema hash %s, golden %s: the layout changed", h, obsSchemaGolden)
	}
	if h != schemaHash(ObservationSchema()) {
		t.Error("hash of ObservationSchema() differs from ObservationSchemaHash()")
	}
	// Any change of names, order or shapes changes the hash.
	for name, change := range map[string]func([]Block){
		"rename":     func(b []Block) { b[0].Columns[0].Name = "alive" },
		"swap":       func(b []Block) { c := b[2].Columns; c[0], c[1] = c[1], c[0] },
		"norm":       func(b []Block) { b[0].Columns[1].Norm = "x/32000" },
		"shape":      func(b []Block) { b[6].Shape = strings.Replace(b[6].Shape, "12", "16", 1) },
		"drop":       func(b []Block) { b[5].Columns = b[5].Columns[:len(b[5].Columns)-1] },
		"add column": func(b []Block) { b[1].Columns = append(b[1].Columns, Column{"x", "y", "z"}) },
		"reorder":    func(b []Block) { b[0], b[1] = b[1], b[0] },
	} {
		b := ObservationSchema()
		change(b)
		if schemaHash(b) == h {
			t.Errorf("%s: hash unchanged", name)
		}
	}
}

// obsSchemaMarkdown renders the generated part of docs/observation.md.
func obsSchemaMarkdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Schema hash (SHA-256 of the canonical layout): `%s`\n", ObservationSchemaHash())
	for _, b := range observationBlocks {
		fmt.Fprintf(&sb, "\n### %s\n\nShape: %s\n", b.Name, b.Shape)
		if len(b.Columns) == 0 {
			continue
		}
		sb.WriteString("\n| # | name | unit | normalisation |\n|---|---|---|---|\n")
		for k, c := range b.Columns {
			fmt.Fprintf(&sb, "| %d | `%s` | %s | %s |\n", k, c.Name, c.Unit, strings.ReplaceAll(c.Norm, "|", "\\|"))
		}
	}
	return sb.String()
}

// TestObservationDoc checks that docs/observation.md carries the current
// tables and hash (go test -run TestObservationDoc -update-obs-doc
// rewrites them).
func TestObservationDoc(t *testing.T) {
	const path = "../docs/observation.md"
	const begin, end = "<!-- schema:begin -->\n", "<!-- schema:end -->"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q section", path, begin, end)
	}
	want := obsSchemaMarkdown()
	if got := s[i+len(begin) : j]; got != want {
		if *updateObsDoc {
			if err := os.WriteFile(path, []byte(s[:i+len(begin)]+want+s[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s: generated tables out of date; run go test ./env -run TestObservationDoc -update-obs-doc", path)
	}
}

func obsWarmSim(b *testing.B, n int) *Sim {
	b.Helper()
	c, err := NewSyntheticCluster(n, 1)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultWorkload
	cfg.Horizon, cfg.Load = 2*3600, 0.7
	w, err := NewSyntheticWorkload(c, cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	sim, err := NewSim(c, w, &Langevin{}, SimConfig{Seed: 1, Duration: cfg.Horizon})
	if err != nil {
		b.Fatal(err)
	}
	sim.Observe(new(Tensors), nil) // records the load history from the start
	for sim.Now() < 3600 {
		sim.Step()
	}
	return sim
}

// BenchmarkObserve measures a full refresh of the observation (every
// machine, GPU, running job, the history copy, the mask and the edges of
// running jobs) on a cluster warmed up for an hour at 70% load: the cost
// of the first observation of a tick.
func BenchmarkObserve(b *testing.B) {
	for _, n := range []int{1523, 10000} {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			sim := obsWarmSim(b, n)
			pending := &sim.w.Jobs[len(sim.w.Jobs)/2]
			var ts Tensors
			sim.Observe(&ts, pending)
			sim.Observe(&ts, pending) // sizes the second job buffer
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ts.fresh, ts.histOK = false, false
				sim.Observe(&ts, pending)
			}
			b.ReportMetric(float64(ts.Jobs), "jobs")
		})
	}
}

// BenchmarkObserveDecision measures the refresh between two decisions of
// one tick: one machine changed (a placement), the rest is reused; the
// job rows, runs-on edges and the mask are rewritten.
func BenchmarkObserveDecision(b *testing.B) {
	for _, n := range []int{1523, 10000} {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			sim := obsWarmSim(b, n)
			pending := &sim.w.Jobs[len(sim.w.Jobs)/2]
			var ts Tensors
			sim.Observe(&ts, pending)
			sim.Observe(&ts, pending)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				sim.state.M[i%n].Ver++
				sim.Observe(&ts, pending)
			}
		})
	}
}

// BenchmarkRecordHistory measures appending one frame of every machine's
// load to the history ring (once per tick while a policy observes).
func BenchmarkRecordHistory(b *testing.B) {
	for _, n := range []int{1523, 100000} {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			sim := obsWarmSim(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				sim.ticks++
				sim.recordHistory()
			}
		})
	}
}
