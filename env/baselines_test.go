package env

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// baseState is the hand-built cluster the baseline tests score by hand.
//
//	m0 a: V100M16 x4, 128000m CPU, 262144 MiB; holds a 500-milli share on
//	      GPU 0 (32000m, 65536 MiB)  -> GPUs [500 1000 1000 1000], free CPU
//	      96000, free mem 196608, U = 3500, FullFree 3, classes {share}
//	m1 b: V100M16 x4, same; holds a 2-GPU pod (64000m, 32768 MiB)
//	      -> GPUs [0 0 1000 1000], free CPU 64000, mem 229376, U = 2000,
//	      classes {2-GPU}
//	m2 c: V100M16 x4, same; idle -> U = 4000, free CPU 128000
//	m3 d: T4 x2, 64000m, 131072 MiB; holds a 1-GPU pod on GPU 0 and a
//	      200-milli share on GPU 1 (16000m, 16384 MiB each)
//	      -> GPUs [0 800], free CPU 32000, mem 98304, U = 800,
//	      classes {share, 1-GPU}
//	m4 e: CPU only, 64000m, 131072 MiB; idle
//
// The target workload: A = 8000m, 1 x 300 milli, weight 1/2; B = 8000m,
// 1 x 1000 milli, weight 1/2.
func baseState(t testing.TB) *State {
	c := handCluster(t,
		mspec{"a", 128000, 262144, 4, "V100M16"},
		mspec{"b", 128000, 262144, 4, "V100M16"},
		mspec{"c", 128000, 262144, 4, "V100M16"},
		mspec{"d", 64000, 131072, 2, "T4"},
		mspec{"e", 64000, 131072, 0, ""},
	)
	s := NewState(c, 1)
	mustAlloc(t, s, 0, shareJob(32000, 65536, 500), 0)
	mustAlloc(t, s, 1, wholeJob(64000, 32768, 2), -1)
	mustAlloc(t, s, 3, wholeJob(16000, 16384, 1), -1)
	mustAlloc(t, s, 3, shareJob(16000, 16384, 200), 1)
	s.Target = &TargetWorkload{Classes: []TaskClass{
		{CPU: 8000, Milli: 300, GPUs: 1, Count: 1, Weight: 0.5},
		{CPU: 8000, Milli: 1000, GPUs: 1, Count: 1, Weight: 0.5},
	}}
	return s
}

var (
	ascPrio  = []int32{0, 1, 2, 3, 4} // ties go to the lower machine index
	descPrio = []int32{4, 3, 2, 1, 0} // ties go to the higher machine index
)

func decide(s *State, sched Scheduler, j Job, rng *rand.Rand) Action {
	obs := Observation{State: s, Job: &j, Req: s.Request(&j), Queue: 1}
	return sched.Decide(&obs, rng)
}

// The three pods scored by hand below.
var (
	podP1 = shareJob(8000, 1024, 300) // share 300, 8000m
	podP2 = wholeJob(16000, 4096, 2)  // 2 whole GPUs, 16000m
	podP3 = cpuJob(60000, 1024)       // CPU only, 60000m
)

// TestBaselinesHandComputed checks each deterministic baseline's machine
// (and FGD's GPU) for P1, P2, P3, under both tie-break orders.
//
// P1 (share 300, 8000m, 1024 MiB): feasible m0 m1 m2 m3.
//
//	dotprod, pod (8000/128000, 300/8000) = (0.0625, 0.0375):
//	  m0 .75*.0625+.4375*.0375 = .06328125 -> int(100*(1-.0316)) = 96
//	  m1 .5*.0625+.25*.0375    = .040625   -> 97
//	  m2 1*.0625+.5*.0375      = .08125    -> 95
//	  m3 .25*.0625+.1*.0375    = .019375   -> 99   winner m3
//	bestfit, left = .5(c-8000)/128000 + .5(U-300)/8000:
//	  m0 .34375+.2 -> 45; m1 .21875+.10625 -> 67; m2 .46875+.23125 -> 29|30;
//	  m3 .09375+.03125 = .125 -> 87                 winner m3
//	packing: m0 partly used GPU 0 (500 free): 100 - 50/10 = 95;
//	  m1 fresh GPU on a used node: max(50-1, 33) = 49; m2 idle: max(33-4, 4)
//	  = 29; m3 GPU 1 (800): 100 - 80/10 = 92         winner m0
//	clustering (share class), fill = 25(8000-U)/8000:
//	  m0 14+75 = 89 (only shares); m1 18 (other class); m2 12+25 = 37
//	  (empty); m3 22+50 = 72 (mixed)                  winner m0
//	kube, la = avg of int((alloc-req)*100/alloc), ba = int(100(1-|fc-fm|/2)):
//	  m0 req 40000/128000, 66560/262144: la (68+74)/2 = 71, ba 97 -> 168
//	  m1 req 72000, 33792: la (43+87)/2 = 65, ba 78 -> 143
//	  m2 req 8000, 1024: la (93+99)/2 = 96, ba 97 -> 193
//	  m3 req 40000/64000, 33792/131072: la (37+74)/2 = 55, ba 81 -> 136
//	                                                  winner m2
//	fgd (see TestFGDScores): m0 51, m1 41, m2 41, m3 53 on GPU 1
//
// P2 (2 whole GPUs, 16000m, 4096 MiB): feasible m0 m1 m2.
//
//	dotprod, pod (.125, .25): m0 .09375+.109375 -> 89; m1 .0625+.0625 -> 93;
//	  m2 .125+.125 -> 87                              winner m1
//	bestfit: m0 .3125+.09375 -> 59; m1 .1875+0 -> 81; m2 .4375+.125 -> 43
//	                                                  winner m1
//	packing: m0 and m1 open two fresh GPUs: max(50-2, 33) = 48 each; m2 29
//	                                                  tie m0/m1 -> Prio
//	clustering (2-GPU class): m0 14; m1 18+75 = 93; m2 12+25 = 37  winner m1
//	kube: m0 la (62+73)/2 = 67, ba 94 -> 161; m1 (37+85)/2 = 61, ba 75 -> 136;
//	  m2 (87+98)/2 = 92, ba 94 -> 186                 winner m2
//	fgd: F before/after is 250/250 on m0, 0/0 on m1 and m2: all Δ = 0 -> 50
//	                                                  tie m0/m1/m2 -> Prio
//
// P3 (CPU only, 60000m, 1024 MiB): feasible m0 m1 m2 m4.
//
//	dotprod, pod (.46875, 0): m0 .75*.46875 -> 82; m1 .5*.46875 -> 88;
//	  m2 -> 76; m4 .5*.46875 -> 88                    tie m1/m4 -> Prio
//	bestfit: m0 .140625+.21875 -> 64; m1 .015625+.125 -> 85; m2 .265625+.25
//	  -> 48; m4 .015625+0 -> 98                       winner m4
//	packing, clustering: 0 for CPU pods              tie all -> Prio
//	kube: m0 la (28+74)/2 = 51, ba 76 -> 127; m1 (3+87)/2 = 45, ba 58 -> 103;
//	  m2 (53+99)/2 = 76, ba 76 -> 152; m4 (6+99)/2 = 52, ba 53 -> 105
//	                                                  winner m2
//	fgd: m1 is left with 4000m < 8000m: F 0 -> 2000, Δ = -2000 ->
//	  int(100 sigmoid(-2)) = 11; m0, m2, m4 unchanged -> 50
//	                                                  tie m0/m2/m4 -> Prio
func TestBaselinesHandComputed(t *testing.T) {
	type want struct{ asc, desc, gpu int }
	cases := []struct {
		sched string
		pod   Job
		want  want
	}{
		{"dotprod", podP1, want{3, 3, -1}},
		{"bestfit", podP1, want{3, 3, -1}},
		{"packing", podP1, want{0, 0, -1}},
		{"clustering", podP1, want{0, 0, -1}},
		{"kube", podP1, want{2, 2, -1}},
		{"fgd", podP1, want{3, 3, 1}},

		{"dotprod", podP2, want{1, 1, -1}},
		{"bestfit", podP2, want{1, 1, -1}},
		{"packing", podP2, want{0, 1, -1}},
		{"clustering", podP2, want{1, 1, -1}},
		{"kube", podP2, want{2, 2, -1}},
		{"fgd", podP2, want{0, 2, -1}},

		{"dotprod", podP3, want{1, 4, -1}},
		{"bestfit", podP3, want{4, 4, -1}},
		{"packing", podP3, want{0, 4, -1}},
		{"clustering", podP3, want{0, 4, -1}},
		{"kube", podP3, want{2, 2, -1}},
		{"fgd", podP3, want{0, 4, -1}},
	}
	for _, c := range cases {
		for _, order := range []struct {
			prio []int32
			node int
		}{{ascPrio, c.want.asc}, {descPrio, c.want.desc}} {
			s := baseState(t)
			setPrios(s, order.prio)
			sched, err := NewScheduler(c.sched)
			if err != nil {
				t.Fatal(err)
			}
			a := decide(s, sched, c.pod, rand.New(rand.NewPCG(1, 1)))
			if a.Node != order.node || a.GPU != c.want.gpu {
				t.Errorf("%s on %s with Prio %v: Node %d GPU %d, want Node %d GPU %d",
					c.sched, c.pod.Name, order.prio, a.Node, a.GPU, order.node, c.want.gpu)
			}
		}
	}
}

// TestScoreFunctions checks the packing and kube node scores behind the
// winners of TestBaselinesHandComputed (values derived in its comment).
func TestScoreFunctions(t *testing.T) {
	s := baseState(t)
	for _, c := range []struct {
		pod     Job
		packing []int64 // m0..m3
		kube    []int64 // m0..m4 (-1: infeasible, not checked)
	}{
		{podP1, []int64{95, 49, 29, 92}, []int64{168, 143, 193, 136, -1}},
		{podP2, []int64{48, 48, 29, -1}, []int64{161, 136, 186, -1, -1}},
		{podP3, []int64{0, 0, 0, -1}, []int64{127, 103, 152, -1, 105}},
	} {
		r := s.Request(&c.pod)
		for i, w := range c.packing {
			if got := packingScore(s, i, &r); w >= 0 && got != w {
				t.Errorf("%s: packingScore(m%d) = %d, want %d", c.pod.Name, i, got, w)
			}
		}
		for i, w := range c.kube {
			if got := kubeScore(s, i, &r); w >= 0 && got != w {
				t.Errorf("%s: kubeScore(m%d) = %d, want %d", c.pod.Name, i, got, w)
			}
		}
	}
}

// TestPackingOrder: an idle machine with fewer GPUs opens first (2-GPU T4:
// max(33-2, 2) = 31 beats 4-GPU V100: 29); then the partly used GPU is
// filled (100 - 70/10 = 93); then a fresh GPU on the used machine
// (max(50-1, 33) = 49) beats opening an idle one (29).
func TestPackingOrder(t *testing.T) {
	c := handCluster(t,
		mspec{"a", 128000, 262144, 4, "V100M16"},
		mspec{"b", 128000, 262144, 4, "V100M16"},
		mspec{"d", 64000, 131072, 2, "T4"},
	)
	for _, prio := range [][]int32{{0, 1, 2}, {2, 1, 0}} {
		s := NewState(c, 1)
		setPrios(s, prio)
		for k, step := range []struct {
			milli int
			score int64
			gpu   int // GPU the allocator's best fit takes
		}{{300, 31, 0}, {300, 93, 0}, {800, 49, 1}} {
			j := shareJob(1000, 1000, step.milli)
			r := s.Request(&j)
			a := decide(s, Packing{}, j, nil)
			if a.Node != 2 || packingScore(s, 2, &r) != step.score {
				t.Fatalf("Prio %v step %d: packing chose %d (T4 score %d), want 2 with %d", prio, k, a.Node, packingScore(s, 2, &r), step.score)
			}
			if al := mustAlloc(t, s, 2, j, a.GPU); al.GPUMask != 1<<step.gpu {
				t.Fatalf("step %d: mask %b, want GPU %d", k, al.GPUMask, step.gpu)
			}
		}
	}
}

// TestPackingQuantisation: the score of a partly used GPU is
// 100 - (free*100/1000)/10, so 500 free (95) and 590 free (100 - 59/10 =
// 95) tie and Prio decides, while 400 free (96) wins.
func TestPackingQuantisation(t *testing.T) {
	c := handCluster(t,
		mspec{"a", 32000, 65536, 4, "V100M16"},
		mspec{"b", 32000, 65536, 4, "V100M16"},
	)
	s := NewState(c, 1)
	mustAlloc(t, s, 0, shareJob(1, 1, 500), 0) // m0 GPU 0: 500 free
	mustAlloc(t, s, 1, shareJob(1, 1, 410), 0) // m1 GPU 0: 590 free
	j := shareJob(1, 1, 100)
	for _, c := range []struct {
		prio []int32
		want int
	}{{[]int32{0, 1}, 0}, {[]int32{1, 0}, 1}} {
		setPrios(s, c.prio)
		if a := decide(s, Packing{}, j, nil); a.Node != c.want {
			t.Errorf("Prio %v: packing chose %d, want %d (tie at 95)", c.prio, a.Node, c.want)
		}
	}
	mustAlloc(t, s, 1, shareJob(1, 1, 190), 0) // m1 GPU 0: 400 free -> 96
	setPrios(s, []int32{0, 1})
	if a := decide(s, Packing{}, j, nil); a.Node != 1 {
		t.Errorf("packing chose %d, want 1 (96 beats 95)", a.Node)
	}
}

// TestFGDScores checks FGD's per-machine score and GPU choice for P1
// against the target of baseState (A: 1 x 300, B: 1 x 1000, weight 1/2).
//
//	m0 [500 1000 1000 1000]: F = A 0 + B .5*500 = 250.
//	   GPU 0 -> [200 1000 1000 1000]: A .5*200 + B .5*200 = 200, Δ = 50,
//	   int(100 sigmoid(.05)) = 51; GPU 1..3 -> [500 700 ..]: A 0 +
//	   B .5*1200 = 600, Δ = -350 -> 41.        best (51, GPU 0)
//	m1 [0 0 1000 1000]: F = 0; GPU 2 -> B .5*700 = 350, Δ = -350 -> 41;
//	   GPU 3 the same; first wins             (41, GPU 2)
//	m2 idle: F = 0; any GPU -> 350 -> 41      (41, GPU 0)
//	m3 [0 800]: F = A 0 + B (no free GPU) .5*800 = 400; GPU 1 -> [0 500]:
//	   A 0 + B .5*500 = 250, Δ = 150 -> int(100 sigmoid(.15)) = 53
//	                                          (53, GPU 1)
func TestFGDScores(t *testing.T) {
	s := baseState(t)
	p := &FGD{}
	p.reset(s, s.Target)
	r := s.Request(&podP1)
	want := map[int][2]int{0: {51, 0}, 1: {41, 2}, 2: {41, 0}, 3: {53, 1}}
	for i, w := range want {
		if sc, g := p.score(s, i, &r); sc != w[0] || g != w[1] {
			t.Errorf("machine %d: score %d GPU %d, want %d GPU %d", i, sc, g, w[0], w[1])
		}
	}
	if f := s.MachineFrag(3); f != 400 {
		t.Errorf("MachineFrag(3) = %v, want 400", f)
	}
}

// TestFGDChoosesGPUByScore: one machine with GPUs [550 1000 1000 1000] and a
// target of 500-milli shares. For a 100-milli share, best fit would take GPU
// 0 (550 -> 450: a 450 sliver, Δ = -450, score int(100 sigmoid(-.45)) = 38)
// while GPU 1 keeps every GPU >= 500 (Δ = 0, score 50, first of 1..3).
func TestFGDChoosesGPUByScore(t *testing.T) {
	c := handCluster(t, mspec{"a", 32000, 65536, 4, "V100M16"})
	s := NewState(c, 1)
	mustAlloc(t, s, 0, shareJob(1000, 1000, 450), 0)
	s.Target = &TargetWorkload{Classes: []TaskClass{{CPU: 1000, Milli: 500, GPUs: 1, Count: 1, Weight: 1}}}
	a := decide(s, &FGD{}, shareJob(1000, 1000, 100), nil)
	if a.Node != 0 || a.GPU != 1 {
		t.Fatalf("FGD: Node %d GPU %d, want Node 0 GPU 1", a.Node, a.GPU)
	}
	if g := s.BestFitGPU(0, 100); g != 0 {
		t.Fatalf("BestFitGPU = %d, want 0", g)
	}
	// GPU 0 alone: [450 1000 1000 1000] has a 450 sliver: F 0 -> 450.
	if f := s.Target.NodeFrag(31000-1000, 1, []int32{450, 1000, 1000, 1000}); f != 450 {
		t.Fatalf("NodeFrag after GPU 0 = %v, want 450", f)
	}
	if q := int(100 * sigmoid(-450.0/1000)); q != 38 {
		t.Fatalf("quantised score for Δ = -450 is %d, want 38", q)
	}
	p := &FGD{}
	p.reset(s, s.Target)
	r := s.Request(&Job{CPU: 1000, Mem: 1000, GPUs: 1, GPUMilli: 100})
	if sc, g := p.score(s, 0, &r); sc != 50 || g != 1 {
		t.Fatalf("score %d GPU %d, want 50 GPU 1", sc, g)
	}
}

// TestFGDWithoutTarget: with no typical workload FGD measures fragmentation
// against the pod itself. Machines m0 [500 1000 1000 1000] and m2 idle for
// P1 (share 300): on m0, GPU 0 -> [200 ...]: F goes 0 -> 200 (the 200 is
// now a sliver), Δ = -200 -> 45; GPU 1 -> 700 keeps every GPU >= 300:
// Δ = 0 -> 50. On m2 any GPU -> Δ = 0 -> 50. m3 [0 800] -> [0 500]: Δ 0 ->
// 50. m1 [0 0 1000 1000]: 50. All tie at 50: Prio decides; on m0 the GPU
// is 1.
func TestFGDWithoutTarget(t *testing.T) {
	s := baseState(t)
	s.Target = nil
	setPrios(s, []int32{0, 1, 2, 3, 4})
	a := decide(s, &FGD{}, podP1, nil)
	if a.Node != 0 || a.GPU != 1 {
		t.Fatalf("FGD without target: Node %d GPU %d, want Node 0 GPU 1", a.Node, a.GPU)
	}
}

// TestFGDCacheMatchesFresh drives one FGD instance through many decisions,
// placements and releases, and checks each decision against a fresh FGD
// with no cache.
func TestFGDCacheMatchesFresh(t *testing.T) {
	for _, withTarget := range []bool{true, false} {
		s := baseState(t)
		if !withTarget {
			s.Target = nil
		}
		cached := &FGD{}
		rng := rand.New(rand.NewPCG(5, 6))
		var held []Alloc
		pods := []Job{podP1, podP2, podP3, shareJob(4000, 1000, 500), wholeJob(8000, 1000, 1), shareJob(8000, 1000, 200)}
		for step := 0; step < 400; step++ {
			if len(held) > 0 && rng.IntN(3) == 0 {
				k := rng.IntN(len(held))
				s.release(held[k])
				held = slices.Delete(held, k, k+1)
				continue
			}
			j := pods[rng.IntN(len(pods))]
			got := decide(s, cached, j, nil)
			want := decide(s, &FGD{}, j, nil)
			if got.Node != want.Node || got.GPU != want.GPU {
				t.Fatalf("target %v step %d: cached FGD chose %d/%d, fresh FGD %d/%d", withTarget, step, got.Node, got.GPU, want.Node, want.GPU)
			}
			if got.Node >= 0 {
				r := s.Request(&j)
				a, err := s.allocate(got.Node, &r, got.GPU)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, a)
			}
		}
	}
}

// TestShareGPUIsBestFitForOthers: every baseline except random and fgd
// leaves the GPU to the allocator (-1 = best fit).
func TestShareGPUIsBestFitForOthers(t *testing.T) {
	for _, name := range []string{"bestfit", "dotprod", "packing", "clustering", "kube", "p2c"} {
		s := baseState(t)
		sched, _ := NewScheduler(name)
		a := decide(s, sched, podP1, rand.New(rand.NewPCG(1, 2)))
		if a.Node < 0 || a.GPU != -1 {
			t.Errorf("%s: share pod got Node %d GPU %d, want a node and GPU -1", name, a.Node, a.GPU)
		}
	}
}

// TestRandomScheduler: feasible choices only, uniform over the feasible
// machines (m0..m3 for P1), and a uniform GPU among those that fit.
func TestRandomScheduler(t *testing.T) {
	s := baseState(t)
	p := &Random{}
	rng := rand.New(rand.NewPCG(11, 12))
	var nodes [5]int
	gpus := map[[2]int]int{}
	const n = 4000
	r := s.Request(&podP1)
	for range n {
		a := decide(s, p, podP1, rng)
		if a.Node < 0 || !s.Fits(a.Node, &r) {
			t.Fatalf("random chose infeasible node %d", a.Node)
		}
		if a.GPU < 0 || s.GPUs(a.Node)[a.GPU] < 300 {
			t.Fatalf("random chose GPU %d of node %d, which does not fit 300 milli", a.GPU, a.Node)
		}
		nodes[a.Node]++
		gpus[[2]int{a.Node, a.GPU}]++
	}
	// Expected 1000 per feasible node, sd ~27; m4 has no GPU.
	for i := range 4 {
		if nodes[i] < 850 || nodes[i] > 1150 {
			t.Errorf("node %d chosen %d times of %d, want about 1000", i, nodes[i], n)
		}
	}
	if nodes[4] != 0 {
		t.Errorf("CPU-only node chosen %d times", nodes[4])
	}
	// m0: all four GPUs fit (expected 250 each); m1: GPUs 2, 3 (500 each);
	// m3: GPU 1 only.
	for g := range 4 {
		if c := gpus[[2]int{0, g}]; c < 170 || c > 330 {
			t.Errorf("m0 GPU %d chosen %d times, want about 250", g, c)
		}
	}
	if gpus[[2]int{1, 0}]+gpus[[2]int{1, 1}]+gpus[[2]int{3, 0}] != 0 {
		t.Error("random chose a full GPU")
	}
	for g := 2; g < 4; g++ {
		if c := gpus[[2]int{1, g}]; c < 380 || c > 620 {
			t.Errorf("m1 GPU %d chosen %d times, want about 500", g, c)
		}
	}
	// Non-share pods get GPU -1.
	if a := decide(s, p, podP2, rng); a.GPU != -1 || a.Node < 0 || a.Node > 2 {
		t.Errorf("random for a 2-GPU pod: %+v", a)
	}
}

// TestP2C: the less loaded of two candidates wins; load is the largest
// allocated fraction: m0 max(.25 cpu, .25 mem, .125 gpu) = .25,
// m1 max(.5, .125, .5) = .5, m2 0, m4 0.
func TestP2C(t *testing.T) {
	s := baseState(t)
	if l := []float64{load(s, 0), load(s, 1), load(s, 2), load(s, 4)}; !slices.Equal(l, []float64{.25, .5, 0, 0}) {
		t.Fatalf("loads %v, want [.25 .5 0 0]", l)
	}
	p := &P2C{}
	// V100-only share with m2 down: the candidates are always m0 and m1;
	// m0 is less loaded.
	j := podP1
	j.GPUModels = []string{"V100M16"}
	s.setUp(2, false)
	for seed := range uint64(200) {
		if a := decide(s, p, j, rand.New(rand.NewPCG(seed, 3))); a.Node != 0 || a.GPU != -1 {
			t.Fatalf("seed %d: p2c chose %d/%d, want 0/-1", seed, a.Node, a.GPU)
		}
	}
	// Only m0 fits a 3-GPU pod now (m1 has 2 free GPUs, m2 is down).
	if a := decide(s, p, wholeJob(1000, 1000, 3), rand.New(rand.NewPCG(1, 1))); a.Node != 0 {
		t.Fatalf("single feasible node: p2c chose %d, want 0", a.Node)
	}
	s.setUp(2, true)
	// P3 (CPU only): feasible m0 m1 m2 m4. m1 loses every pair; m0 wins only
	// the pair {m0, m1} (1 of 6 pairs); m2 and m4 tie at 0 and Prio decides.
	setPrios(s, []int32{0, 1, 2, 3, 4})
	rng := rand.New(rand.NewPCG(8, 9))
	var count [5]int
	const n = 3000
	for range n {
		count[decide(s, p, podP3, rng).Node]++
	}
	if count[1] != 0 || count[3] != 0 {
		t.Fatalf("p2c chose the most loaded or an infeasible machine: %v", count)
	}
	// Expected: m0 wins {m0,m1} = 1/6 (500, sd ~20); m2 wins {m0,m2},
	// {m1,m2} and {m2,m4} (tie, lower Prio) = 3/6; m4 wins {m0,m4} and
	// {m1,m4} = 2/6.
	if count[0] < 400 || count[0] > 600 || count[2] < 1350 || count[2] > 1650 || count[4] < 850 || count[4] > 1150 {
		t.Fatalf("p2c choices %v, want about [500 0 1500 0 1000]", count)
	}
}

// TestP2CScan: 3 feasible machines among 200, so the rejection sampler
// mostly fails and p2c falls back to scanning. Loads: a max(.25 cpu,
// .025 GPU) = .25, b max(.25, .5 GPU) = .5, c 0. Of the three pairs, c wins
// two and a wins {a, b}; b (the GPU-loaded one, with the better Prio) never.
func TestP2CScan(t *testing.T) {
	specs := []mspec{
		{"a", 32000, 65536, 4, "V100M16"},
		{"b", 32000, 65536, 4, "V100M16"},
		{"c", 32000, 65536, 4, "V100M16"},
	}
	for i := range 197 {
		specs = append(specs, mspec{fmt.Sprint("small", i), 1000, 1000, 0, ""})
	}
	s := NewState(handCluster(t, specs...), 1)
	mustAlloc(t, s, 0, shareJob(8000, 1, 100), -1)
	mustAlloc(t, s, 1, wholeJob(8000, 1, 2), -1)
	s.M[0].Prio, s.M[1].Prio, s.M[2].Prio = 1000, 0, 500
	if l := []float64{load(s, 0), load(s, 1), load(s, 2)}; !slices.Equal(l, []float64{.25, .5, 0}) {
		t.Fatalf("loads %v, want [.25 .5 0]", l)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	count := map[int]int{}
	const n = 1500
	for range n {
		count[decide(s, &P2C{}, shareJob(4000, 1, 300), rng).Node]++
	}
	if count[1] != 0 || count[0]+count[2] != n || count[0] < 400 || count[0] > 600 {
		t.Fatalf("p2c choices %v, want about {0: 500, 2: 1000}", count)
	}
}

// TestAllSchedulersWait: a pod that fits nowhere gets Node -1 from every
// scheduler.
func TestAllSchedulersWait(t *testing.T) {
	a100 := shareJob(1000, 1000, 100)
	a100.GPUModels = []string{"A100"}
	nowhere := []Job{
		cpuJob(128001, 1),          // more CPU than any machine
		cpuJob(1, 262145),          // more memory than any machine
		wholeJob(1000, 1000, 5),    // 5 GPUs: machines have 4
		wholeJob(1000, 1000, 3),    // m0 and m1 keep 2 free GPUs, m2 is down
		a100,                       // unknown model
		shareJob(100000, 1000, 10), // CPU of m2 only, which is down
	}
	for _, name := range SchedulerNames {
		for k, j := range nowhere {
			for _, target := range []bool{true, false} {
				s := baseState(t)
				if !target {
					s.Target = nil
				}
				s.setUp(2, false)
				mustAlloc(t, s, 0, wholeJob(1, 1, 1), -1) // m0 keeps 2 free GPUs
				sched, _ := NewScheduler(name)
				a := decide(s, sched, j, rand.New(rand.NewPCG(uint64(k), 1)))
				if a.Node != -1 {
					t.Errorf("%s (target %v): pod %d %+v placed on %d, want -1", name, target, k, j, a.Node)
				}
			}
		}
		// All machines down.
		s := baseState(t)
		for i := range s.M {
			s.setUp(i, false)
		}
		sched, _ := NewScheduler(name)
		if a := decide(s, sched, cpuJob(1, 1), rand.New(rand.NewPCG(1, 1))); a.Node != -1 {
			t.Errorf("%s: placed on %d with every machine down", name, a.Node)
		}
	}
}

func TestNewScheduler(t *testing.T) {
	for _, name := range SchedulerNames {
		s, err := NewScheduler(name)
		if err != nil || s.Name() != name {
			t.Errorf("NewScheduler(%q) = %v, %v", name, s, err)
		}
	}
	if _, err := NewScheduler("nope"); err == nil {
		t.Error("NewScheduler accepted an unknown name")
	}
}

// TestBestFitSingleFeasible: with one feasible machine the min-max range is
// empty (hi == lo); the machine still wins.
func TestBestFitSingleFeasible(t *testing.T) {
	s := baseState(t)
	a := decide(s, &BestFit{}, wholeJob(1000, 1000, 4), nil) // only m2 has 4 free GPUs
	if a.Node != 2 {
		t.Fatalf("bestfit chose %d, want 2", a.Node)
	}
}

// TestFGDRank: Rank's first machine is FGD's choice, its list is sorted
// by score then priority, and it holds the k best of all admitted machines.
func TestFGDRank(t *testing.T) {
	c, w := loadGPUTrace(t)
	g := c.GPUMachines()
	s := NewState(g, 3)
	s.Target = NewTargetWorkload(w.Jobs, s)
	var f, rk FGD
	rng := rand.New(rand.NewPCG(1, 2))
	var ranked []Ranked
	for n, j := range w.Jobs[:400] {
		obs := Observation{State: s, Job: &w.Jobs[n], Req: s.Request(&j), Queue: 1}
		a := f.Decide(&obs, rng)
		ranked = rk.Rank(&obs, 8, ranked[:0])
		if a.Node < 0 {
			if len(ranked) != 0 {
				t.Fatalf("pod %d: FGD waits but Rank has %v", n, ranked)
			}
			continue
		}
		if ranked[0].Machine != a.Node || ranked[0].GPU != a.GPU {
			t.Fatalf("pod %d: Rank's first %+v, FGD chose %d GPU %d", n, ranked[0], a.Node, a.GPU)
		}
		admitted := 0
		for i := range s.M {
			if s.Admit(i, &obs.Req) {
				admitted++
			}
		}
		if len(ranked) != min(8, admitted) {
			t.Fatalf("pod %d: %d ranked of %d admitted", n, len(ranked), admitted)
		}
		for _, c := range ranked {
			// The score is FGD's quantisation of the fragmentation drop.
			if drop := rk.FragDrop(&obs, c.Machine, c.GPU); c.Score != int(100*sigmoid(drop/1000)) {
				t.Fatalf("pod %d machine %d: score %d, fragmentation drop %v", n, c.Machine, c.Score, drop)
			}
		}
		for k := 1; k < len(ranked); k++ {
			a, b := ranked[k-1], ranked[k]
			if a.Score < b.Score || a.Score == b.Score && s.M[a.Machine].Prio > s.M[b.Machine].Prio {
				t.Fatalf("pod %d: ranks %d and %d out of order: %v", n, k-1, k, ranked)
			}
		}
		if _, err := s.allocate(a.Node, &obs.Req, a.GPU); err != nil {
			t.Fatal(err)
		}
	}
}
