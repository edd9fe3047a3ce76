package gnn

import (
	"math"
	"reflect"
	"testing"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/nn"
)

// TestEnvDims keeps SyntheticDims (what benchmarks use without env) in step
// with the environment's layout.
func TestEnvDims(t *testing.T) {
	if d := EnvDims(); d != SyntheticDims {
		t.Errorf("env layout %+v, SyntheticDims %+v", d, SyntheticDims)
	}
}

// envSim returns a simulation of a synthetic cluster of n machines under
// the Langevin governor, with machine failures every mtbf seconds on
// average (per machine), and its workload.
func envSim(t testing.TB, n int, seed uint64, mtbf float64) (*env.Sim, *env.Workload) {
	t.Helper()
	c, err := env.NewSyntheticCluster(n, seed)
	if err != nil {
		t.Fatal(err)
	}
	cfg := env.DefaultWorkload
	cfg.Horizon = 3600
	w, err := env.NewSyntheticWorkload(c, cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	teg := env.GovernorTEG("langevin")
	sim, err := env.NewSim(c, w, &env.Langevin{}, env.SimConfig{Seed: seed, Duration: cfg.Horizon, MTBF: mtbf, TEG: &teg})
	if err != nil {
		t.Fatal(err)
	}
	return sim, w
}

// TestBuilderIncremental steps a simulation with machine failures and
// compares, after every tick, the incrementally updated graph with one
// built from scratch; it also checks that the hardware relations were
// built once.
func TestBuilderIncremental(t *testing.T) {
	sim, w := envSim(t, 60, 3, 2*3600)
	var ts env.Tensors
	inc := NewBuilder()
	ticks := 150
	if testing.Short() {
		ticks = 60
	}
	jobCounts := map[int]bool{}
	downSeen := false
	for tick := 0; tick < ticks; tick++ {
		sim.Step()
		var pending *env.Job
		if tick%3 == 0 {
			pending = &w.Jobs[tick%len(w.Jobs)]
		}
		sim.Observe(&ts, pending)
		g, err := inc.Update(&ts)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := Build(&ts)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("tick %d: %v", tick, err)
		}
		if !reflect.DeepEqual(g, fresh) {
			for r := range g.Adj {
				if !reflect.DeepEqual(g.Adj[r], fresh.Adj[r]) {
					t.Errorf("tick %d: relation %s differs from a full build", tick, Relation(r))
				}
			}
			t.Fatalf("tick %d: incremental graph differs from a full build", tick)
		}
		checkAgainstTensors(t, g, &ts)
		jobCounts[g.Nodes[Job]] = true
		for i := 0; i < g.Nodes[Machine]; i++ {
			downSeen = downSeen || g.Feat[Machine][i*env.MachineFeatures] == 0 // column "up"
		}
	}
	m := sim.Metrics()
	t.Logf("%d ticks: %d machine failures, %d distinct job counts, builds per relation %v", ticks, m.MachineFailures, len(jobCounts), inc.Builds)
	if m.MachineFailures == 0 || !downSeen || len(jobCounts) < 5 {
		t.Errorf("%d failures (down machine seen: %v), %d distinct job counts: the run exercises too little", m.MachineFailures, downSeen, len(jobCounts))
	}
	for _, r := range []Relation{Network, PCIe, NVLink, HostsGPU} {
		if inc.Builds[r] != 1 {
			t.Errorf("static relation %s built %d times, want once", r, inc.Builds[r])
		}
	}
	if inc.Builds[RunsOnMachine] < 10 || inc.Builds[HostsJob] != inc.Builds[RunsOnMachine] {
		t.Errorf("runs-on built %d times (reverse %d): want one build per change", inc.Builds[RunsOnMachine], inc.Builds[HostsJob])
	}
}

// checkAgainstTensors checks that every edge of every observed relation is
// in the graph, in both directions for the reversed ones.
func checkAgainstTensors(t *testing.T, g *Graph, ts *env.Tensors) {
	t.Helper()
	for er, r := range envRelation {
		e := &ts.Edges[er]
		count := map[[2]int32]int{}
		for k := range e.Src {
			count[[2]int32{e.Src[k], e.Dst[k]}]++
		}
		adj := &g.Adj[r]
		if adj.Len() != e.Len() {
			t.Fatalf("relation %s: %d edges, observation has %d", r, adj.Len(), e.Len())
		}
		for k := range adj.Src {
			count[[2]int32{int32(adj.Src[k]), int32(adj.Dst[k])}]--
		}
		for pair, c := range count {
			if c != 0 {
				t.Fatalf("relation %s: edge %v appears %d more times in the observation than in the graph", r, pair, c)
			}
		}
	}
}

func TestBuilderRejects(t *testing.T) {
	sim, _ := envSim(t, 8, 1, -1)
	var ts env.Tensors
	sim.Observe(&ts, nil)
	if _, err := Build(&ts); err != nil {
		t.Fatal(err)
	}
	ts.Edges[env.RelNetwork].Src[0] = int32(ts.Machines)
	if _, err := Build(&ts); err == nil {
		t.Error("out-of-range edge accepted")
	}
	ts.Machine = ts.Machine[:3]
	if _, err := Build(&ts); err == nil {
		t.Error("short machine matrix accepted")
	}
}

// TestEncoderOnEnv runs the default encoder on observations of the
// synthetic cluster.
func TestEncoderOnEnv(t *testing.T) {
	sim, w := envSim(t, 120, 2, -1)
	for range 60 {
		sim.Step()
	}
	checkEncoderOn(t, sim, w)
}

// TestEncoderOnAlibaba runs the default encoder on an observation of the
// real 1,523-machine Alibaba GPU cluster under the synthetic workload.
func TestEncoderOnAlibaba(t *testing.T) {
	c, err := env.LoadAlibabaGPUNodes("alibaba-gpu") // the bundled copy
	if err != nil {
		t.Fatal(err)
	}
	cfg := env.DefaultWorkload
	cfg.Horizon = 1800
	w, err := env.NewSyntheticWorkload(c, cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := env.NewSim(c, w, &env.Langevin{}, env.SimConfig{Seed: 3, Duration: cfg.Horizon})
	if err != nil {
		t.Fatal(err)
	}
	for range 60 {
		sim.Step()
	}
	checkEncoderOn(t, sim, w)
}

// checkEncoderOn observes sim (the pending job is one from the middle of
// w), builds the graph and runs the default encoder: every node gets a
// finite 64-wide embedding, and the cluster is busy.
func checkEncoderOn(t *testing.T, sim *env.Sim, w *env.Workload) {
	t.Helper()
	var ts env.Tensors
	sim.Observe(&ts, &w.Jobs[len(w.Jobs)/2])
	g, err := Build(&ts)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := NewEncoder[float32](DefaultEncoderConfig(EnvDims()), 1)
	if err != nil {
		t.Fatal(err)
	}
	var sg Graph
	NewSampler(DefaultFanout, 1).Sample(g, &sg)
	b := NewBatch[float32](&sg)
	if err := enc.Check(b); err != nil {
		t.Fatal(err)
	}
	emb := enc.Forward(nn.NewTape[float32](), b)
	for ty, x := range emb.Node {
		if x.Shape[0] != g.Nodes[ty] || x.Shape[1] != 64 {
			t.Errorf("%s embeddings %v, want [%d 64]", NodeType(ty), x.Shape, g.Nodes[ty])
		}
		for _, v := range x.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%s embedding not finite", NodeType(ty))
			}
		}
	}
	if g.Nodes[Job] < 10 {
		t.Errorf("%d jobs: the cluster is idle", g.Nodes[Job])
	}
}
