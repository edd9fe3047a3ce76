package env

import (
	"slices"
	"strings"
)

// TaskClass is one group of the target workload M of docs/fgd.md: tasks
// with the same CPU, per-GPU demand, GPU count and allowed models.
type TaskClass struct {
	CPU    int64
	Milli  int32  // d_m
	GPUs   int    // k_m
	Models uint64 // T_m as a mask over Cluster.Models; 0 = any
	Count  int    // tasks of this class in the workload
	Weight float64
}

// TargetWorkload is the typical task mix M that GPU fragmentation is measured
// against.
type TargetWorkload struct {
	Classes []TaskClass
}

// NewTargetWorkload groups jobs by (CPU, per-GPU demand, GPU count, allowed
// models), memory ignored and CPU-only jobs included, sorts the groups by
// count (descending; ties by the group key so the result is deterministic),
// keeps the smallest prefix covering at least 95% of the jobs and weights
// each kept group by its share of the prefix.
func NewTargetWorkload(jobs []Job, s *State) *TargetWorkload {
	type key struct {
		cpu    int64
		milli  int32
		gpus   int
		models uint64
	}
	counts := map[key]int{}
	for i := range jobs {
		r := s.Request(&jobs[i])
		counts[key{r.CPU, r.Milli, r.GPUs, r.Models}]++
	}
	classes := make([]TaskClass, 0, len(counts))
	for k, n := range counts {
		classes = append(classes, TaskClass{CPU: k.cpu, Milli: k.milli, GPUs: k.gpus, Models: k.models, Count: n})
	}
	slices.SortFunc(classes, func(a, b TaskClass) int {
		switch {
		case a.Count != b.Count:
			return b.Count - a.Count
		case a.CPU != b.CPU:
			return cmpInt(a.CPU, b.CPU)
		case a.Milli != b.Milli:
			return cmpInt(a.Milli, b.Milli)
		case a.GPUs != b.GPUs:
			return a.GPUs - b.GPUs
		default:
			return cmpInt(a.Models, b.Models)
		}
	})
	total := len(jobs)
	covered := 0
	keep := 0
	for keep < len(classes) && float64(covered) < 0.95*float64(total) {
		covered += classes[keep].Count
		keep++
	}
	classes = classes[:keep]
	for i := range classes {
		classes[i].Weight = float64(classes[i].Count) / float64(covered)
	}
	return &TargetWorkload{Classes: classes}
}

func cmpInt[T int64 | int32 | uint64 | int](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// String describes the workload's classes compactly (for logs and reports).
func (tw *TargetWorkload) String() string {
	var b strings.Builder
	for i, c := range tw.Classes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(formatClass(c))
	}
	return b.String()
}

func formatClass(c TaskClass) string {
	return strings.Join([]string{itoa(c.CPU) + "m", itoa(int64(c.GPUs)) + "x" + itoa(int64(c.Milli)), ftoa(c.Weight)}, "/")
}

// NodeFrag returns F_n(M) for a machine with free CPU cpu, GPU model index
// model and per-GPU free milli gpus (docs/fgd.md, "Fragmentation").
//
// For a class with per-GPU demand d the GPUs with at least d free are the
// first of the free amounts sorted in decreasing order, so one sort and
// prefix sums give every class's fit count and sliver in a short scan,
// instead of a pass over the GPUs per class. The integer sums are exact,
// and the weighted float sum runs in class order as before, so the
// result is the same to the bit (TestNodeFragSorted).
func (tw *TargetWorkload) NodeFrag(cpu int64, model int, gpus []int32) float64 {
	if len(gpus) == 0 {
		return 0
	}
	if len(gpus) > maxSortedGPUs {
		return tw.nodeFragLoop(cpu, model, gpus)
	}
	var sorted [maxSortedGPUs]int32
	var top [maxSortedGPUs + 1]int64 // top[k]: the k largest free amounts summed
	n := len(gpus)
	for k, g := range gpus { // insertion sort, decreasing
		j := k
		for ; j > 0 && sorted[j-1] < g; j-- {
			sorted[j] = sorted[j-1]
		}
		sorted[j] = g
	}
	for k := 0; k < n; k++ {
		top[k+1] = top[k] + int64(sorted[k])
	}
	idle := top[n]
	f := 0.0
	for ci := range tw.Classes {
		c := &tw.Classes[ci]
		frag := idle
		if c.canUse(cpu, model) {
			fits := 0
			for fits < n && sorted[fits] >= c.Milli {
				fits++
			}
			if fits >= c.GPUs {
				frag = idle - top[fits] // the GPUs below the demand
			}
		}
		f += c.Weight * float64(frag)
	}
	return f
}

// canUse reports whether tasks of class c could run on a machine with free
// CPU cpu and GPU model index model, GPUs permitting: only then can its
// GPUs be fragmented for c (otherwise all its idle GPU is).
func (c *TaskClass) canUse(cpu int64, model int) bool {
	return c.GPUs > 0 && (c.Models == 0 || (model >= 0 && c.Models&(1<<uint(model)) != 0)) && cpu >= c.CPU
}

// maxSortedGPUs bounds the machines NodeFrag sorts on the stack; larger
// ones take nodeFragLoop.
const maxSortedGPUs = 64

// nodeFragLoop is NodeFrag as docs/fgd.md states it: per class, one
// pass over the GPUs.
func (tw *TargetWorkload) nodeFragLoop(cpu int64, model int, gpus []int32) float64 {
	var idle int64
	for _, g := range gpus {
		idle += int64(g)
	}
	f := 0.0
	for ci := range tw.Classes {
		c := &tw.Classes[ci]
		frag := idle
		if c.canUse(cpu, model) {
			fits := 0
			var sliver int64
			for _, g := range gpus {
				if g >= c.Milli {
					fits++
				} else {
					sliver += int64(g)
				}
			}
			if fits >= c.GPUs {
				frag = sliver
			}
		}
		f += c.Weight * float64(frag)
	}
	return f
}

// MachineFrag returns F_n(M) of machine i in its current state; a machine
// that is down contributes nothing.
func (s *State) MachineFrag(i int) float64 {
	if s.Target == nil || !s.M[i].Up {
		return 0
	}
	return s.Target.NodeFrag(s.M[i].FreeCPU, int(s.M[i].model), s.GPUs(i))
}

// Fragmentation returns the cluster fragmentation F(M) in milli-GPU and the
// fragmentation ratio F(M) / Σ U_n (0 when no GPU is idle).
func (s *State) Fragmentation() (frag, ratio float64) {
	var idle int64
	for i := range s.M {
		if !s.M[i].Up {
			continue
		}
		frag += s.MachineFrag(i)
		idle += int64(s.M[i].IdleGPU)
	}
	if idle > 0 {
		ratio = frag / float64(idle)
	}
	return frag, ratio
}
