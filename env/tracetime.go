package env

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// TraceWindow selects the jobs of a trace that arrive in [Start,
// Start+Length), in the trace's own seconds (before compression). A zero
// Length means to the trace's end.
type TraceWindow struct {
	Start, Length float64
}

func (tw TraceWindow) validate() error {
	switch {
	case !(tw.Start >= 0) || math.IsInf(tw.Start, 0):
		return fmt.Errorf("window start %v s must be a non-negative number", tw.Start)
	case !(tw.Length >= 0) || math.IsInf(tw.Length, 0):
		return fmt.Errorf("window length %v s must be a non-negative number", tw.Length)
	}
	return nil
}

func (tw TraceWindow) contains(t float64) bool {
	return t >= tw.Start && (tw.Length == 0 || t < tw.Start+tw.Length)
}

// String writes the window as the trace seconds it spans.
func (tw TraceWindow) String() string {
	end := "the end"
	if tw.Length > 0 {
		end = strconv.FormatFloat(tw.Start+tw.Length, 'f', -1, 64) + " s"
	}
	return "the window from " + strconv.FormatFloat(tw.Start, 'f', -1, 64) + " s to " + end
}

func checkCompress(file string, c float64) error {
	if !(c > 0) || math.IsInf(c, 0) {
		return fmt.Errorf("%s: time compression %v must be a positive number", file, c)
	}
	return nil
}

// finishTrace turns the raw trace times of w's jobs into simulation time:
// jobs sorted by arrival (file order among equal times), time starting at
// the first arrival (a trace that begins late is not preceded by idle
// days), every time divided by compress, a job lasting at least one
// simulated second (the simulator's own floor: slowdown divides by
// max(duration, 1 s), so a shorter job would report a slowdown below 1),
// and SLAs from the compressed durations.
func finishTrace(w *Workload, compress float64, sla SLAPolicy) {
	sortByArrival(w)
	t0 := w.Jobs[0].Arrival
	for i := range w.Jobs {
		j := &w.Jobs[i]
		j.Arrival = (j.Arrival - t0) / compress
		j.Duration = max(j.Duration/compress, 1)
		sla.apply(j)
	}
}

// TraceLoad is the offered load of a trace workload on a cluster over its
// active window, from the first arrival to the last: the work (resource ×
// seconds) its jobs ask for inside the window, each job counted from its
// arrival to its end or the window's end, as a fraction of the capacity over
// the window.
type TraceLoad struct {
	SpanS    float64 // the active window's length (simulated seconds)
	CPU, GPU float64 // offered load of each resource
	Jobs     int
}

// Offered is the busier resource's offered load, the measure the synthetic
// workload's --load sets.
func (l TraceLoad) Offered() float64 { return max(l.CPU, l.GPU) }

// OfferedLoad measures w's offered load on c (see TraceLoad). A workload
// whose jobs all arrive at one instant has no window and no load.
func OfferedLoad(w *Workload, c *Cluster) TraceLoad {
	l := TraceLoad{Jobs: len(w.Jobs)}
	if len(w.Jobs) == 0 {
		return l
	}
	t0, t1 := w.Jobs[0].Arrival, w.Jobs[0].Arrival
	for i := range w.Jobs {
		t0, t1 = min(t0, w.Jobs[i].Arrival), max(t1, w.Jobs[i].Arrival)
	}
	l.SpanS = t1 - t0
	capCPU, capGPU := clusterCapacity(c)
	if l.SpanS <= 0 {
		return l
	}
	var cpu, gpu float64
	for i := range w.Jobs {
		c, g := jobWork(&w.Jobs[i], t1)
		cpu += c
		gpu += g
	}
	if capCPU > 0 {
		l.CPU = cpu / (capCPU * l.SpanS)
	}
	if capGPU > 0 {
		l.GPU = gpu / (capGPU * l.SpanS)
	}
	return l
}

func clusterCapacity(c *Cluster) (cpu, gpu float64) {
	for i := range c.Machines {
		cpu += float64(c.Machines[i].CPU)
		gpu += float64(c.Machines[i].GPUs * MilliGPU)
	}
	return cpu, gpu
}

// jobWork is the CPU and GPU work job j asks for before time end.
func jobWork(j *Job, end float64) (cpu, gpu float64) {
	d := max(min(j.Duration, end-j.Arrival), 0)
	return float64(j.CPU) * d, float64(j.GPUDemand()) * d
}

// MaxScaledJobs bounds the jobs ScaleTraceLoad may produce, so that a
// target far above a sparse trace's load fails fast instead of building
// millions of jobs.
const MaxScaledJobs = 2_000_000

// ScaleTraceLoad returns a copy of trace workload w whose offered load on c
// (OfferedLoad) is target, by seeded resampling of the trace's own jobs, in
// the manner of the inflation of Weng et al., "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent"
// (USENIX ATC 2023), carried over to time. Below the trace's load it thins
// the trace: jobs are kept in a seeded random order until the kept work
// reaches the target. Above it every job is kept and copies are added, each
// the shape (resources, duration, kind) of a uniformly drawn trace job
// arriving at the arrival time of another uniformly drawn one, so that the
// arrival-time profile (daily cycles, bursts) is the trace's own, until
// the target is reached. The same seed gives the same jobs.
func ScaleTraceLoad(w *Workload, c *Cluster, target float64, seed uint64) (*Workload, error) {
	if !(target > 0) || target > 100 {
		return nil, fmt.Errorf("trace load %v must be in (0, 100]", target)
	}
	l := OfferedLoad(w, c)
	if l.SpanS <= 0 || l.Offered() <= 0 {
		return nil, fmt.Errorf("%s: no offered load to scale (its %d jobs span %v s and ask %v of the cluster)", w.Name, len(w.Jobs), l.SpanS, l.Offered())
	}
	capCPU, capGPU := clusterCapacity(c)
	t0 := w.Jobs[0].Arrival
	end := t0 + l.SpanS
	load := func(cpu, gpu float64) float64 {
		v := 0.0
		if capCPU > 0 {
			v = cpu / (capCPU * l.SpanS)
		}
		if capGPU > 0 {
			v = max(v, gpu/(capGPU*l.SpanS))
		}
		return v
	}
	rng := rand.New(rand.NewPCG(seed, 0x7465672d6c6f6164)) // "teg-load"
	out := &Workload{Name: w.Name}
	var cpu, gpu float64
	if target <= l.Offered() {
		for _, k := range rng.Perm(len(w.Jobs)) {
			if load(cpu, gpu) >= target {
				break
			}
			j := w.Jobs[k]
			c, g := jobWork(&j, end)
			cpu, gpu = cpu+c, gpu+g
			out.Jobs = append(out.Jobs, j)
		}
	} else {
		out.Jobs = append(make([]Job, 0, len(w.Jobs)), w.Jobs...)
		for i := range w.Jobs {
			c, g := jobWork(&w.Jobs[i], end)
			cpu, gpu = cpu+c, gpu+g
		}
		for copies := 0; load(cpu, gpu) < target; copies++ {
			if len(out.Jobs) >= MaxScaledJobs {
				return nil, fmt.Errorf("%s: load %v needs more than %d jobs (the trace offers %.4f over %.0f s); cut a shorter --window or ask less", w.Name, target, MaxScaledJobs, l.Offered(), l.SpanS)
			}
			j := w.Jobs[rng.IntN(len(w.Jobs))]
			shift := w.Jobs[rng.IntN(len(w.Jobs))].Arrival - j.Arrival
			j.Arrival += shift
			j.Name += "+" + strconv.Itoa(copies)
			c, g := jobWork(&j, end)
			cpu, gpu = cpu+c, gpu+g
			out.Jobs = append(out.Jobs, j)
		}
	}
	sortByArrival(out)
	// Time keeps starting at the first arrival after thinning.
	if first := out.Jobs[0].Arrival; first > t0 {
		for i := range out.Jobs {
			out.Jobs[i].Arrival -= first - t0
		}
	}
	return out, nil
}
