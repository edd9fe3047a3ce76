package env

import (
	"fmt"
	"math"
)

// AlloX is Gavel's allox policy, after Le et al., "AlloX: Compute
// Allocation in Hybrid Clusters" (EuroSys 2020): jobs waiting for a GPU are
// assigned to GPUs and to positions in each GPU's queue so as to minimise
// the sum of their completion times,
//
//	minimise Σ_i (k_i · stepsLeft_i / throughput[i, type of g_i] + waited_i)
//
// over assignments of job i to GPU g_i at position k_i (k = 1 runs last, so
// its run time delays only itself; position k delays k jobs), a
// min-cost bipartite matching (Gavel solves it with the Hungarian method).
// The job at the highest position of each GPU starts now, with allocation 1
// on its type; it keeps that allocation until it finishes (run to
// completion). GPUs of one type are interchangeable, so the matching runs
// as a min-cost flow from jobs to (type, position) slots of capacity the
// type's free GPUs. AlloX assigns single GPUs: jobs with a scale factor
// above 1 are an error.
//
// The policy keeps its running jobs between calls, so one instance serves
// one simulation.
type AlloX struct {
	running map[int]int // job ID -> type it runs on
	live    map[int]bool
	free    []int
	wait    []int // indices into s.Jobs of the unassigned jobs
	flow    mcf
}

// Name returns "allox".
func (p *AlloX) Name() string { return "allox" }

// Allocate keeps running jobs where they are and starts, on each free GPU,
// the job the min-sum-completion-time matching puts first.
func (p *AlloX) Allocate(s *RoundState, x []float64) error {
	if err := checkRound(s, x); err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	nt := len(s.Types)
	if p.running == nil {
		p.running = make(map[int]int)
		p.live = make(map[int]bool)
	}
	clear(p.live)
	p.free = lpGrowInt(p.free, nt)
	copy(p.free, s.Capacity)
	p.wait = p.wait[:0]
	clear(x)
	for i, job := range s.Jobs {
		if job.Scale != 1 {
			return fmt.Errorf("%s: job %d has scale factor %d; AlloX assigns single GPUs", p.Name(), job.ID, job.Scale)
		}
		p.live[job.ID] = true
		if j, ok := p.running[job.ID]; ok && p.free[j] > 0 {
			x[i*nt+j] = 1
			p.free[j]--
			continue
		}
		delete(p.running, job.ID)
		p.wait = append(p.wait, i)
	}
	for id := range p.running {
		if !p.live[id] {
			delete(p.running, id)
		}
	}
	nfree := 0
	for _, f := range p.free {
		nfree += f
	}
	if len(p.wait) == 0 || nfree == 0 {
		return nil
	}
	// Slots: (type j, position k) for k = 1..K_j, where K_j = the most
	// jobs one GPU of type j can be given, ceil(waiting / free_j).
	f := &p.flow
	f.reset(len(p.wait))
	for j, fr := range p.free {
		if fr == 0 {
			continue
		}
		kmax := (len(p.wait) + fr - 1) / fr
		for k := 1; k <= kmax; k++ {
			f.addSlot(j, k, fr)
		}
	}
	f.sizeCost()
	for a, i := range p.wait {
		job := s.Jobs[i]
		waited := s.Time - job.Arrival
		for sl := range f.slots {
			j, k := f.slots[sl].typ, f.slots[sl].pos
			thr := s.Throughput[i*nt+j]
			cost := math.Inf(1)
			if thr > 0 {
				cost = float64(k)*job.StepsLeft/thr + waited
			}
			f.cost[a*len(f.slots)+sl] = cost
		}
	}
	if err := f.solve(); err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	// On each type, the jobs at the highest positions start: a type with
	// free_j GPUs starts the free_j jobs of largest k (each GPU's first).
	for j, fr := range p.free {
		for started := 0; started < fr; {
			bestA, bestK := -1, 0
			for a, sl := range f.match {
				if sl < 0 || f.slots[sl].typ != j {
					continue
				}
				if k := f.slots[sl].pos; k > bestK {
					bestA, bestK = a, k
				}
			}
			if bestA < 0 {
				break
			}
			i := p.wait[bestA]
			x[i*nt+j] = 1
			p.running[s.Jobs[i].ID] = j
			f.match[bestA] = -1
			started++
		}
	}
	return nil
}

type mcfSlot struct{ typ, pos, cap int }

// mcf is a min-cost assignment of every job to one slot, each slot taking
// at most its capacity of jobs: successive shortest paths with Dijkstra
// and potentials over the dense bipartite residual graph. Ties go to the
// lowest index, so the result depends only on the input.
type mcf struct {
	jobs  int
	slots []mcfSlot
	cost  []float64 // jobs × slots
	match []int     // job -> slot, -1 unassigned
	used  []int     // slot -> jobs assigned
	// Dijkstra over nodes 0..jobs-1 (jobs) and jobs.. (slots).
	pot, dist []float64
	prev      []int
	done      []bool
}

func (f *mcf) reset(jobs int) {
	f.jobs = jobs
	f.slots = f.slots[:0]
}

func (f *mcf) addSlot(typ, pos, capacity int) {
	f.slots = append(f.slots, mcfSlot{typ, pos, capacity})
}

// sizeCost makes room for the jobs × slots cost matrix, to be filled
// before solve.
func (f *mcf) sizeCost() { f.cost = lpGrow(f.cost, f.jobs*len(f.slots)) }

func (f *mcf) solve() error {
	nj, ns := f.jobs, len(f.slots)
	if len(f.cost) != nj*ns {
		return fmt.Errorf("allocation: matching cost matrix has %d entries, want %d", len(f.cost), nj*ns)
	}
	f.match = lpGrowInt(f.match, nj)
	f.used = lpGrowInt(f.used, ns)
	nv := nj + ns
	f.pot = lpGrow(f.pot, nv)
	f.dist = lpGrow(f.dist, nv)
	f.prev = lpGrowInt(f.prev, nv)
	if cap(f.done) < nv {
		f.done = make([]bool, nv)
	}
	f.done = f.done[:nv]
	for a := range f.match {
		f.match[a] = -1
	}
	clear(f.used)
	clear(f.pot)
	for src := range nj {
		// Shortest path from job src through the residual graph to a slot
		// with room: job→slot arcs (reduced cost) for unmatched pairs, and
		// slot→job arcs back along matches.
		for v := range nv {
			f.dist[v] = math.Inf(1)
			f.prev[v] = -1
			f.done[v] = false
		}
		f.dist[src] = 0
		target := -1
		for {
			u := -1
			for v := range nv {
				if !f.done[v] && !math.IsInf(f.dist[v], 1) && (u < 0 || f.dist[v] < f.dist[u]) {
					u = v
				}
			}
			if u < 0 {
				break
			}
			f.done[u] = true
			if u >= nj {
				sl := u - nj
				if f.used[sl] < f.slots[sl].cap {
					target = u
					break
				}
				// Back along matches into this slot.
				for a := range nj {
					if f.match[a] == sl && !f.done[a] {
						d := f.dist[u] - f.cost[a*ns+sl] + f.pot[u] - f.pot[a]
						if d < f.dist[a] {
							f.dist[a], f.prev[a] = d, u
						}
					}
				}
				continue
			}
			for sl := range ns {
				v := nj + sl
				c := f.cost[u*ns+sl]
				if f.done[v] || f.match[u] == sl || math.IsInf(c, 1) {
					continue
				}
				d := f.dist[u] + c + f.pot[u] - f.pot[v]
				if d < f.dist[v] {
					f.dist[v], f.prev[v] = d, u
				}
			}
		}
		if target < 0 {
			return fmt.Errorf("allocation: no GPU slot for waiting job %d", src)
		}
		// Potentials keep reduced costs non-negative for the next search.
		for v := range nv {
			if f.done[v] {
				f.pot[v] += f.dist[v] - f.dist[target]
			}
		}
		// Augment: alternate slot←job (assign) and job←slot (unassign).
		v := target
		f.used[v-nj]++
		for v != src {
			u := f.prev[v]
			if v >= nj { // u is a job, now matched to slot v
				f.match[u] = v - nj
			}
			v = u
		}
		// A job reached through a slot left it: the slot count is unchanged
		// for intermediate slots (one leaves, one joins), so only the
		// target's count grew.
	}
	return nil
}
