package env

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// mspec describes one machine of a hand-built test cluster.
type mspec struct {
	name  string
	cpu   int64
	mem   int64
	gpus  int
	model string
}

// handCluster builds a one-rack, one-leaf, one-zone cluster of the given
// machines and checks that it validates.
func handCluster(t testing.TB, specs ...mspec) *Cluster {
	t.Helper()
	c := &Cluster{
		Racks:  []Rack{{Name: "r0", Leaf: 0, UplinkGbps: 100, PowerBudgetW: 1e6}},
		Leaves: []Leaf{{Name: "l0", Zone: 0, UplinkGbps: 400}},
		Zones:  []Zone{{Name: "z0"}},
		Net:    DefaultNetwork,
	}
	for _, s := range specs {
		c.Machines = append(c.Machines, newMachine(s.name, s.cpu, s.mem, s.gpus, s.model, 0))
	}
	c.finish()
	if err := c.Validate(); err != nil {
		t.Fatalf("hand-built cluster does not validate: %v", err)
	}
	return c
}

// allocCluster: two 4-GPU V100M16 machines, a CPU-only machine and a 2-GPU
// T4 machine. Models sort to [T4 V100M16]: T4 is model 0, V100M16 model 1.
func allocCluster(t testing.TB) *Cluster {
	return handCluster(t,
		mspec{"v0", 32000, 65536, 4, "V100M16"},
		mspec{"v1", 32000, 65536, 4, "V100M16"},
		mspec{"cpu", 16000, 32768, 0, ""},
		mspec{"t4", 16000, 32768, 2, "T4"},
	)
}

func shareJob(cpu, mem int64, milli int) Job {
	return Job{Name: "share", CPU: cpu, Mem: mem, GPUs: 1, GPUMilli: milli, Service: -1}
}

func wholeJob(cpu, mem int64, k int) Job {
	return Job{Name: "whole", CPU: cpu, Mem: mem, GPUs: k, GPUMilli: MilliGPU, Service: -1}
}

func cpuJob(cpu, mem int64) Job {
	return Job{Name: "cpu", CPU: cpu, Mem: mem, Service: -1}
}

// mustAlloc places j on machine i (GPU gpu for share jobs, -1 best fit).
func mustAlloc(t testing.TB, s *State, i int, j Job, gpu int) Alloc {
	t.Helper()
	r := s.Request(&j)
	a, err := s.allocate(i, &r, gpu)
	if err != nil {
		t.Fatalf("allocate %+v on machine %d GPU %d: %v", j, i, gpu, err)
	}
	return a
}

func fits(s *State, i int, j Job) bool {
	r := s.Request(&j)
	return s.Fits(i, &r)
}

// stateSnap is everything of a State that allocation changes, except Ver.
type stateSnap struct {
	Machines                  []MachineState // Ver cleared
	GPUFree                   []int32
	GPUUsers                  []uint16
	Classes                   []int32
	CapCPU, CapMem, CapGPU    int64
	UsedCPU, UsedMem, UsedGPU int64
}

func snapState(s *State) stateSnap {
	return stateSnap{
		Machines: machinesNoVer(s),
		GPUFree:  slices.Clone(s.GPUFree), GPUUsers: slices.Clone(s.GPUUsers),
		Classes: slices.Clone(s.classes),
		CapCPU:  s.CapCPU, CapMem: s.CapMem, CapGPU: s.CapGPU,
		UsedCPU: s.UsedCPU, UsedMem: s.UsedMem, UsedGPU: s.UsedGPU,
	}
}

// checkInvariants recomputes the derived counters from the per-GPU and
// per-machine state.
func checkInvariants(t testing.TB, s *State) {
	t.Helper()
	var usedCPU, usedMem, usedGPU int64
	for i := range s.C.Machines {
		m := &s.C.Machines[i]
		var idle int32
		full := int32(0)
		for j, g := range s.GPUs(i) {
			if g < 0 || g > MilliGPU {
				t.Fatalf("machine %d GPU %d free %d outside [0,1000]", i, j, g)
			}
			idle += g
			if g == MilliGPU {
				full++
				if s.Sharers(i)[j] != 0 {
					t.Fatalf("machine %d GPU %d fully free with %d users", i, j, s.Sharers(i)[j])
				}
			} else if s.Sharers(i)[j] == 0 {
				t.Fatalf("machine %d GPU %d has free %d but no users", i, j, g)
			}
		}
		if idle != s.M[i].IdleGPU || full != s.M[i].FullFree {
			t.Fatalf("machine %d: IdleGPU %d FullFree %d, recomputed %d %d", i, s.M[i].IdleGPU, s.M[i].FullFree, idle, full)
		}
		if s.M[i].FreeCPU < 0 || s.M[i].FreeMem < 0 {
			t.Fatalf("machine %d: negative free cpu %d mem %d", i, s.M[i].FreeCPU, s.M[i].FreeMem)
		}
		usedCPU += m.CPU - s.M[i].FreeCPU
		usedMem += m.Mem - s.M[i].FreeMem
		usedGPU += int64(m.GPUs*MilliGPU) - int64(idle)
		distinct := 0
		for c := 1; c < numGPUClasses; c++ {
			if n, _ := s.ClassCount(i, c); n > 0 {
				distinct++
			}
		}
		if _, d := s.ClassCount(i, 1); d != distinct {
			t.Fatalf("machine %d: %d distinct classes recorded, %d counted", i, d, distinct)
		}
	}
	if usedCPU != s.UsedCPU || usedMem != s.UsedMem || usedGPU != s.UsedGPU {
		t.Fatalf("used totals %d/%d/%d, recomputed %d/%d/%d", s.UsedCPU, s.UsedMem, s.UsedGPU, usedCPU, usedMem, usedGPU)
	}
}

func TestHandClusterShape(t *testing.T) {
	c := allocCluster(t)
	if !slices.Equal(c.Models, []string{"T4", "V100M16"}) {
		t.Fatalf("Models = %v, want [T4 V100M16]", c.Models)
	}
	if c.TotalGPUs() != 10 {
		t.Fatalf("TotalGPUs = %d, want 4+4+0+2 = 10", c.TotalGPUs())
	}
	s := NewState(c, 1)
	// 3 GPU machines: 10 GPUs x 1000 milli.
	if s.CapGPU != 10000 || s.CapCPU != 96000 || s.CapMem != 196608 {
		t.Fatalf("caps %d/%d/%d, want 10000/96000/196608", s.CapGPU, s.CapCPU, s.CapMem)
	}
	if s.Model(0) != 1 || s.Model(2) != -1 || s.Model(3) != 0 {
		t.Fatalf("model indices %d %d %d, want 1 -1 0", s.Model(0), s.Model(2), s.Model(3))
	}
	// Prio is a permutation of 0..n-1.
	p := prios(s)
	slices.Sort(p)
	if !slices.Equal(p, []int32{0, 1, 2, 3}) {
		t.Fatalf("Prio %v is not a permutation", prios(s))
	}
}

func TestSharePodsPackOneGPU(t *testing.T) {
	s := NewState(allocCluster(t), 1)
	// Best fit among four free GPUs: the first one, GPU 0.
	a := mustAlloc(t, s, 0, shareJob(1000, 1000, 600), -1)
	if a.GPUMask != 1 || a.Milli != 600 || a.Class != 1 {
		t.Fatalf("first share alloc %+v, want mask 1, milli 600, class 1", a)
	}
	// 400 fits exactly on GPU 0 (600+400 = 1000): best fit takes it.
	a = mustAlloc(t, s, 0, shareJob(1000, 1000, 400), -1)
	if a.GPUMask != 1 {
		t.Fatalf("second share went to mask %b, want GPU 0", a.GPUMask)
	}
	if got := s.GPUs(0); !slices.Equal(got, []int32{0, 1000, 1000, 1000}) {
		t.Fatalf("GPU free %v, want [0 1000 1000 1000]", got)
	}
	if got := s.Sharers(0); !slices.Equal(got, []uint16{2, 0, 0, 0}) {
		t.Fatalf("sharers %v, want [2 0 0 0]", got)
	}
	// GPU 0 is full: 300 opens GPU 1, then 800 cannot join GPU 1 (700 free)
	// and opens GPU 2.
	mustAlloc(t, s, 0, shareJob(1000, 1000, 300), -1)
	mustAlloc(t, s, 0, shareJob(1000, 1000, 800), -1)
	if got := s.GPUs(0); !slices.Equal(got, []int32{0, 700, 200, 1000}) {
		t.Fatalf("GPU free %v, want [0 700 200 1000]", got)
	}
	// FullFree 1 (GPU 3); idle 0+700+200+1000 = 1900.
	if s.M[0].FullFree != 1 || s.M[0].IdleGPU != 1900 {
		t.Fatalf("FullFree %d IdleGPU %d, want 1 1900", s.M[0].FullFree, s.M[0].IdleGPU)
	}
	// 200 fits GPU 2 exactly (least free that fits).
	a = mustAlloc(t, s, 0, shareJob(1000, 1000, 200), -1)
	if a.GPUMask != 1<<2 {
		t.Fatalf("200 milli went to mask %b, want GPU 2", a.GPUMask)
	}
	if s.UsedGPU != 2300 || s.UsedCPU != 5000 || s.Jobs(0) != 5 {
		t.Fatalf("UsedGPU %d UsedCPU %d jobs %d, want 2300 5000 5", s.UsedGPU, s.UsedCPU, s.Jobs(0))
	}
	if n, d := s.ClassCount(0, 1); n != 5 || d != 1 {
		t.Fatalf("share class count %d distinct %d, want 5 1", n, d)
	}
	checkInvariants(t, s)
}

func TestSharePodNeverSpansGPUs(t *testing.T) {
	s := NewState(allocCluster(t), 1)
	for j := 0; j < 4; j++ {
		mustAlloc(t, s, 0, shareJob(100, 100, 400), j)
	}
	// 4 x 600 = 2400 idle milli, but no single GPU has 700.
	if s.M[0].IdleGPU != 2400 {
		t.Fatalf("IdleGPU %d, want 2400", s.M[0].IdleGPU)
	}
	if fits(s, 0, shareJob(100, 100, 700)) {
		t.Fatal("700 milli share fits on GPUs with 600 free each")
	}
	r := s.Request(&Job{CPU: 100, Mem: 100, GPUs: 1, GPUMilli: 700})
	before := snapState(s)
	if _, err := s.allocate(0, &r, 1); err == nil {
		t.Fatal("allocate accepted a share pod that spans GPUs")
	}
	if !reflect.DeepEqual(before, snapState(s)) {
		t.Fatal("failed allocate changed the state")
	}
	if !fits(s, 0, shareJob(100, 100, 600)) {
		t.Fatal("600 milli share should fit on a GPU with 600 free")
	}
	// An explicit GPU that is too small is refused even though others fit.
	mustAlloc(t, s, 0, shareJob(100, 100, 500), 3) // GPU 3: 600 -> 100
	r = s.Request(&Job{CPU: 100, Mem: 100, GPUs: 1, GPUMilli: 200})
	before = snapState(s)
	if _, err := s.allocate(0, &r, 3); err == nil {
		t.Fatal("allocate put 200 milli on GPU 3 with 100 free")
	}
	if _, err := s.allocate(0, &r, 4); err == nil {
		t.Fatal("allocate accepted GPU index 4 on a 4-GPU machine")
	}
	if !reflect.DeepEqual(before, snapState(s)) {
		t.Fatal("failed allocate changed the state")
	}
	checkInvariants(t, s)
}

func TestWholeGPUPods(t *testing.T) {
	s := NewState(allocCluster(t), 1)
	// A 1-milli share on GPU 1 makes GPU 1 unusable for whole-GPU pods.
	mustAlloc(t, s, 0, shareJob(100, 100, 1), 1)
	if s.M[0].FullFree != 3 {
		t.Fatalf("FullFree %d, want 3", s.M[0].FullFree)
	}
	// 2 GPUs: the lowest fully free indices are 0 and 2.
	a := mustAlloc(t, s, 0, wholeJob(100, 100, 2), -1)
	if a.GPUMask != 0b0101 || a.Class != 3 {
		t.Fatalf("2-GPU alloc mask %04b class %d, want 0101 class 3", a.GPUMask, a.Class)
	}
	// Only GPU 3 is fully free: a 2-GPU pod no longer fits although
	// 999 + 1000 = 1999 milli are idle.
	if s.M[0].IdleGPU != 1999 {
		t.Fatalf("IdleGPU %d, want 1999", s.M[0].IdleGPU)
	}
	if fits(s, 0, wholeJob(100, 100, 2)) {
		t.Fatal("2-GPU pod fits with one fully free GPU")
	}
	a = mustAlloc(t, s, 0, wholeJob(100, 100, 1), -1)
	if a.GPUMask != 0b1000 || a.Class != 2 {
		t.Fatalf("1-GPU alloc mask %04b class %d, want 1000 class 2", a.GPUMask, a.Class)
	}
	// GPU 1 has 999 free but holds a share pod: no whole GPU left.
	if fits(s, 0, wholeJob(100, 100, 1)) {
		t.Fatal("1-GPU pod fits on a GPU holding a share pod")
	}
	if !fits(s, 0, shareJob(100, 100, 999)) {
		t.Fatal("999 milli share should still fit GPU 1")
	}
	// gpu_milli 1000 with one GPU is a whole-GPU pod, not a share pod.
	j := wholeJob(1, 1, 1)
	if j.IsShare() {
		t.Fatal("1 x 1000 milli counted as a share pod")
	}
	// More GPUs than the machine has.
	if fits(s, 1, wholeJob(100, 100, 5)) {
		t.Fatal("5-GPU pod fits a 4-GPU machine")
	}
	if !fits(s, 1, wholeJob(100, 100, 4)) {
		t.Fatal("4-GPU pod should fit an idle 4-GPU machine")
	}
	if n, d := s.ClassCount(0, 3); n != 1 || d != 3 {
		t.Fatalf("machine 0 class 3 count %d distinct %d, want 1 and 3 (share, 1-GPU, 2-GPU)", n, d)
	}
	checkInvariants(t, s)
}

func TestCPUAndMemoryAreHard(t *testing.T) {
	s := NewState(allocCluster(t), 1)
	mustAlloc(t, s, 0, cpuJob(12000, 5536), -1) // free 20000 CPU, 60000 MiB
	cases := []struct {
		job  Job
		want bool
	}{
		{cpuJob(20000, 60000), true},
		{cpuJob(20001, 1), false},
		{cpuJob(1, 60001), false},
		{shareJob(20000, 60000, 100), true},
		{shareJob(20001, 100, 100), false},
		{wholeJob(100, 60001, 1), false},
		{wholeJob(20000, 60000, 4), true},
	}
	for k, c := range cases {
		if got := fits(s, 0, c.job); got != c.want {
			t.Errorf("case %d %+v: Fits = %v, want %v", k, c.job, got, c.want)
		}
	}
	// CPU-only machine: CPU pods fit, GPU pods never.
	if !fits(s, 2, cpuJob(16000, 32768)) {
		t.Error("CPU pod filling the CPU machine exactly does not fit")
	}
	if fits(s, 2, shareJob(1, 1, 1)) || fits(s, 2, wholeJob(1, 1, 1)) {
		t.Error("GPU pod fits a machine without GPUs")
	}
	// A CPU pod on a GPU machine takes no GPU.
	a := mustAlloc(t, s, 3, cpuJob(1000, 1000), -1)
	if a.GPUMask != 0 || a.Class != 0 || s.M[3].IdleGPU != 2000 {
		t.Fatalf("CPU pod alloc %+v, IdleGPU %d", a, s.M[3].IdleGPU)
	}
	if n, d := s.ClassCount(3, 0); n != 0 || d != 0 {
		t.Fatalf("CPU pod counted as GPU class: %d %d", n, d)
	}
	checkInvariants(t, s)
}

func TestGPUModelConstraint(t *testing.T) {
	s := NewState(allocCluster(t), 1)
	with := func(j Job, models ...string) Job { j.GPUModels = models; return j }
	cases := []struct {
		job  Job
		mask uint64
		fits [4]bool // machines v0, v1, cpu, t4
	}{
		{shareJob(100, 100, 500), 0, [4]bool{true, true, false, true}},
		{with(shareJob(100, 100, 500), "T4"), 1 << 0, [4]bool{false, false, false, true}},
		{with(wholeJob(100, 100, 2), "V100M16"), 1 << 1, [4]bool{true, true, false, false}},
		{with(shareJob(100, 100, 500), "V100M16", "T4"), 0b11, [4]bool{true, true, false, true}},
		// Unknown names are ignored when a known one is listed...
		{with(shareJob(100, 100, 500), "A100", "T4"), 1 << 0, [4]bool{false, false, false, true}},
		// ...and match no machine when none is known.
		{with(shareJob(100, 100, 500), "A100"), 1 << 63, [4]bool{}},
		{with(wholeJob(100, 100, 1), "A100", "H100"), 1 << 63, [4]bool{}},
		// A CPU-only pod ignores the model list.
		{with(cpuJob(100, 100), "A100"), 0, [4]bool{true, true, true, true}},
	}
	for k, c := range cases {
		r := s.Request(&c.job)
		if r.Models != c.mask {
			t.Errorf("case %d: Models = %b, want %b", k, r.Models, c.mask)
		}
		for i := range 4 {
			if got := s.Fits(i, &r); got != c.fits[i] {
				t.Errorf("case %d machine %d: Fits = %v, want %v", k, i, got, c.fits[i])
			}
		}
	}
}

func TestRequestClasses(t *testing.T) {
	s := NewState(allocCluster(t), 1)
	for _, c := range []struct {
		job   Job
		class int
		share bool
		dem   int64
	}{
		{cpuJob(1, 1), 0, false, 0},
		{shareJob(1, 1, 999), 1, true, 999},
		{wholeJob(1, 1, 1), 2, false, 1000},
		{wholeJob(1, 1, 2), 3, false, 2000},
		{wholeJob(1, 1, 4), 5, false, 4000},
		{wholeJob(1, 1, 8), 9, false, 8000},
	} {
		r := s.Request(&c.job)
		if r.Class != c.class || r.Share() != c.share || r.GPUDemand() != c.dem {
			t.Errorf("%+v: class %d share %v demand %d, want %d %v %d", c.job, r.Class, r.Share(), r.GPUDemand(), c.class, c.share, c.dem)
		}
	}
}

func TestReleaseRestoresState(t *testing.T) {
	s := NewState(allocCluster(t), 1)
	empty := snapState(s)
	a1 := mustAlloc(t, s, 0, shareJob(1000, 2000, 300), 2)
	afterA1 := snapState(s)
	a2 := mustAlloc(t, s, 0, wholeJob(3000, 4000, 2), -1) // GPUs 0, 1
	a3 := mustAlloc(t, s, 0, shareJob(500, 600, 700), 2)  // GPU 2: 700 -> 0
	a4 := mustAlloc(t, s, 3, shareJob(100, 200, 250), -1) // T4 GPU 0
	a5 := mustAlloc(t, s, 2, cpuJob(700, 800), -1)
	if a2.GPUMask != 0b0011 || a3.GPUMask != 0b0100 {
		t.Fatalf("masks %04b %04b, want 0011 0100", a2.GPUMask, a3.GPUMask)
	}
	checkInvariants(t, s)
	// Releasing a2..a5 in a different order gives back the state after a1.
	for _, a := range []Alloc{a4, a2, a5, a3} {
		s.release(a)
		checkInvariants(t, s)
	}
	if got := snapState(s); !reflect.DeepEqual(got, afterA1) {
		t.Fatalf("after releasing a2..a5:\n got %+v\nwant %+v", got, afterA1)
	}
	s.release(a1)
	if got := snapState(s); !reflect.DeepEqual(got, empty) {
		t.Fatalf("after releasing everything:\n got %+v\nwant %+v", got, empty)
	}
	// Every change bumped the machines' versions: machine 0 had 3 allocs
	// and 3 releases.
	if s.M[0].Ver != 6 || s.M[1].Ver != 0 || s.M[2].Ver != 2 || s.M[3].Ver != 2 {
		t.Fatalf("Ver %v, want [6 0 2 2]", vers(s))
	}
}

// TestRandomAllocReleaseInvariants drives random allocations and releases
// and checks the derived counters after each step and the empty state at the
// end.
func TestRandomAllocReleaseInvariants(t *testing.T) {
	s := NewState(allocCluster(t), 7)
	empty := snapState(s)
	rng := rand.New(rand.NewPCG(1, 2))
	var held []Alloc
	milli := []int{0, 100, 250, 500, 700, 999, 1000}
	for step := 0; step < 3000; step++ {
		if len(held) > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(len(held))
			s.release(held[k])
			held = slices.Delete(held, k, k+1)
		} else {
			var j Job
			switch d := milli[rng.IntN(len(milli))]; d {
			case 0:
				j = cpuJob(int64(rng.IntN(4000)), int64(rng.IntN(8000)))
			case 1000:
				j = wholeJob(int64(rng.IntN(4000)), int64(rng.IntN(8000)), 1+rng.IntN(3))
			default:
				j = shareJob(int64(rng.IntN(4000)), int64(rng.IntN(8000)), d)
			}
			i := rng.IntN(4)
			r := s.Request(&j)
			gpu := -1
			if r.Share() && rng.IntN(2) == 0 {
				gpu = rng.IntN(5)
			}
			ok := s.Fits(i, &r)
			a, err := s.allocate(i, &r, gpu)
			if !ok {
				if err == nil {
					t.Fatalf("step %d: allocate succeeded where Fits is false", step)
				}
				continue
			}
			if err != nil {
				// Only an explicit GPU that does not fit may fail.
				if gpu >= 0 && (gpu >= len(s.GPUs(i)) || s.GPUs(i)[gpu] < r.Milli) {
					continue
				}
				t.Fatalf("step %d: allocate failed where Fits is true: %v", step, err)
			}
			held = append(held, a)
		}
		checkInvariants(t, s)
	}
	for _, a := range held {
		s.release(a)
	}
	if got := snapState(s); !reflect.DeepEqual(got, empty) {
		t.Fatalf("state after releasing everything differs from the empty state:\n got %+v\nwant %+v", got, empty)
	}
}

func TestMachineDown(t *testing.T) {
	s := NewState(allocCluster(t), 1)
	j := shareJob(100, 100, 100)
	s.setUp(1, false)
	if fits(s, 1, j) || fits(s, 1, cpuJob(1, 1)) {
		t.Fatal("a down machine is feasible")
	}
	// Capacity drops by the machine: 10000-4000 GPU, 96000-32000 CPU.
	if s.CapGPU != 6000 || s.CapCPU != 64000 || s.CapMem != 131072 {
		t.Fatalf("caps %d/%d/%d after down, want 6000/64000/131072", s.CapGPU, s.CapCPU, s.CapMem)
	}
	if s.M[1].Ver != 1 {
		t.Fatalf("Ver[1] = %d, want 1", s.M[1].Ver)
	}
	r := s.Request(&j)
	if _, err := s.allocate(1, &r, -1); err == nil {
		t.Fatal("allocate succeeded on a down machine")
	}
	s.setUp(1, false) // no-op
	if s.CapGPU != 6000 || s.M[1].Ver != 1 {
		t.Fatal("setUp(false) twice changed the state")
	}
	s.setUp(1, true)
	if !fits(s, 1, j) || s.CapGPU != 10000 || s.CapCPU != 96000 {
		t.Fatalf("machine back up: fits %v CapGPU %d CapCPU %d", fits(s, 1, j), s.CapGPU, s.CapCPU)
	}
}

func TestBestFitGPU(t *testing.T) {
	s := NewState(allocCluster(t), 1)
	mustAlloc(t, s, 0, shareJob(1, 1, 700), 1)
	mustAlloc(t, s, 0, shareJob(1, 1, 500), 2)
	mustAlloc(t, s, 0, shareJob(1, 1, 700), 3)
	// GPU free: [1000 300 500 300].
	for _, c := range []struct {
		milli int32
		want  int
	}{
		{1, 1},    // least free: 300 on GPU 1 and 3; first wins
		{300, 1},  // exactly 300
		{301, 2},  // 500
		{500, 2},  // 500
		{501, 0},  // only the free GPU
		{1000, 0}, // only the free GPU
	} {
		if got := s.BestFitGPU(0, c.milli); got != c.want {
			t.Errorf("BestFitGPU(%d) = %d, want %d", c.milli, got, c.want)
		}
	}
	if got := s.BestFitGPU(2, 1); got != -1 {
		t.Errorf("BestFitGPU on a machine without GPUs = %d, want -1", got)
	}
	mustAlloc(t, s, 1, wholeJob(1, 1, 4), -1)
	if got := s.BestFitGPU(1, 1); got != -1 {
		t.Errorf("BestFitGPU on a full machine = %d, want -1", got)
	}
	// Best fit is what allocate uses for gpu -1.
	a := mustAlloc(t, s, 0, shareJob(1, 1, 400), -1)
	if a.GPUMask != 1<<2 {
		t.Fatalf("400 milli went to mask %04b, want GPU 2 (500 free)", a.GPUMask)
	}
}

func TestNewStatePrioDependsOnSeed(t *testing.T) {
	c := handCluster(t,
		mspec{"a", 1000, 1000, 0, ""}, mspec{"b", 1000, 1000, 0, ""}, mspec{"c", 1000, 1000, 0, ""},
		mspec{"d", 1000, 1000, 0, ""}, mspec{"e", 1000, 1000, 0, ""}, mspec{"f", 1000, 1000, 0, ""},
		mspec{"g", 1000, 1000, 0, ""}, mspec{"h", 1000, 1000, 0, ""},
	)
	a, b := NewState(c, 3), NewState(c, 3)
	if !slices.Equal(prios(a), prios(b)) {
		t.Fatal("same seed, different Prio")
	}
	differ := false
	for seed := uint64(4); seed < 10; seed++ {
		if !slices.Equal(prios(a), prios(NewState(c, seed))) {
			differ = true
		}
	}
	if !differ {
		t.Fatal("Prio identical for seeds 3..9")
	}
}

// TestManyModelsUnknownName: Request marks "no known model" with bit 63 of
// the model mask (state.go, Request), and model indices are int8
// (State.model). Neither the loaders nor Cluster.Validate bound the number
// of distinct GPU models, so with 64 models the machine of model index 63
// accepts pods that name only unknown models, and from 65 models on the
// models above 63 cannot be expressed in a mask at all.
func TestManyModelsUnknownName(t *testing.T) {
	var specs []mspec
	for i := range 64 {
		specs = append(specs, mspec{fmt.Sprintf("n%d", i), 1000, 1000, 1, fmt.Sprintf("M%02d", i)})
	}
	c := &Cluster{
		Racks: []Rack{{Name: "r0"}}, Leaves: []Leaf{{Name: "l0"}}, Zones: []Zone{{Name: "z0"}},
	}
	for _, sp := range specs {
		c.Machines = append(c.Machines, newMachine(sp.name, sp.cpu, sp.mem, sp.gpus, sp.model, 0))
	}
	c.finish()
	if err := c.Validate(); err != nil {
		return // rejecting such clusters is a fix
	}
	s := NewState(c, 1)
	j := shareJob(1, 1, 100)
	j.GPUModels = []string{"A100"}
	r := s.Request(&j)
	for i := range c.Machines {
		if s.Fits(i, &r) {
			t.Errorf("a pod asking only for unknown model A100 fits machine %d (model %s)", i, c.Machines[i].GPUModel)
		}
	}
}
