package env

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// satCluster: four 4-GPU V100M16 machines and two 2-GPU T4 machines:
// capacity 20 GPUs = 20000 milli.
func satCluster(t testing.TB) *Cluster {
	return handCluster(t,
		mspec{"v0", 64000, 262144, 4, "V100M16"},
		mspec{"v1", 64000, 262144, 4, "V100M16"},
		mspec{"v2", 32000, 131072, 4, "V100M16"},
		mspec{"v3", 32000, 131072, 4, "V100M16"},
		mspec{"t0", 16000, 65536, 2, "T4"},
		mspec{"t1", 16000, 65536, 2, "T4"},
	)
}

// satTrace is a small mixed trace: shares, whole GPUs, CPU-only pods and a
// model constraint. GPU demand: shares 3810 + whole 11000 + T4 share 400 =
// 15210 milli, 76% of satCluster.
func satTrace() []Job {
	var jobs []Job
	add := func(j Job) {
		j.ID = len(jobs)
		j.Name = fmt.Sprintf("p%02d", len(jobs))
		jobs = append(jobs, j)
	}
	for _, m := range []int{200, 300, 460, 500, 500, 700, 900, 250} {
		add(shareJob(4000, 8192, m))
	}
	for _, k := range []int{1, 1, 2, 4, 1, 2} {
		add(wholeJob(8000*int64(k), 16384, k))
	}
	add(cpuJob(6000, 4096))
	add(cpuJob(12000, 4096))
	t4 := shareJob(2000, 4096, 400)
	t4.GPUModels = []string{"T4"}
	add(t4)
	return jobs
}

func gpuDemand(jobs []Job) int64 {
	var d int64
	for i := range jobs {
		d += jobs[i].GPUDemand()
	}
	return d
}

// satSchedulers are the schedulers that work without a TEG simulation
// (SchedulerNames may grow schedulers that need one).
var satSchedulers = []string{"random", "bestfit", "dotprod", "packing", "clustering", "fgd", "kube", "p2c"}

func TestSaturateDeterministic(t *testing.T) {
	c := satCluster(t)
	trace := satTrace()
	for _, name := range satSchedulers {
		run := func(seed uint64) SaturationRun {
			sched, _ := NewScheduler(name)
			r, err := Saturate(c, trace, sched, seed, 1.3)
			if err != nil {
				t.Fatalf("%s seed %d: %v", name, seed, err)
			}
			return r
		}
		a, b := run(5), run(5)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs with seed 5 differ", name)
		}
		if d := run(6); reflect.DeepEqual(a.Bins, d.Bins) {
			t.Errorf("%s: seeds 5 and 6 give the same bins", name)
		}
		// A scheduler instance reused across runs (FGD keeps caches) gives
		// the same result as a fresh one.
		sched, _ := NewScheduler(name)
		if _, err := Saturate(c, trace, sched, 6, 1.3); err != nil {
			t.Fatal(err)
		}
		again, err := Saturate(c, trace, sched, 5, 1.3)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, again) {
			t.Errorf("%s: a reused scheduler instance gives a different run", name)
		}
		checkRun(t, name, a, c, trace)
	}
}

// checkRun checks the structural invariants of a saturation run.
func checkRun(t *testing.T, name string, r SaturationRun, c *Cluster, trace []Job) {
	t.Helper()
	if r.Scheduler != name || len(r.Bins) != SaturationBins {
		t.Fatalf("%s: scheduler %q, %d bins", name, r.Scheduler, len(r.Bins))
	}
	if want := len(SaturationPods(trace, int64(c.TotalGPUs())*MilliGPU, 1.3, r.Seed)); r.Pods != want {
		t.Fatalf("%s: %d pods, SaturationPods gives %d", name, r.Pods, want)
	}
	if r.Dropped < 0 || r.Dropped > r.Pods {
		t.Fatalf("%s: dropped %d of %d", name, r.Dropped, r.Pods)
	}
	for k, b := range r.Bins {
		if b.ArrivalPct != k {
			t.Fatalf("%s: bin %d has ArrivalPct %d", name, k, b.ArrivalPct)
		}
		// Pods never finish: allocation only grows. F(M) <= idle milli, so
		// FragPct + AllocPct <= 100 and FragRatio <= 100.
		if k > 0 && b.AllocPct < r.Bins[k-1].AllocPct {
			t.Fatalf("%s: allocation falls from %v to %v at bin %d", name, r.Bins[k-1].AllocPct, b.AllocPct, k)
		}
		if b.AllocPct < 0 || b.AllocPct > 100 || b.FragPct < 0 || b.FragPct+b.AllocPct > 100+1e-9 || b.FragRatio < 0 || b.FragRatio > 100+1e-9 {
			t.Fatalf("%s: bin %d out of range: %+v", name, k, b)
		}
	}
	if r.Bins[0].AllocPct != 0 {
		t.Fatalf("%s: bin 0 allocation %v", name, r.Bins[0].AllocPct)
	}
}

// TestSaturateReplay replays a run of each deterministic scheduler step by
// step and checks the recorded bins against values recomputed from the
// state: allocation from UsedGPU, fragmentation from State.Fragmentation
// (Saturate keeps both incrementally).
func TestSaturateReplay(t *testing.T) {
	c := satCluster(t)
	trace := satTrace()
	for _, name := range []string{"bestfit", "dotprod", "packing", "clustering", "fgd", "kube"} {
		sched, _ := NewScheduler(name)
		const seed = 9
		run, err := Saturate(c, trace, sched, seed, 1.3)
		if err != nil {
			t.Fatal(err)
		}
		s := NewState(c, seed)
		s.Target = NewTargetWorkload(trace, s)
		capf := float64(s.CapGPU)
		pods := SaturationPods(trace, s.CapGPU, 1.3, seed)
		replay, _ := NewScheduler(name)
		var bins []SaturationBin
		rec := func() {
			f, ratio := s.Fragmentation()
			bins = append(bins, SaturationBin{ArrivalPct: len(bins), AllocPct: 100 * float64(s.UsedGPU) / capf, FragPct: 100 * f / capf, FragRatio: 100 * ratio})
		}
		rec()
		var arrived int64
		dropped := 0
		for k := range pods {
			j := &pods[k]
			obs := Observation{State: s, Job: j, Req: s.Request(j), Queue: 1}
			a := replay.Decide(&obs, nil)
			if a.Node >= 0 {
				if _, err := s.allocate(a.Node, &obs.Req, a.GPU); err != nil {
					t.Fatal(err)
				}
			} else {
				dropped++
			}
			arrived += j.GPUDemand()
			for len(bins) < SaturationBins && float64(arrived)*100 >= float64(len(bins))*capf {
				rec()
			}
		}
		for len(bins) < SaturationBins {
			rec()
		}
		if dropped != run.Dropped {
			t.Errorf("%s: replay dropped %d, run %d", name, dropped, run.Dropped)
		}
		for k := range bins {
			g, w := run.Bins[k], bins[k]
			if g.AllocPct != w.AllocPct || math.Abs(g.FragPct-w.FragPct) > 1e-9 || math.Abs(g.FragRatio-w.FragRatio) > 1e-9 {
				t.Fatalf("%s bin %d: run %+v, replay %+v", name, k, g, w)
			}
		}
	}
}

// TestSaturateHandComputed: one 2-GPU machine (capacity 2000 milli), three
// 1-GPU pods and one CPU pod, no tuning. The target workload: whole 1-GPU
// (3 of 4 pods, weight 3/4) and CPU-only (weight 1/4).
//
//	bin 0, empty: U = 2000; whole fits, no slivers -> 0; CPU-only -> U:
//	   F = 500 -> FragPct 25, ratio 500/2000 = 25%
//	first GPU pod: arrived 1000 = 50% -> bins 1..50: alloc 50%, U = 1000,
//	   F = 250 -> FragPct 12.5, ratio 25%
//	second: 100% -> bins 51..100: alloc 100%, U = 0 -> F 0, ratio 0
//	third: dropped; 150% -> bins 101..130 as bin 100.
//
// The CPU pod adds no arrival, and 1000m of 32000m never limits the GPU
// pods, so the shuffle order does not matter and every scheduler must give
// these bins.
func TestSaturateHandComputed(t *testing.T) {
	c := handCluster(t, mspec{"a", 32000, 65536, 2, "V100M16"})
	trace := []Job{wholeJob(1000, 1000, 1), wholeJob(1000, 1000, 1), wholeJob(1000, 1000, 1), cpuJob(1000, 1000)}
	for i := range trace {
		trace[i].Name = fmt.Sprint("p", i)
	}
	for _, name := range satSchedulers {
		sched, _ := NewScheduler(name)
		r, err := Saturate(c, trace, sched, 3, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Pods != 4 || r.Dropped != 1 {
			t.Errorf("%s: %d pods %d dropped, want 4 1", name, r.Pods, r.Dropped)
		}
		for k, b := range r.Bins {
			want := SaturationBin{ArrivalPct: k}
			switch {
			case k == 0:
				want.FragPct, want.FragRatio = 25, 25
			case k <= 50:
				want.AllocPct, want.FragPct, want.FragRatio = 50, 12.5, 25
			default:
				want.AllocPct = 100
			}
			if b != want {
				t.Errorf("%s bin %d: %+v, want %+v", name, k, b, want)
				break
			}
		}
	}
	// A cluster without GPUs is an error.
	cpu := handCluster(t, mspec{"c", 1000, 1000, 0, ""})
	if _, err := Saturate(cpu, trace, &BestFit{}, 1, 1.3); err == nil {
		t.Error("Saturate on a cluster without GPUs: no error")
	}
}

func names(jobs []Job) []string {
	var n []string
	for i := range jobs {
		n = append(n, jobs[i].Name)
	}
	return n
}

func TestSaturationPodsAppend(t *testing.T) {
	// Four 1-GPU pods (4000) on 8000 milli with tune 1.3: target 10400.
	// Each draw adds 1000 while 1000 more stays <= 10400: six appended
	// (10000); the seventh would make 11000 > 10400.
	var trace []Job
	for i := range 4 {
		j := wholeJob(1, 1, 1)
		j.Name, j.ID = fmt.Sprint("w", i), 100+i
		trace = append(trace, j)
	}
	orig := slices.Clone(trace)
	pods := SaturationPods(trace, 8000, 1.3, 1)
	if len(pods) != 10 || gpuDemand(pods) != 10000 {
		t.Fatalf("%d pods, demand %d, want 10 and 10000", len(pods), gpuDemand(pods))
	}
	if !reflect.DeepEqual(trace, orig) {
		t.Fatal("SaturationPods modified the trace")
	}
	first := names(pods[:4])
	slices.Sort(first)
	if !slices.Equal(first, []string{"w0", "w1", "w2", "w3"}) {
		t.Fatalf("first four pods %v are not the trace", names(pods[:4]))
	}
	for k, p := range pods {
		if p.ID != k {
			t.Fatalf("pod %d has ID %d", k, p.ID)
		}
		if k >= 4 && !strings.HasSuffix(p.Name, fmt.Sprintf("-tuned-%d", k-4)) {
			t.Fatalf("appended pod %d is named %q", k, p.Name)
		}
	}
	if !reflect.DeepEqual(pods, SaturationPods(trace, 8000, 1.3, 1)) {
		t.Fatal("same seed, different pods")
	}

	// Shares of 300 and 700 on 1000 milli, target 1300: the first draw
	// decides: 300 -> 1300 <= 1300 appended and the loop ends (total not
	// below target); 700 -> 1700 > 1300 stops without appending.
	trace = []Job{shareJob(1, 1, 300), shareJob(1, 1, 700)}
	trace[0].Name, trace[1].Name = "s300", "s700"
	seen := map[int]int{}
	for seed := range uint64(40) {
		pods := SaturationPods(trace, 1000, 1.3, seed)
		d := gpuDemand(pods)
		switch {
		case len(pods) == 2 && d == 1000:
		case len(pods) == 3 && d == 1300 && pods[2].Name == "s300-tuned-0":
		default:
			t.Fatalf("seed %d: %v demand %d", seed, names(pods), d)
		}
		seen[len(pods)]++
	}
	if seen[2] == 0 || seen[3] == 0 {
		t.Fatalf("outcomes %v: both stop paths should occur over 40 seeds", seen)
	}

	// The protocol's quirk: the stop test adds only gpu_milli. One 4-GPU
	// pod (4000) on 8000, target 10400: 4000+1000 <= 10400 -> 8000;
	// 8000+1000 <= 10400 -> 12000; 12000 >= target ends the loop. The
	// total passes 1.3 x capacity.
	pods = SaturationPods([]Job{wholeJob(1, 1, 4)}, 8000, 1.3, 7)
	if len(pods) != 3 || gpuDemand(pods) != 12000 {
		t.Fatalf("quirk: %d pods demand %d, want 3 and 12000", len(pods), gpuDemand(pods))
	}
}

func removeTrace() []Job {
	var trace []Job
	for i := range 10 {
		j := wholeJob(1, 1, 1)
		j.Name = fmt.Sprint("w", i)
		trace = append(trace, j)
	}
	trace = append(trace, cpuJob(1, 1), cpuJob(1, 1))
	trace[10].Name, trace[11].Name = "c0", "c1"
	return trace
}

func TestSaturationPodsRemove(t *testing.T) {
	// Ten 1-GPU pods and two CPU pods (10000 milli) on 4000, target 5200:
	// random pods are removed until the demand is <= 5200: five GPU pods
	// remain (5000), all from the trace, none repeated.
	trace := removeTrace()
	for seed := range uint64(20) {
		pods := SaturationPods(trace, 4000, 1.3, seed)
		gpu := 0
		seen := map[string]bool{}
		for k, p := range pods {
			if p.ID != k {
				t.Fatalf("seed %d: pod %d has ID %d", seed, k, p.ID)
			}
			if p.GPUs > 0 {
				if seen[p.Name] || !strings.HasPrefix(p.Name, "w") || len(p.Name) != 2 {
					t.Fatalf("seed %d: GPU pod %d %q repeated or appended", seed, k, p.Name)
				}
				seen[p.Name] = true
				gpu++
			}
		}
		if gpu != 5 || gpuDemand(pods) != 5000 {
			t.Fatalf("seed %d: %d GPU pods, demand %d, want 5 and 5000", seed, gpu, gpuDemand(pods))
		}
	}
	// tune <= 0: the shuffled trace, nothing added or removed.
	a, b := SaturationPods(trace, 4000, 0, 1), SaturationPods(trace, 4000, 0, 2)
	sa, sb := names(a), names(b)
	if slices.Equal(sa, sb) {
		t.Fatal("seeds 1 and 2 shuffle alike")
	}
	slices.Sort(sa)
	want := names(trace)
	slices.Sort(want)
	if !slices.Equal(sa, want) {
		t.Fatalf("tune 0: %v is not a permutation of the trace", names(a))
	}
}

// TestSaturationPodsRemoveOnly: when the trace exceeds the target, the FGD
// simulator (TunePodsByNodeTotalResource) only removes pods (tuneDownPods);
// it never appends afterwards, and SaturationPods' doc says "removed
// instead". saturate.go runs its append loop after the removal loop, so
// when removal lands below the target, CPU-only draws (gpu_milli 0) and
// small shares are appended as "-tuned-N" pods (seed 7 here appends c1).
func TestSaturationPodsRemoveOnly(t *testing.T) {
	trace := removeTrace()
	for seed := range uint64(20) {
		for _, p := range SaturationPods(trace, 4000, 1.3, seed) {
			if strings.Contains(p.Name, "-tuned-") {
				t.Fatalf("seed %d: pod %q appended after removal", seed, p.Name)
			}
		}
	}
}

// TestSaturationFGDOrdering runs the FGD protocol's six schedulers on the
// bundled trace's GPU machines for seeds 42..44 and checks the paper's
// ordering of the allocation at 130% arrival where it holds with margin.
func TestSaturationFGDOrdering(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 18 saturation runs on the full trace")
	}
	nodes := bundled
	podsPath := bundled
	c, err := LoadAlibabaGPUNodes(nodes)
	if err != nil {
		t.Fatal(err)
	}
	w, err := LoadAlibabaGPUPods(podsPath, GPUTraceOptions{Compress: 1})
	if err != nil {
		t.Fatal(err)
	}
	g := c.GPUMachines()
	scheds := []string{"random", "bestfit", "dotprod", "packing", "clustering", "fgd"}
	// 18 independent runs over a shared read-only cluster and trace, on
	// all cores (this also lets -race check that Saturate shares nothing).
	alloc := make([][3]float64, len(scheds))
	errs := make([]error, len(scheds)*3)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for k, name := range scheds {
		for d := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				sched, _ := NewScheduler(name)
				r, err := Saturate(g, w.Jobs, sched, uint64(42+d), 1.3)
				errs[3*k+d] = err
				if err == nil {
					alloc[k][d] = r.Bins[130].AllocPct
				}
			}()
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	mean := map[string]float64{}
	for k, name := range scheds {
		a := alloc[k]
		mean[name] = (a[0] + a[1] + a[2]) / 3
		t.Logf("%-10s allocation at 130%%: seeds 42..44 %.2f %.2f %.2f, mean %.2f%%", name, a[0], a[1], a[2], mean[name])
	}
	for _, o := range []struct {
		hi, lo string
		margin float64
	}{
		{"fgd", "bestfit", 1},
		{"bestfit", "packing", 0.5},
		{"bestfit", "clustering", 0.5},
		{"packing", "random", 2},
		{"clustering", "random", 2},
		{"dotprod", "random", 2},
	} {
		if mean[o.hi] < mean[o.lo]+o.margin {
			t.Errorf("%s %.2f%% is not above %s %.2f%% by %.1f points", o.hi, mean[o.hi], o.lo, mean[o.lo], o.margin)
		}
	}
}
