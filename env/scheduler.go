package env

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Observation is what a scheduler sees when it decides for one pending job.
// State is shared with the simulation and must be treated as read-only.
type Observation struct {
	Time  float64 // simulated seconds
	State *State
	Job   *Job    // the job to place (head of the queue)
	Req   Request // Job resolved against the cluster
	Queue int     // jobs waiting, including Job
	// TEG is the governor's view (field, damping, energy, safety); nil
	// outside a simulation (e.g. in the saturation experiment).
	TEG *TEGView
}

// Action is a scheduler's decision for the pending job.
type Action struct {
	Node int // target machine; -1 = wait (or drop, in the saturation run)
	// GPU picks the GPU of a share job on Node; -1 lets the allocator take
	// the best-fit GPU (least free milli that fits). Ignored otherwise.
	GPU          int
	ReplicaDelta int     // in [-5, 5], for services
	Affinity     float32 // in [0, 1]: pull of a service's replicas together
	Damping      float32 // global damping; NaN leaves the controller's value
}

// Wait is the action that places nothing.
var Wait = Action{Node: -1, GPU: -1, Damping: float32(math.NaN())}

// Place returns the action that puts the job on machine node.
func Place(node, gpu int) Action {
	return Action{Node: node, GPU: gpu, Damping: float32(math.NaN())}
}

// Scheduler is the one interface every placement policy implements: the
// classic baselines here, the pure Langevin governor, learned policies and
// distilled students. Decide must be deterministic given obs and the rng
// stream; a scheduler may keep caches between calls.
//
// The simulator treats Wait as "cannot place now": the job is not offered
// again until capacity is freed somewhere (a completion, eviction or
// repair), as kube-scheduler parks unschedulable pods until a cluster event.
// A policy that waits by choice (admission control) sees the job again at
// the next such event.
type Scheduler interface {
	Name() string
	Decide(obs *Observation, rng *rand.Rand) Action
}

// SchedulerNames lists the schedulers that NewScheduler builds.
var SchedulerNames = []string{"random", "bestfit", "dotprod", "packing", "clustering", "fgd", "kube", "p2c", "langevin"}

// NewScheduler builds a non-learned scheduler by name.
func NewScheduler(name string) (Scheduler, error) {
	switch name {
	case "random":
		return &Random{}, nil
	case "bestfit":
		return &BestFit{}, nil
	case "dotprod":
		return &DotProd{}, nil
	case "packing":
		return &Packing{}, nil
	case "clustering":
		return &Clustering{}, nil
	case "fgd":
		return &FGD{}, nil
	case "kube":
		return &Kube{}, nil
	case "p2c":
		return &P2C{}, nil
	case "langevin":
		return &Langevin{}, nil
	}
	return nil, fmt.Errorf("unknown scheduler %q (have %s)", name, strings.Join(SchedulerNames, ", "))
}

// scorer is a node scoring function for pickMax.
type scorer func(i int) int64

// pickMax returns the feasible machine with the highest score; ties go to
// the machine with the lower tie-break priority. -1 when none fits.
func pickMax(s *State, r *Request, score scorer) int {
	best, bestScore, bestPrio := -1, int64(math.MinInt64), int32(math.MaxInt32)
	for i := range s.M {
		if !s.Admit(i, r) {
			continue
		}
		sc := score(i)
		if sc > bestScore || (sc == bestScore && s.M[i].Prio < bestPrio) {
			best, bestScore, bestPrio = i, sc, s.M[i].Prio
		}
	}
	return best
}

// Random places on a uniformly random feasible machine; share jobs get a
// uniformly random GPU that fits.
type Random struct{ feasible []int }

// Name implements Scheduler.
func (*Random) Name() string { return "random" }

// Decide implements Scheduler.
func (p *Random) Decide(obs *Observation, rng *rand.Rand) Action {
	s, r := obs.State, &obs.Req
	p.feasible = p.feasible[:0]
	for i := range s.M {
		if s.Admit(i, r) {
			p.feasible = append(p.feasible, i)
		}
	}
	if len(p.feasible) == 0 {
		return Wait
	}
	node := p.feasible[rng.IntN(len(p.feasible))]
	gpu := -1
	if r.Share() {
		fit := 0
		for _, g := range s.GPUs(node) {
			if g >= r.Milli {
				fit++
			}
		}
		k := rng.IntN(fit)
		for j, g := range s.GPUs(node) {
			if g >= r.Milli {
				if k == 0 {
					gpu = j
					break
				}
				k--
			}
		}
	}
	return Place(node, gpu)
}

// Normalisers of docs/fgd.md: the largest machine spec of the trace.
const (
	maxSpecCPU = 128000.0
	maxSpecGPU = 8000.0
)

// DotProd is the Tetris-like alignment score: the smallest dot product of
// the machine's free (CPU, GPU) and the job's demand wins.
type DotProd struct{}

// Name implements Scheduler.
func (DotProd) Name() string { return "dotprod" }

// Decide implements Scheduler.
func (DotProd) Decide(obs *Observation, _ *rand.Rand) Action {
	s, r := obs.State, &obs.Req
	pc, pg := float64(r.CPU)/maxSpecCPU, float64(r.GPUDemand())/maxSpecGPU
	n := pickMax(s, r, func(i int) int64 {
		dot := float64(s.M[i].FreeCPU)/maxSpecCPU*pc + float64(s.M[i].IdleGPU)/maxSpecGPU*pg
		return int64(100 * (1 - dot/2))
	})
	return Place(n, -1)
}

// BestFit minimises the leftover (CPU, GPU) after placement, with the raw
// score min-max normalised over feasible machines as in the FGD simulator
// (integer arithmetic, so truncation ties are kept).
type BestFit struct{ raw []int64 }

// Name implements Scheduler.
func (*BestFit) Name() string { return "bestfit" }

// Decide implements Scheduler.
func (p *BestFit) Decide(obs *Observation, _ *rand.Rand) Action {
	s, r := obs.State, &obs.Req
	if cap(p.raw) < len(s.M) {
		p.raw = make([]int64, len(s.M))
	}
	raw := p.raw[:len(s.M)]
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	any := false
	for i := range raw {
		if !s.Admit(i, r) {
			continue
		}
		left := 0.5*float64(s.M[i].FreeCPU-r.CPU)/maxSpecCPU + 0.5*float64(int64(s.M[i].IdleGPU)-r.GPUDemand())/maxSpecGPU
		v := int64((1 - left) * 100)
		raw[i] = v
		lo, hi = min(lo, v), max(hi, v)
		any = true
	}
	if !any {
		return Wait
	}
	n := pickMax(s, r, func(i int) int64 {
		if hi == lo {
			return 0
		}
		return (raw[i] - lo) * 100 / (hi - lo)
	})
	return Place(n, -1)
}

// Packing fills partly used GPUs (tightest first) before opening a fresh GPU
// on a used machine, before opening an idle machine (fewest GPUs first).
type Packing struct{}

// Name implements Scheduler.
func (Packing) Name() string { return "packing" }

// Decide implements Scheduler.
func (Packing) Decide(obs *Observation, _ *rand.Rand) Action {
	s, r := obs.State, &obs.Req
	n := pickMax(s, r, func(i int) int64 { return packingScore(s, i, r) })
	return Place(n, -1)
}

func packingScore(s *State, i int, r *Request) int64 {
	if r.Milli <= 0 {
		return 0
	}
	gs := s.GPUs(i)
	free := int64(s.M[i].FullFree)
	if int(free) == len(gs) { // idle machine
		return max(100/3-free, free)
	}
	// Walk GPUs from the least free up, as the allocator would.
	need := r.GPUs
	var fresh, freeRatio int64
	var used [MaxGPUsPerMachine]bool
	for need > 0 {
		j := -1
		for k, g := range gs {
			if !used[k] && g >= r.Milli && (j < 0 || g < gs[j]) {
				j = k
			}
		}
		if j < 0 {
			return 0
		}
		used[j] = true
		need--
		if gs[j] == MilliGPU {
			fresh++
		}
		freeRatio += int64(gs[j]) * 100 / MilliGPU
	}
	if fresh > 0 {
		return max(100/2-fresh, 100/3)
	}
	return max(100-freeRatio/10, 100/2)
}

// Clustering keeps GPU jobs of one class (share, 1, 2, 4, 8 GPUs) together:
// machines hosting only that class, then mixed machines with it, then empty
// machines, then machines of other classes; fuller machines first in a tier.
type Clustering struct{}

// Name implements Scheduler.
func (Clustering) Name() string { return "clustering" }

// Decide implements Scheduler.
func (Clustering) Decide(obs *Observation, _ *rand.Rand) Action {
	s, r := obs.State, &obs.Req
	n := pickMax(s, r, func(i int) int64 {
		if r.Class == 0 {
			return 0
		}
		fill := 25 * (int64(maxSpecGPU) - int64(s.M[i].IdleGPU)) / int64(maxSpecGPU)
		same, distinct := s.ClassCount(i, r.Class)
		switch {
		case same > 0 && distinct == 1:
			return fill + 75
		case same > 0:
			return fill + 50
		case distinct == 0:
			return fill + 25
		default:
			return fill
		}
	})
	return Place(n, -1)
}

// Kube is kube-scheduler's default scoring after filtering:
// NodeResourcesFit (LeastAllocated, CPU and memory) plus
// NodeResourcesBalancedAllocation, weight 1 each (docs/teg.md §10).
type Kube struct{}

// Name implements Scheduler.
func (Kube) Name() string { return "kube" }

// Decide implements Scheduler.
func (Kube) Decide(obs *Observation, _ *rand.Rand) Action {
	s, r := obs.State, &obs.Req
	n := pickMax(s, r, func(i int) int64 { return kubeScore(s, i, r) })
	return Place(n, -1)
}

func kubeScore(s *State, i int, r *Request) int64 {
	m := &s.C.Machines[i]
	reqCPU := m.CPU - s.M[i].FreeCPU + r.CPU
	reqMem := m.Mem - s.M[i].FreeMem + r.Mem
	// LeastAllocated: integer per resource as in the plugin, then averaged.
	la := ((m.CPU-reqCPU)*100/m.CPU + (m.Mem-reqMem)*100/m.Mem) / 2
	fc := min(1, float64(reqCPU)/float64(m.CPU))
	fm := min(1, float64(reqMem)/float64(m.Mem))
	ba := int64((1 - math.Abs(fc-fm)/2) * 100)
	return la + ba
}

// P2C is power of two choices: two random feasible machines, the less
// loaded wins. Load is the largest allocated fraction over CPU, memory and
// GPU. Its cost is O(1) in cluster size while feasible machines are common.
type P2C struct{ feasible []int }

// Name implements Scheduler.
func (*P2C) Name() string { return "p2c" }

// Decide implements Scheduler.
func (p *P2C) Decide(obs *Observation, rng *rand.Rand) Action {
	s, r := obs.State, &obs.Req
	n := len(s.M)
	var cand [2]int
	got := 0
	// Rejection sampling first: O(1) expected while feasibility is common.
	for try := 0; try < 32 && got < 2; try++ {
		i := rng.IntN(n)
		if s.Admit(i, r) && (got == 0 || cand[0] != i) {
			cand[got] = i
			got++
		}
	}
	if got < 2 { // rare: scan for the few feasible machines
		p.feasible = p.feasible[:0]
		for i := 0; i < n; i++ {
			if s.Admit(i, r) {
				p.feasible = append(p.feasible, i)
			}
		}
		switch len(p.feasible) {
		case 0:
			return Wait
		case 1:
			return Place(p.feasible[0], -1)
		}
		a := rng.IntN(len(p.feasible))
		b := rng.IntN(len(p.feasible) - 1)
		if b >= a {
			b++
		}
		cand = [2]int{p.feasible[a], p.feasible[b]}
	}
	la, lb := load(s, cand[0]), load(s, cand[1])
	if lb < la || (lb == la && s.M[cand[1]].Prio < s.M[cand[0]].Prio) {
		return Place(cand[1], -1)
	}
	return Place(cand[0], -1)
}

// load is the largest allocated fraction of a machine's resources.
func load(s *State, i int) float64 {
	m := &s.C.Machines[i]
	l := max(1-float64(s.M[i].FreeCPU)/float64(m.CPU), 1-float64(s.M[i].FreeMem)/float64(m.Mem))
	if m.GPUs > 0 {
		l = max(l, 1-float64(s.M[i].IdleGPU)/float64(m.GPUs*MilliGPU))
	}
	return l
}
