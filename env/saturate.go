package env

import (
	"fmt"
	"math/rand/v2"
)

// The FGD saturation experiment (docs/fgd.md, "Saturation protocol"):
// pods arrive one at a time and never finish, until the submitted GPU
// demand reaches Tune x the cluster's GPU capacity; a pod that fits nowhere
// is dropped. The GPU allocation ratio along the arrival axis tells how well
// a policy avoids fragmentation.

// SaturationBins is the number of 1% arrival bins, 0% to 130% inclusive.
const SaturationBins = 131

// SaturationBin is the cluster state when the arrived GPU demand first
// reached ArrivalPct percent of capacity.
type SaturationBin struct {
	ArrivalPct int     `json:"arrival_pct"`
	AllocPct   float64 `json:"alloc_pct"`      // allocated GPU milli / capacity, %
	FragPct    float64 `json:"frag_pct"`       // F(M) / capacity, %
	FragRatio  float64 `json:"frag_ratio_pct"` // F(M) / idle GPU milli, %
}

// SaturationRun is the outcome of one seed.
type SaturationRun struct {
	Scheduler string          `json:"scheduler"`
	Seed      uint64          `json:"seed"`
	Pods      int             `json:"pods"`
	Dropped   int             `json:"dropped"`
	Bins      []SaturationBin `json:"bins"`
}

// SaturationPods returns the submission sequence of one seed: the trace's
// pods shuffled, then tuned to tune x GPU capacity, exactly as the FGD
// simulator does: pods drawn uniformly with replacement are appended while
// the running total plus the draw's gpu_milli (not num_gpu x gpu_milli, a
// quirk kept for comparability) stays within the target; when the trace
// already exceeds it, random pods are removed instead.
func SaturationPods(trace []Job, capacityMilli int64, tune float64, seed uint64) []Job {
	rng := rand.New(rand.NewPCG(seed, 0x7465672d73617475)) // "teg-satu"
	pods := append([]Job(nil), trace...)
	rng.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	if tune <= 0 {
		return pods
	}
	var total int64
	for i := range pods {
		total += pods[i].GPUDemand()
	}
	target := tune * float64(capacityMilli)
	removed := float64(total) > target
	for float64(total) > target && len(pods) > 0 {
		k := rng.IntN(len(pods))
		total -= pods[k].GPUDemand()
		pods = append(pods[:k], pods[k+1:]...)
	}
	// Append only when the trace is short of the target: the reference
	// either removes or appends, never both.
	for n := 0; !removed && float64(total) < target && len(trace) > 0; n++ {
		p := trace[rng.IntN(len(trace))]
		if float64(total+int64(p.GPUMilli)) > target {
			break
		}
		total += p.GPUDemand()
		p.Name = fmt.Sprintf("%s-tuned-%d", p.Name, n)
		pods = append(pods, p)
	}
	for i := range pods {
		pods[i].ID = i
	}
	return pods
}

// Saturate runs the saturation experiment for one seed on cluster c (the
// protocol uses the GPU machines only; the caller chooses). The typical
// workload for fragmentation is built from trace.
func Saturate(c *Cluster, trace []Job, sched Scheduler, seed uint64, tune float64) (SaturationRun, error) {
	return SaturateObserved(c, trace, sched, seed, tune, nil)
}

// SaturateObserved is Saturate calling after, if not nil, once each pod
// has been placed or dropped, with the pod's index, the GPU milli then
// allocated and the cluster fragmentation F(M) (milli-GPU): what a learner
// on the experiment is rewarded from.
func SaturateObserved(c *Cluster, trace []Job, sched Scheduler, seed uint64, tune float64, after func(pod int, used int64, frag float64)) (SaturationRun, error) {
	s := NewState(c, seed)
	if s.CapGPU == 0 {
		return SaturationRun{}, fmt.Errorf("saturate: cluster has no GPUs")
	}
	s.Target = NewTargetWorkload(trace, s)
	pods := SaturationPods(trace, s.CapGPU, tune, seed)
	rng := rand.New(rand.NewPCG(seed, 0x7465672d73636864)) // "teg-schd"

	// Fragmentation is kept incrementally: a placement changes one machine.
	nodeFrag := make([]float64, len(c.Machines))
	var frag float64
	var idle int64
	for i := range nodeFrag {
		nodeFrag[i] = s.MachineFrag(i)
		frag += nodeFrag[i]
		idle += int64(s.M[i].IdleGPU)
	}
	run := SaturationRun{Scheduler: sched.Name(), Seed: seed, Pods: len(pods), Bins: make([]SaturationBin, 0, SaturationBins)}
	capf := float64(s.CapGPU)
	record := func(bin int) {
		b := SaturationBin{ArrivalPct: bin, AllocPct: 100 * float64(s.UsedGPU) / capf, FragPct: 100 * frag / capf}
		if idle > 0 {
			b.FragRatio = 100 * frag / float64(idle)
		}
		run.Bins = append(run.Bins, b)
	}
	record(0)
	var arrived int64
	obs := Observation{State: s, Queue: 1}
	for k := range pods {
		j := &pods[k]
		obs.Job, obs.Req = j, s.Request(j)
		a := sched.Decide(&obs, rng)
		if a.Node >= 0 {
			gpu := a.GPU
			if !obs.Req.Share() {
				gpu = -1
			}
			if _, err := s.allocate(a.Node, &obs.Req, gpu); err != nil {
				return run, fmt.Errorf("saturate: %s placed pod %s infeasibly: %w", sched.Name(), j.Name, err)
			}
			i := a.Node
			frag -= nodeFrag[i]
			nodeFrag[i] = s.MachineFrag(i)
			frag += nodeFrag[i]
			idle -= obs.Req.GPUDemand()
		} else {
			run.Dropped++
		}
		arrived += j.GPUDemand()
		if after != nil {
			after(k, s.UsedGPU, frag)
		}
		for len(run.Bins) < SaturationBins && float64(arrived)*100 >= float64(len(run.Bins))*capf {
			record(len(run.Bins))
		}
	}
	for len(run.Bins) < SaturationBins {
		record(len(run.Bins))
	}
	return run, nil
}

// SaturationTrace is the input of the saturation experiment: the Alibaba
// GPU trace's node table, its GPU machines (the experiment's cluster) and
// its pods.
type SaturationTrace struct {
	All     *Cluster // every machine of the node table
	Cluster *Cluster // the machines with a GPU
	Jobs    []Job
}

// LoadSaturationTrace reads the node and pod tables at nodes and pods
// (uncompressed times).
func LoadSaturationTrace(nodes, pods string) (SaturationTrace, error) {
	full, err := LoadAlibabaGPUNodes(nodes)
	if err != nil {
		return SaturationTrace{}, fmt.Errorf("nodes %s: %w", nodes, err)
	}
	c := full.GPUMachines()
	if len(c.Machines) == 0 {
		return SaturationTrace{}, fmt.Errorf("nodes %s: no machine has a GPU", nodes)
	}
	w, err := LoadAlibabaGPUPods(pods, GPUTraceOptions{Compress: 1})
	if err != nil {
		return SaturationTrace{}, fmt.Errorf("pods %s: %w", pods, err)
	}
	return SaturationTrace{All: full, Cluster: c, Jobs: w.Jobs}, nil
}
