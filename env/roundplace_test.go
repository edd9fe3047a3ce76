package env

import (
	"slices"
	"strings"
	"testing"
)

// placeSim is a round simulator on one GPU type of three servers with 4, 4
// and 2 GPUs (workers 0-3, 4-7, 8-9), racks of serversPerRack servers.
func placeSim(t *testing.T, placement string, serversPerRack int) *RoundSim {
	t.Helper()
	tab := tinyTab(t)
	cl, err := NewGPUCluster(tab, map[string]int{"v100": 10}, 1)
	if err != nil {
		t.Fatal(err)
	}
	cl.ServersPerRack = serversPerRack
	s, err := NewRoundSim(cl, halfEach{}, &sliceJobs{}, RoundConfig{Placement: placement})
	if err != nil {
		t.Fatal(err)
	}
	s.layoutServers([][]int{{4, 4, 2}})
	return s
}

// TestGangPlacers places gangs on the 4+4+2 cluster with worker 0 busy
// (free GPUs 3, 4 and 2) and checks each placer's GPUs by hand. With D the
// typical gang size, fgd's stranded count is F(f) = f for f < D, else 0.
//
//   - 1 GPU, D = 2: gavel takes the first free worker, 1; bestfit the
//     server with the fewest free GPUs, server 2 (worker 8); kube the
//     most, server 1 (worker 4); fgd's increases are F(2)-F(3) = 0,
//     F(3)-F(4) = 0 and F(1)-F(2) = 1: servers 0 and 1 tie, the one with
//     fewer free GPUs is server 0 (worker 1).
//   - 2 GPUs, D = 4: gavel 1, 2; bestfit server 2 (8, 9); kube server 1
//     (4, 5); fgd F(1)-F(3) = -2, F(2)-F(4) = 2, F(0)-F(2) = -2: servers 0
//     and 2 tie, server 2 has fewer free GPUs (8, 9).
//   - 5 GPUs, D = 4, racks {0, 1} and {2}: no server holds 5. gavel takes
//     worker order, 1-3 then 4-5; bestfit stays in rack 0 (7 free) and
//     takes the most free first, server 1 whole and 1 of server 0; kube
//     the same by free counts; fgd stays in rack 0, empties server 0 (the
//     fewest free) and takes 2 of server 1 (the only one left).
//   - 5 GPUs, D = 4, one rack: bestfit and kube as above; fgd empties
//     server 2 (2 free) and then server 0 (3 free, exactly the 3 left):
//     workers 1-3, 8-9, no GPU stranded.
//   - 3 GPUs on one server: gavel the first that holds it, server 0;
//     bestfit server 0 (3 free); kube server 1 (4); fgd D = 4:
//     F(0)-F(3) = -3 against F(1)-F(4) = 1, server 0.
//   - 5 GPUs on one server, or 10 GPUs: no placement.
func TestGangPlacers(t *testing.T) {
	type gang struct {
		gpus, typical, racks int
		one                  bool
	}
	cases := []struct {
		g    gang
		want map[string][]int // nil: no placement
	}{
		{gang{1, 2, 2, false}, map[string][]int{"gavel": {1}, "bestfit": {8}, "kube": {4}, "fgd": {1}}},
		{gang{2, 4, 2, false}, map[string][]int{"gavel": {1, 2}, "bestfit": {8, 9}, "kube": {4, 5}, "fgd": {8, 9}}},
		{gang{5, 4, 2, false}, map[string][]int{"gavel": {1, 2, 3, 4, 5}, "bestfit": {1, 4, 5, 6, 7}, "kube": {1, 4, 5, 6, 7}, "fgd": {1, 2, 3, 4, 5}}},
		{gang{5, 4, 0, false}, map[string][]int{"gavel": {1, 2, 3, 4, 5}, "bestfit": {1, 4, 5, 6, 7}, "kube": {1, 4, 5, 6, 7}, "fgd": {1, 2, 3, 8, 9}}},
		{gang{3, 4, 2, true}, map[string][]int{"gavel": {1, 2, 3}, "bestfit": {1, 2, 3}, "kube": {4, 5, 6}, "fgd": {1, 2, 3}}},
		{gang{5, 4, 2, true}, map[string][]int{}},
		{gang{10, 4, 2, false}, map[string][]int{}},
	}
	for _, name := range GangPlacerNames() {
		for _, serversPerRack := range []int{2, 0} {
			s := placeSim(t, name, serversPerRack)
			for _, c := range cases {
				if c.g.racks != serversPerRack {
					continue
				}
				s.rounds++
				s.resetPlacement()
				s.typical = c.g.typical
				s.takeWorker(0, 0)
				e := &entry{wk: make([]int, c.g.gpus)}
				ok := s.placeGang(e, 0, c.g.gpus, c.g.one)
				want, placed := c.want[name]
				got := slices.Sorted(slices.Values(e.wk))
				if ok != placed || (ok && !slices.Equal(got, want)) {
					t.Errorf("%s %+v: placed %v on %v, want %v", name, c.g, ok, got, want)
				}
				// The free counts follow what was taken.
				wantFree := []int{3, 4, 2}
				if ok {
					for _, w := range e.wk {
						wantFree[s.workerSrv[w]]--
					}
				}
				if !slices.Equal(s.srvFree[0], wantFree) {
					t.Errorf("%s %+v: free %v, want %v", name, c.g, s.srvFree[0], wantFree)
				}
			}
		}
	}
}

// TestTypicalGang: the typical gang size is the most common among the
// active jobs, the smaller on ties.
func TestTypicalGang(t *testing.T) {
	s := placeSim(t, "fgd", 0)
	for _, c := range []struct {
		scales []int
		want   int
	}{{nil, 1}, {[]int{4}, 4}, {[]int{1, 2, 2, 4, 4}, 2}, {[]int{8, 4, 8}, 8}} {
		s.jobs, s.active = s.jobs[:0], s.active[:0]
		for i, sc := range c.scales {
			s.jobs = append(s.jobs, rjob{DLJob: DLJob{Scale: sc}})
			s.active = append(s.active, i)
		}
		s.resetPlacement()
		if s.typical != c.want {
			t.Errorf("scales %v: typical %d, want %d", c.scales, s.typical, c.want)
		}
	}
}

// TestGangPlaceNoAlloc: a round's placement (free counts reset, gangs of
// 2 and 5 GPUs placed) allocates nothing once the buffers have grown.
func TestGangPlaceNoAlloc(t *testing.T) {
	for _, name := range GangPlacerNames() {
		s := placeSim(t, name, 2)
		e2, e5 := &entry{wk: make([]int, 2)}, &entry{wk: make([]int, 5)}
		allocs := testing.AllocsPerRun(100, func() {
			s.rounds++
			s.resetPlacement()
			if !s.placeGang(e2, 0, 2, false) || !s.placeGang(e5, 0, 5, false) {
				t.Fatalf("%s: no placement", name)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per round", name, allocs)
		}
	}
}

func TestPlacementConfig(t *testing.T) {
	c := RoundConfig{Placement: "tetris"}
	err := c.fill()
	if err == nil || !strings.Contains(err.Error(), `unknown gang placement "tetris" (known: gavel, bestfit, kube, fgd)`) {
		t.Errorf("error %v", err)
	}
	for _, n := range append(GangPlacerNames(), "") {
		c := RoundConfig{Placement: n}
		if err := c.fill(); err != nil {
			t.Errorf("%q: %v", n, err)
		}
		p, err := GangPlacerByName(n)
		if err != nil || (n != "" && p.Name() != n) || (n == "" && p.Name() != DefaultGangPlacer) {
			t.Errorf("%q: placer %v, %v", n, p, err)
		}
	}
}

// consTable has a placement-sensitive job type S (4 GPUs: 8 steps/s on one
// server, 2 spread, below half) and insensitive ones I (2 GPUs: 6 and 5)
// and F (6 GPUs: 10 and 10).
const consTable = `{"v100": {"('F', 6)": {"null": 10}, "('S', 4)": {"null": 8}, "('I', 2)": {"null": 6}},
 "v100_unconsolidated": {"('F', 6)": {"null": 10}, "('S', 4)": {"null": 2}, "('I', 2)": {"null": 5}}}`

// TestTiresiasConsolidation runs Tiresias with bestfit placement on two
// servers of 8 V100s (allocation recomputed whenever a job arrived or
// finished). At 0 s, F-jobs A (7200 steps) and B (36000 steps) arrive and
// take 6 GPUs of server 0 and of server 1 (bestfit: A the first of two
// empty servers, B the one that still holds it). At 10 s S (5760 steps,
// 4 GPUs) and I (4680 steps, 2 GPUs) arrive; from 360 s Tiresias
// allocates A, B and S (16 GPUs), none to I.
//
// With Locality S is consolidated: the 4 free GPUs are 2 on each server,
// so S waits and I, behind it, takes the 2 left of server 0 (bestfit)
// and runs at 6 steps/s. A ends at 720 s (2 rounds at 10/s); server 0
// then has 6 free GPUs and S runs there at 8 steps/s, 2 rounds: JCT 1440
// - 10 = 1430 s. I ran 2160 steps in each of rounds 1-2, 360 in 60 s of
// round 3: 1140 - 10 = 1130 s. B runs every round, 10 rounds: 3600 s.
//
// Without Locality nothing is consolidated (and spread gangs run at their
// consolidated throughput): S runs from 360 s spread over 2+2 GPUs at
// 8 steps/s and ends at 1080 s (JCT 1070); I is allocated once A ended,
// runs from 720 s on server 0 and ends 60 s into round 4 (1440-1500 s):
// JCT 1490.
func TestTiresiasConsolidation(t *testing.T) {
	tab, err := LoadThroughputTable(strings.NewReader(consTable))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := NewGPUCluster(tab, map[string]int{"v100": 16}, 8)
	if err != nil {
		t.Fatal(err)
	}
	f, sm, im := tab.Model("F"), tab.Model("S"), tab.Model("I")
	jobs := []DLJob{
		{Model: f, Scale: 6, Steps: 7200}, {Model: f, Scale: 6, Steps: 36000},
		{Model: sm, Scale: 4, Steps: 5760, Arrival: 10}, {Model: im, Scale: 2, Steps: 4680, Arrival: 10},
	}
	pol, err := AllocationPolicyByName("tiresias")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := pol.(ConsolidatingPolicy); !ok || !c.MustConsolidate(8, 2) || c.MustConsolidate(6, 5) || c.MustConsolidate(10, 5) {
		t.Fatal("tiresias: consolidation rule is not spread < 0.5 x consolidated")
	}
	for _, c := range []struct {
		locality bool
		want     []float64
	}{{true, []float64{720, 3600, 1430, 1130}}, {false, []float64{720, 3600, 1070, 1490}}} {
		pol, _ := AllocationPolicyByName("tiresias")
		res := runJobs(t, cl, pol, RoundConfig{Locality: c.locality, Placement: "bestfit", AllocationInterval: 1}, jobs...)
		if !slices.Equal(res.JCT, c.want) {
			t.Errorf("locality %v: JCTs %v, want %v", c.locality, res.JCT, c.want)
		}
	}
}

// BenchmarkGangPlace places gangs of 1, 2, 4, 8 and 12 GPUs (the last
// spread) on 64 servers of 8 GPUs with 0-8 free in four racks.
func BenchmarkGangPlace(b *testing.B) {
	const servers = 64
	free, rack := make([]int, servers), make([]int, servers)
	var out []PlaceTake
	for k := range free {
		free[k], rack[k] = k*5%9, k/16
	}
	sizes := []int{1, 2, 4, 8, 12}
	for _, name := range GangPlacerNames() {
		b.Run("placer="+name, func(b *testing.B) {
			p, _ := GangPlacerByName(name)
			r := PlaceRequest{Typical: 4, Free: free, Rack: rack, Racks: 4}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r.GPUs = sizes[i%len(sizes)]
				var ok bool
				if out, ok = p.Place(&r, out[:0]); !ok {
					b.Fatalf("no placement of %d", r.GPUs)
				}
			}
		})
	}
}
