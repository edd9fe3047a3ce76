package env

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// sliceJobs yields fixed jobs, then none (an arrival at +Inf).
type sliceJobs struct {
	jobs []DLJob
	i    int
}

func (s *sliceJobs) Next() DLJob {
	if s.i >= len(s.jobs) {
		return DLJob{ID: s.i, Arrival: math.Inf(1), Scale: 1}
	}
	j := s.jobs[s.i]
	j.ID = s.i
	s.i++
	return j
}

// halfEach gives every job half of type 0.
type halfEach struct{}

func (halfEach) Name() string { return "half" }
func (halfEach) Allocate(s *RoundState, x []float64) error {
	for i := range s.Jobs {
		x[i*len(s.Types)] = 0.5
	}
	return nil
}

func tinyTab(t *testing.T) *ThroughputTable {
	t.Helper()
	tab, err := LoadThroughputTable(strings.NewReader(tinyTable))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func runJobs(t *testing.T, c *GPUCluster, pol AllocationPolicy, cfg RoundConfig, jobs ...DLJob) RoundResult {
	t.Helper()
	cfg.MeasureFrom, cfg.MeasureTo = 0, len(jobs)
	sim, err := NewRoundSim(c, pol, &sliceJobs{jobs: jobs}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run()
	if err != nil {
		t.Fatal(err)
	}
	if res.Saturated {
		t.Fatalf("run stopped at the bound: %+v", res)
	}
	return res
}

// TestGangProgress checks a 2-GPU gang of 7200 steps by hand: consolidated
// on one server at 10 steps/s it takes two full rounds (3600 steps each),
// 720 s; spread over two servers of one rack at the table's 4 steps/s, five
// rounds of 1440 steps, 1800 s; across racks at 4 × 0.8 = 3.2 steps/s, six
// rounds of 1152 steps and 288 steps at 3.2/s (90 s), 2250 s.
func TestGangProgress(t *testing.T) {
	tab := tinyTab(t)
	m := tab.Model("M")
	job := DLJob{Model: m, Scale: 2, Steps: 7200}
	for _, c := range []struct {
		name          string
		perServer     int
		serversPerRck int
		want          float64
	}{
		{"consolidated", 2, 0, 720}, {"spread", 1, 0, 1800}, {"cross-rack", 1, 1, 2250},
	} {
		cl, err := NewGPUCluster(tab, map[string]int{"v100": 2}, c.perServer)
		if err != nil {
			t.Fatal(err)
		}
		cl.ServersPerRack = c.serversPerRck
		res := runJobs(t, cl, &FIFO{Perf: true}, RoundConfig{Locality: true}, job)
		if math.Abs(res.JCT[0]-c.want) > 1e-9*c.want {
			t.Errorf("%s: JCT %v s, want %v", c.name, res.JCT[0], c.want)
		}
	}
	// Without Locality (Gavel's simulator) a spread gang runs consolidated.
	cl, _ := NewGPUCluster(tab, map[string]int{"v100": 2}, 1)
	if res := runJobs(t, cl, &FIFO{Perf: true}, RoundConfig{}, job); res.JCT[0] != 720 {
		t.Errorf("no locality: JCT %v, want 720", res.JCT[0])
	}
}

// TestPreemptionRestore time-shares one GPU between two jobs of 36000 steps
// at 10 steps/s (x = 0.5 each): the mechanism alternates them round by
// round. Without a restore cost, A runs in rounds 0, 2, ..., 18 (3600
// steps each) and ends at 6840 s, B in rounds 1, ..., 19, at 7200 s. With a
// 60 s restore on every resumption, A gets 3600 steps in round 0 and 3000
// in each later round: ten of them (rounds 2-20) leave 2400 steps, done in
// round 22 after 60 + 240 s, at 7920 + 300 = 8220 s; B likewise finishes its
// 2400 last steps in round 23, which starts at 8220 s, at 8520 s.
func TestPreemptionRestore(t *testing.T) {
	tab := tinyTab(t)
	cl, err := NewGPUCluster(tab, map[string]int{"v100": 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	a := DLJob{Model: tab.Model("M"), Scale: 1, Steps: 36000}
	for _, c := range []struct {
		restore float64
		want    [2]float64
	}{{0, [2]float64{6840, 7200}}, {60, [2]float64{8220, 8520}}} {
		res := runJobs(t, cl, halfEach{}, RoundConfig{RestoreSeconds: c.restore}, a, a)
		if res.JCT[0] != c.want[0] || res.JCT[1] != c.want[1] {
			t.Errorf("restore %v s: JCTs %v, want %v", c.restore, res.JCT, c.want)
		}
	}
}

// TestMidRoundCompletion: a job of 100 steps at 10/s finishes 10 s into its
// round; its GPU stays idle until the round ends (the next job, arrived at
// 5 s, starts at 10 s: the round ended when its only job did).
func TestMidRoundCompletion(t *testing.T) {
	tab := tinyTab(t)
	cl, _ := NewGPUCluster(tab, map[string]int{"v100": 1}, 1)
	m := tab.Model("M")
	res := runJobs(t, cl, &FIFO{Perf: true}, RoundConfig{},
		DLJob{Model: m, Scale: 1, Steps: 100}, DLJob{Model: m, Scale: 1, Steps: 100, Arrival: 5})
	// Job 1 arrives during round 0 and waits for the allocation: it is
	// recomputed at 10 s (the last allocation was at time 0) and job 1 runs
	// 10-20 s.
	if res.JCT[0] != 10 || res.JCT[1] != 15 {
		t.Fatalf("JCTs %v, want [10 15]", res.JCT)
	}
}

// pinned allocates job 1 to type 0 (k80 in tinyTable) and every other
// job to type 1 (v100), whole, with the scored policies' hints.
type pinned struct{ upgrade bool }

func (pinned) Name() string { return "pinned" }
func (pinned) Allocate(s *RoundState, x []float64) error {
	for i, j := range s.Jobs {
		t := 1
		if j.ID == 1 {
			t = 0
		}
		x[i*len(s.Types)+t] = 1
	}
	return nil
}
func (p pinned) RoundHints() RoundHints {
	return RoundHints{SkipUnallocated: true, Upgrade: p.upgrade}
}

// TestUpgrade: job 0 (3600 steps) is allocated the V100 (10 steps/s) and
// job 1 (36000 steps) the K80 (2 steps/s). Job 0 ends with round 0 at
// 360 s; job 1 has done 720 steps. The allocation stays, so without
// Upgrade job 1 stays on the K80 and ends at 18000 s. With it, job 1 also
// takes the idle V100, faster for it, from the next round on: 35280 steps
// at 10/s, done at 360 + 3528 = 3888 s. Job 0 never moves to the slower
// K80.
func TestUpgrade(t *testing.T) {
	tab := tinyTab(t)
	cl, err := NewGPUCluster(tab, map[string]int{"v100": 1, "k80": 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if cl.Types[0] != 0 || tab.GPUs[0] != "k80" {
		t.Fatalf("types %v of %v: want k80 first", cl.Types, tab.GPUs)
	}
	m := tab.Model("M")
	for _, c := range []struct {
		upgrade bool
		want    []float64
	}{{false, []float64{360, 18000}}, {true, []float64{360, 3888}}} {
		res := runJobs(t, cl, pinned{c.upgrade}, RoundConfig{}, DLJob{Model: m, Scale: 1, Steps: 3600}, DLJob{Model: m, Scale: 1, Steps: 36000})
		if len(res.JCT) != 2 || res.JCT[0] != c.want[0] || math.Abs(res.JCT[1]-c.want[1]) > 1e-9*c.want[1] {
			t.Errorf("upgrade %v: JCTs %v, want %v", c.upgrade, res.JCT, c.want)
		}
	}
	p := &ScoredPolicy{Weights: DefaultScoredWeights()}
	if h := p.RoundHints(); !h.SkipUnallocated || h.Upgrade {
		t.Errorf("scored hints %+v", h)
	}
	p.Upgrade = true
	if h := (&PackedScoredPolicy{ScoredPolicy: *p}).RoundHints(); !h.SkipUnallocated || !h.Upgrade {
		t.Errorf("packed scored hints with Upgrade %+v", h)
	}
}

// TestGangsWhole is a property test: over random multi-GPU workloads,
// policies and gang placers, after every round's placement each running
// gang holds exactly its scale factor of distinct GPUs, all of one type,
// no GPU is held twice, a job runs in at most one gang, and a gang the
// policy consolidates (the placement-sensitive jobs of Tiresias and of a
// scored policy with Consolidate) is on one server.
func TestGangsWhole(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ParseGPUClusterSpec("8:8:8", tab, 4)
	if err != nil {
		t.Fatal(err)
	}
	cl.ServersPerRack = 2
	seeds, consolidated := 4, 0
	if testing.Short() {
		seeds = 1
	}
	for _, placement := range GangPlacerNames() {
		for _, name := range []string{"fifo", "fifo_perf", "max_min_fairness", "gandiva", "tiresias", "srtf_oracle", "scored", "scored_packed_upgrade"} {
			name := name + "/" + placement
			for seed := range uint64(seeds) {
				pol, _ := AllocationPolicyByName(strings.TrimSuffix(name, "/"+placement))
				switch {
				case strings.HasPrefix(name, "scored/"):
					pol = &ScoredPolicy{Weights: DefaultScoredWeights(), Exchange: true, Consolidate: true}
				case strings.HasPrefix(name, "scored_packed_upgrade/"):
					pol = &PackedScoredPolicy{ScoredPolicy: ScoredPolicy{Weights: DefaultScoredWeights(), Exchange: true, Consolidate: true, Upgrade: true}}
				}
				gen, err := NewGavelGenerator(tab, GavelWorkloadConfig{Rate: 0.5, Multi: true, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				sim, err := NewRoundSim(cl, pol, gen, RoundConfig{Seed: seed, Locality: true, RestoreSeconds: 30, MeasureFrom: 0, MeasureTo: 60, MaxActive: 200, Placement: placement})
				if err != nil {
					t.Fatal(err)
				}
				checked := 0
				sim.check = func() {
					held := map[int]int{}
					inGang := map[int]bool{}
					for _, e := range sim.running {
						if len(e.wk) != sim.scaleOf(e) {
							t.Fatalf("%s: job %d has %d GPUs for a gang of %d", name, e.a, len(e.wk), sim.scaleOf(e))
						}
						for _, id := range []int{e.a, e.b} {
							if id >= 0 {
								if inGang[id] {
									t.Fatalf("%s: job %d in two gangs", name, id)
								}
								inGang[id] = true
							}
						}
						if sim.mustConsolidate(e, e.curType) {
							consolidated++
							for _, w := range e.wk {
								if sim.workerSrv[w] != sim.workerSrv[e.wk[0]] {
									t.Fatalf("%s: consolidated job %d spread over servers: %v", name, e.a, e.wk)
								}
							}
						}
						for _, w := range e.wk {
							if held[w]++; held[w] > 1 {
								t.Fatalf("%s: GPU %d held twice", name, w)
							}
							if w < 0 || sim.typeOfWorker(w) != e.curType {
								t.Fatalf("%s: job %d runs on GPU %d of another type", name, e.a, w)
							}
						}
					}
					checked++
				}
				if _, err := sim.Run(); err != nil {
					t.Fatal(err)
				}
				if checked == 0 {
					t.Fatalf("%s: no round checked", name)
				}
			}
		}
	}
	if consolidated == 0 {
		t.Fatal("no consolidated gang checked")
	}
}

func TestRoundDeterminism(t *testing.T) {
	tab, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	var out [2][]byte
	for i := range out {
		var b bytes.Buffer
		for _, p := range []string{"fifo", "max_min_fairness", "gandiva"} {
			res, err := GavelRun{Policy: p, Rate: 2, Seed: 1, Multi: true, Round: RoundConfig{MeasureFrom: 50, MeasureTo: 100}}.Run(tab)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.NewEncoder(&b).Encode(res); err != nil {
				t.Fatal(err)
			}
		}
		out[i] = b.Bytes()
	}
	if !bytes.Equal(out[0], out[1]) || len(out[0]) < 100 {
		t.Fatal("same seed, different bytes")
	}
}

func TestRoundConfigErrors(t *testing.T) {
	for _, c := range []RoundConfig{{RoundSeconds: -1}, {RestoreSeconds: 400}, {CrossRackFactor: 2}, {MeasureFrom: 5, MeasureTo: 3},
		{AllocationInterval: -1}, {AllocationInterval: math.NaN()}, {AllocationInterval: math.Inf(1)}} {
		if err := c.fill(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, err := AllocationPolicyByName("nope"); err == nil || !strings.Contains(err.Error(), "fifo") {
		t.Errorf("unknown policy error %v", err)
	}
}

// TestGangTooLarge: a gang the cluster can never place is an error naming
// the job and the sizes, not a smaller gang. On 2 V100 + 2 K80 (4 GPUs in
// all) a 3-GPU gang fits in no one type, and job type N at 2 GPUs has no
// measured throughput anywhere (the table has N only at 1 GPU).
func TestGangTooLarge(t *testing.T) {
	tab := tinyTab(t)
	cl, err := NewGPUCluster(tab, map[string]int{"v100": 2, "k80": 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	m, n := tab.Model("M"), tab.Model("N")
	for _, c := range []struct {
		bad  DLJob
		want string
	}{
		{DLJob{Model: m, Scale: 3, Steps: 10}, "job 1 asks a gang of 3 GPUs: the cluster has 4 GPUs, at most 2 of one type (k80)"},
		{DLJob{Model: m, Scale: 5, Steps: 10}, "job 1 asks a gang of 5 GPUs: the cluster has 4 GPUs"},
		{DLJob{Model: m, Scale: 0, Steps: 10}, "job 1 asks 0 GPUs"},
		{DLJob{Model: n, Scale: 2, Steps: 10}, "job 1 (N) asks a gang of 2 GPUs: no GPU type of the cluster (k80=2,v100=2)"},
		{DLJob{Model: 7, Scale: 1, Steps: 10}, "job 1: job type 7 is not in the throughput table"},
	} {
		src := &sliceJobs{jobs: []DLJob{{Model: m, Scale: 2, Steps: 100}, c.bad}}
		sim, err := NewRoundSim(cl, halfEach{}, src, RoundConfig{MeasureFrom: 0, MeasureTo: 2})
		if err != nil {
			t.Fatal(err)
		}
		_, err = sim.Run()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.bad, err, c.want)
		}
	}
	// Gavel's generator is checked before the run: continuous-multiple
	// draws gangs of 8, more than the 4:4:4 cluster has of one type.
	gt, err := GavelThroughputTable()
	if err != nil {
		t.Fatal(err)
	}
	small, err := ParseGPUClusterSpec("4:4:4", gt, 1)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := NewGavelGenerator(gt, GavelWorkloadConfig{Rate: 1, Multi: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewRoundSim(small, &FIFO{}, gen, RoundConfig{})
	if want := "a continuous-multiple job asks a gang of 8 GPUs: the cluster has 12 GPUs, at most 4 of one type (k80)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("4:4:4 multi: error %v, want %q", err, want)
	}
	// A Philly sample is named by its CSV line.
	philly := []PhillySample{{Duration: 60, GPUs: 1}, {Duration: 120, GPUs: 8}}
	gen, err = NewGavelGenerator(gt, GavelWorkloadConfig{Rate: 1, Philly: philly})
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewRoundSim(small, &FIFO{}, gen, RoundConfig{})
	if want := "Philly sample on line 3 (120 s) asks a gang of 8 GPUs"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("4:4:4 Philly: error %v, want %q", err, want)
	}
	// Single-GPU jobs fit; so do gangs of 8 on 8:8:8.
	if _, err := NewRoundSim(small, &FIFO{}, &sliceJobs{}, RoundConfig{}); err != nil {
		t.Error(err)
	}
	big, _ := ParseGPUClusterSpec("8:8:8", gt, 1)
	gen, _ = NewGavelGenerator(gt, GavelWorkloadConfig{Rate: 1, Multi: true})
	if _, err := NewRoundSim(big, &FIFO{}, gen, RoundConfig{}); err != nil {
		t.Error(err)
	}
}

// TestRoundResultP99: nearest rank, in hours; NaN when saturated or empty.
func TestRoundResultP99(t *testing.T) {
	var r RoundResult
	for i := 200; i >= 1; i-- {
		r.JCT = append(r.JCT, float64(i)*3600)
	}
	if got := r.P99JCTHours(); got != 198 {
		t.Fatalf("p99 of 1..200 h: %v, want 198", got)
	}
	if r.JCT[0] != 200*3600 {
		t.Fatal("P99JCTHours reordered the result's JCTs")
	}
	r.Saturated = true
	if got := r.P99JCTHours(); !math.IsNaN(got) {
		t.Fatalf("saturated: %v", got)
	}
	if got := (RoundResult{}).P99JCTHours(); !math.IsNaN(got) {
		t.Fatalf("empty: %v", got)
	}
}

// BenchmarkScoredRoundUpgrade times one run of Gavel's multi-GPU protocol
// (jobs 4000-4999 measured, 2.4 jobs/h, seed 0) under the scored policy
// with the exchange pass and pairs, without and with Upgrade: the cost of
// the mechanism's extra candidates per round.
func BenchmarkScoredRoundUpgrade(b *testing.B) {
	tab, err := GavelThroughputTable()
	if err != nil {
		b.Fatal(err)
	}
	cl, err := ParseGPUClusterSpec("36:36:36", tab, 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, up := range []bool{false, true} {
		b.Run(fmt.Sprintf("upgrade=%v", up), func(b *testing.B) {
			b.ReportAllocs()
			var res RoundResult
			for b.Loop() {
				pol := &PackedScoredPolicy{ScoredPolicy: ScoredPolicy{Weights: DefaultScoredWeights(), Exchange: true, Upgrade: up}}
				gen, err := NewGavelGenerator(tab, GavelWorkloadConfig{Rate: 2.4, Multi: true, Seed: 0})
				if err != nil {
					b.Fatal(err)
				}
				sim, err := NewRoundSim(cl, pol, gen, RoundConfig{MeasureFrom: 4000, MeasureTo: 5000})
				if err != nil {
					b.Fatal(err)
				}
				if res, err = sim.Run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Rounds)/(b.Elapsed().Seconds()/float64(b.N)), "rounds/s")
		})
	}
}
