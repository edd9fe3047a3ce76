package env

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// Request is a job's resource demand resolved against one cluster: the
// model list becomes a bit mask so that the feasibility test in the
// schedulers' inner loop compares integers only.
type Request struct {
	CPU    int64
	Mem    int64
	GPUs   int    // k
	Milli  int32  // per-GPU demand d: 1000 whole, < 1000 share, 0 CPU-only
	Models uint64 // allowed models as bits of Cluster.Models; 0 = any
	Class  int    // GPU class for clustering: 0 none, 1 share, 1+k for k whole GPUs
}

// Share reports whether the request takes part of one GPU.
func (r *Request) Share() bool { return r.GPUs == 1 && r.Milli < MilliGPU }

// GPUDemand is k·d.
func (r *Request) GPUDemand() int64 { return int64(r.GPUs) * int64(r.Milli) }

// gpuClass returns the GPU class used by GPU clustering: share pods,
// 1, 2, 4, 8 (any k) whole GPUs, or none.
func gpuClass(gpus int, milli int32) int {
	switch {
	case gpus == 0:
		return 0
	case gpus == 1 && milli < MilliGPU:
		return 1
	default:
		return 1 + gpus
	}
}

const numGPUClasses = 2 + MaxGPUsPerMachine

// Alloc records what one placed job holds, so that it can be released.
type Alloc struct {
	Machine int
	CPU     int64
	Mem     int64
	Milli   int32  // per GPU
	GPUMask uint32 // GPUs of the machine used
	Class   int
}

// MachineState is one machine's dynamic counters.
type MachineState struct {
	FreeCPU int64 // millicores not allocated
	FreeMem int64 // MiB not allocated
	IdleGPU int32 // U_n: Σ free milli of its GPUs
	// FullFree counts its fully free GPUs.
	FullFree int32
	// Ver changes whenever the machine's free resources change; schedulers
	// key caches on it.
	Ver uint32
	// Prio is the fixed random tie-break order of a run: on equal scores
	// the machine with the lower Prio wins.
	Prio  int32
	gpuLo int32 // first GPU in GPUFree
	njobs int32 // jobs placed
	gpuN  int8  // GPUs
	model int8  // model index, -1 without GPUs
	// nclass counts the distinct GPU classes present.
	nclass int8
	Up     bool
	_      [20]byte // pad to 64 bytes: one record, one cache line
}

// State is the dynamic allocation state of a cluster: free resources per
// machine and per GPU, machine health, and the derived counters the
// schedulers read. Schedulers only read it; the simulation loop mutates it.
type State struct {
	C *Cluster

	// M holds the per-machine counters, one record per machine: a
	// scheduler's candidate check reads one or two cache lines instead of
	// one line in each of a dozen arrays (the difference between 1k and
	// 100k machines is memory latency, not work).
	M []MachineState
	// gpuBase[i] is the offset of machine i's GPUs in GPUFree/GPUUsers.
	gpuBase  []int32
	GPUFree  []int32  // free milli per GPU
	GPUUsers []uint16 // jobs on each GPU (sharers)
	// classes[i*numGPUClasses+c] counts GPU jobs of class c on machine i.
	classes []int32
	// Target is the typical workload used to measure GPU fragmentation.
	Target *TargetWorkload
	// guard, when set, is an extra admission filter: the simulation's
	// safety layer. Schedulers see it through Admit, so the barrier is a
	// filter like kube-scheduler's, and each policy's choice is its own best
	// among the safe machines (the projection onto the safe set).
	guard func(i int, r *Request) bool

	// Cluster totals, maintained incrementally.
	CapCPU, CapMem, CapGPU    int64 // of machines that are up
	UsedCPU, UsedMem, UsedGPU int64
}

// NewState returns the state of an empty cluster, with the tie-break order
// drawn from seed.
func NewState(c *Cluster, seed uint64) *State {
	n := len(c.Machines)
	s := &State{
		C:       c,
		M:       hugeSlice[MachineState](n),
		gpuBase: make([]int32, n+1),
		classes: make([]int32, n*numGPUClasses),
	}
	g := 0
	for i := range c.Machines {
		m := &c.Machines[i]
		s.gpuBase[i] = int32(g)
		s.M[i].gpuLo, s.M[i].gpuN = int32(g), int8(m.GPUs)
		g += m.GPUs
		s.M[i].FreeCPU, s.M[i].FreeMem = m.CPU, m.Mem
		s.M[i].Up = true
		s.M[i].FullFree = int32(m.GPUs)
		s.M[i].IdleGPU = int32(m.GPUs * MilliGPU)
		s.M[i].model = int8(c.ModelIndex(m.GPUModel))
		s.CapCPU += m.CPU
		s.CapMem += m.Mem
		s.CapGPU += int64(m.GPUs * MilliGPU)
	}
	s.gpuBase[n] = int32(g)
	s.GPUFree = make([]int32, g)
	s.GPUUsers = make([]uint16, g)
	for i := range s.GPUFree {
		s.GPUFree[i] = MilliGPU
	}
	rng := rand.New(rand.NewPCG(seed, 0x7465672d7072696f)) // "teg-prio"
	for i, p := range rng.Perm(n) {
		s.M[i].Prio = int32(p)
	}
	return s
}

// GPUs returns machine i's per-GPU free milli (a view; do not modify).
func (s *State) GPUs(i int) []int32 {
	m := &s.M[i]
	return s.GPUFree[m.gpuLo : m.gpuLo+int32(m.gpuN)]
}

// Sharers returns how many jobs use each GPU of machine i (a view).
func (s *State) Sharers(i int) []uint16 { return s.GPUUsers[s.gpuBase[i]:s.gpuBase[i+1]] }

// Model returns machine i's GPU model index, -1 without GPUs.
func (s *State) Model(i int) int { return int(s.M[i].model) }

// Jobs returns the number of jobs placed on machine i.
func (s *State) Jobs(i int) int { return int(s.M[i].njobs) }

// ClassCount returns how many GPU jobs of class c machine i hosts, and the
// number of distinct classes on it.
func (s *State) ClassCount(i, c int) (count, distinct int) {
	return int(s.classes[i*numGPUClasses+c]), int(s.M[i].nclass)
}

// Request resolves a job against the cluster. Unknown model names match no
// machine.
func (s *State) Request(j *Job) Request {
	r := Request{CPU: j.CPU, Mem: j.Mem, GPUs: j.GPUs, Milli: int32(j.GPUMilli)}
	if j.GPUs > 0 && len(j.GPUModels) > 0 {
		for _, name := range j.GPUModels {
			if k := s.C.ModelIndex(name); k >= 0 {
				r.Models |= 1 << uint(k)
			}
		}
		if r.Models == 0 {
			r.Models = 1 << 63 // a bit no machine has: nothing fits
		}
	}
	r.Class = gpuClass(r.GPUs, r.Milli)
	return r
}

// ModelOK reports whether machine i's GPU model is allowed by r.
func (s *State) ModelOK(i int, r *Request) bool {
	if r.GPUs == 0 || r.Models == 0 {
		return true
	}
	m := s.M[i].model
	return m >= 0 && r.Models&(1<<uint(m)) != 0
}

// Fits reports whether r can be placed on machine i now: the machine is up,
// CPU and memory cover the request, the GPU model is allowed, and the GPUs
// fit by the rules of docs/fgd.md.
func (s *State) Fits(i int, r *Request) bool {
	if !s.M[i].Up || s.M[i].FreeCPU < r.CPU || s.M[i].FreeMem < r.Mem {
		return false
	}
	if r.GPUs == 0 {
		return true
	}
	if !s.ModelOK(i, r) {
		return false
	}
	if r.Milli >= MilliGPU {
		return int(s.M[i].FullFree) >= r.GPUs
	}
	if s.M[i].IdleGPU < r.Milli {
		return false
	}
	for _, g := range s.GPUs(i) {
		if g >= r.Milli {
			return true
		}
	}
	return false
}

// Admit reports whether a scheduler may place r on machine i: it fits and
// passes the safety layer, if the simulation runs one. Schedulers filter
// with Admit; the allocator itself only needs Fits.
func (s *State) Admit(i int, r *Request) bool {
	return s.Fits(i, r) && (s.guard == nil || s.guard(i, r))
}

// BestFitGPU returns the GPU of machine i with the least free milli that
// still fits a share request (first on ties), or -1.
func (s *State) BestFitGPU(i int, milli int32) int {
	best, bestFree := -1, int32(MilliGPU+1)
	for j, g := range s.GPUs(i) {
		if g >= milli && g < bestFree {
			best, bestFree = j, g
		}
	}
	return best
}

// allocate places r on machine i. For share requests gpu picks the GPU
// (-1: best fit); whole-GPU requests take the lowest-indexed fully free GPUs.
// The caller has checked Fits.
func (s *State) allocate(i int, r *Request, gpu int) (Alloc, error) {
	if !s.Fits(i, r) {
		return Alloc{}, fmt.Errorf("machine %d cannot host request %+v", i, *r)
	}
	a := Alloc{Machine: i, CPU: r.CPU, Mem: r.Mem, Milli: r.Milli, Class: r.Class}
	gs := s.GPUs(i)
	us := s.Sharers(i)
	switch {
	case r.GPUs == 0:
	case r.Milli < MilliGPU:
		if gpu < 0 {
			gpu = s.BestFitGPU(i, r.Milli)
		}
		if gpu < 0 || gpu >= len(gs) || gs[gpu] < r.Milli {
			return Alloc{}, fmt.Errorf("machine %d GPU %d cannot host %d milli", i, gpu, r.Milli)
		}
		if gs[gpu] == MilliGPU {
			s.M[i].FullFree--
		}
		gs[gpu] -= r.Milli
		us[gpu]++
		a.GPUMask = 1 << uint(gpu)
	default:
		need := r.GPUs
		for j := 0; j < len(gs) && need > 0; j++ {
			if gs[j] == MilliGPU {
				gs[j] = 0
				us[j]++
				a.GPUMask |= 1 << uint(j)
				need--
			}
		}
		s.M[i].FullFree -= int32(r.GPUs)
	}
	s.M[i].FreeCPU -= r.CPU
	s.M[i].FreeMem -= r.Mem
	gpuTotal := r.GPUDemand()
	s.M[i].IdleGPU -= int32(gpuTotal)
	s.UsedCPU += r.CPU
	s.UsedMem += r.Mem
	s.UsedGPU += gpuTotal
	s.M[i].njobs++
	if r.Class > 0 {
		k := i*numGPUClasses + r.Class
		if s.classes[k] == 0 {
			s.M[i].nclass++
		}
		s.classes[k]++
	}
	s.M[i].Ver++
	return a, nil
}

// release returns an allocation's resources to its machine.
func (s *State) release(a Alloc) {
	i := a.Machine
	gs := s.GPUs(i)
	us := s.Sharers(i)
	n := int64(0)
	for mask := a.GPUMask; mask != 0; mask &= mask - 1 {
		j := bits.TrailingZeros32(mask)
		gs[j] += a.Milli
		us[j]--
		if gs[j] == MilliGPU {
			s.M[i].FullFree++
		}
		n++
	}
	s.M[i].FreeCPU += a.CPU
	s.M[i].FreeMem += a.Mem
	s.M[i].IdleGPU += int32(n * int64(a.Milli))
	s.UsedCPU -= a.CPU
	s.UsedMem -= a.Mem
	s.UsedGPU -= n * int64(a.Milli)
	s.M[i].njobs--
	if a.Class > 0 {
		k := i*numGPUClasses + a.Class
		s.classes[k]--
		if s.classes[k] == 0 {
			s.M[i].nclass--
		}
	}
	s.M[i].Ver++
}

// setUp marks a machine up or down and keeps the capacity totals. A machine
// must be empty before it goes down (the loop evicts its jobs first).
func (s *State) setUp(i int, up bool) {
	if s.M[i].Up == up {
		return
	}
	s.M[i].Up = up
	m := &s.C.Machines[i]
	sign := int64(1)
	if !up {
		sign = -1
	}
	s.CapCPU += sign * m.CPU
	s.CapMem += sign * m.Mem
	s.CapGPU += sign * int64(m.GPUs*MilliGPU)
	s.M[i].Ver++
}
