package env

import (
	"math"
	"slices"
)

// The heuristic round policies, after Gavel's scheduler/policies (Narayanan
// et al., OSDI 2020), plus Tiresias (Gu et al., "Tiresias: A GPU Cluster
// Manager for Distributed Deep Learning", NSDI 2019) and a clairvoyant
// shortest-remaining-time bound. The LP-based policies are in lppolicy*.go.

func init() {
	RegisterAllocationPolicy("fifo", func() AllocationPolicy { return &FIFO{} })
	RegisterAllocationPolicy("fifo_perf", func() AllocationPolicy { return &FIFO{Perf: true} })
	RegisterAllocationPolicy("max_min_fairness", func() AllocationPolicy { return &MaxMinFairness{} })
	RegisterAllocationPolicy("gandiva", func() AllocationPolicy { return &Gandiva{} })
	RegisterAllocationPolicy("tiresias", func() AllocationPolicy { return &Tiresias{} })
	RegisterAllocationPolicy("srtf_oracle", func() AllocationPolicy { return &SRTFOracle{} })
}

// FIFO is Gavel's FIFO policy. Jobs are taken in arrival order and each is
// given a whole GPU type (x = 1) while GPUs of that type are free.
//
// With Perf (Gavel's fifo_perf) the allocation is rebuilt from scratch at
// every recomputation and each job takes the free type where it runs
// fastest.
//
// Without Perf (Gavel's base "fifo") the policy reproduces what Gavel's
// code does rather than what its comment says: a job keeps its type until
// it finishes, the job at the head of the queue inherits the type of a job
// that finished, and a new job goes to the last type in name order among
// those with free GPUs (v100 before p100 before k80 in Gavel's table,
// through a loop variable that outlives its loop); when a type fills up, a
// random type among those that still fitted the job is struck from the
// free list instead of the full one, so later jobs may be overcommitted on
// the full type (the round mechanism then time-shares its GPUs among them).
type FIFO struct {
	Perf  bool
	rng   *pyRandom
	where map[int]int // job ID -> type index
	keys  []int
	queue []int
	avail []int
	types []int
	fit   []int
	fitAt []int
	byID  map[int]int
}

// Name implements AllocationPolicy.
func (p *FIFO) Name() string {
	if p.Perf {
		return "fifo_perf"
	}
	return "fifo"
}

// Seed implements SeededPolicy.
func (p *FIFO) Seed(seed uint64) { p.rng = newPyRandom(seed) }

// RoundHints implements RoundHintsPolicy: Gavel never runs a FIFO job on a
// type it was not allocated, and shuffles the type order of base FIFO.
func (p *FIFO) RoundHints() RoundHints {
	return RoundHints{ShuffleTypes: !p.Perf, SkipUnallocated: true}
}

// Allocate implements AllocationPolicy.
func (p *FIFO) Allocate(s *RoundState, x []float64) error {
	nt := len(s.Types)
	if p.where == nil {
		p.where, p.byID = map[int]int{}, map[int]int{}
	}
	if p.rng == nil {
		p.Seed(0)
	}
	if p.Perf {
		clear(p.where)
	}
	clear(p.byID)
	for i, j := range s.Jobs {
		p.byID[j.ID] = i
	}
	thr := func(id, t int) float64 { return s.Throughput[p.byID[id]*nt+t] }
	scale := func(id int) int { return s.Jobs[p.byID[id]].Scale }
	p.avail = append(p.avail[:0], s.Capacity...)
	p.queue = p.queue[:0]
	for _, j := range s.Jobs {
		if _, ok := p.where[j.ID]; !ok {
			p.queue = append(p.queue, j.ID)
		}
	}
	p.keys = p.keys[:0]
	for id := range p.where {
		p.keys = append(p.keys, id)
	}
	slices.Sort(p.keys)
	for _, id := range p.keys {
		t := p.where[id]
		if _, live := p.byID[id]; live {
			p.avail[t] -= scale(id)
			continue
		}
		// Finished: the head of the queue inherits its type if it fits.
		if len(p.queue) > 0 {
			h := p.queue[0]
			if scale(h) <= p.avail[t] && thr(h, t) > 0 {
				p.queue = p.queue[1:]
				p.where[h] = t
				p.avail[t] -= scale(h)
			}
		}
		delete(p.where, id)
	}
	p.fill(thr, scale)
	clear(x)
	for i, j := range s.Jobs {
		if t, ok := p.where[j.ID]; ok {
			x[i*nt+t] = 1
		}
	}
	return nil
}

// fill gives queued jobs free types, in arrival order (Gavel's main loop).
func (p *FIFO) fill(thr func(id, t int) float64, scale func(id int) int) {
	p.types = p.types[:0]
	for t, a := range p.avail {
		if a > 0 {
			p.types = append(p.types, t)
		}
	}
	last := len(p.avail) - 1
	for len(p.queue) > 0 && len(p.types) > 0 {
		id := p.queue[0]
		p.queue = p.queue[1:]
		sc := scale(id)
		p.fit, p.fitAt = p.fit[:0], p.fitAt[:0]
		for i, t := range p.types {
			last = t
			if p.avail[t] >= sc {
				p.fit, p.fitAt = append(p.fit, t), append(p.fitAt, i)
			}
		}
		if len(p.fit) == 0 {
			break
		}
		var t, k int
		if p.Perf {
			best := -1.0
			for i, u := range p.fit {
				if v := thr(id, u); v > best {
					best, t, k = v, u, i
				}
			}
		} else {
			k, t = p.rng.randbelow(len(p.fit)), last
		}
		if thr(id, t) > 0 {
			p.where[id] = t
			p.avail[t] -= sc
			if p.avail[t] == 0 {
				p.types = slices.Delete(p.types, p.fitAt[k], p.fitAt[k]+1)
			}
		}
	}
}

// MaxMinFairness is Gavel's heterogeneity-agnostic max_min_fairness (least
// attained service): every throughput counts as 1, and the allocation
// maximises the minimum over jobs of scale_i·Σ_j x[i,j]/priority_i. It is
// solved by water-filling instead of an LP: job i's time share is
// y_i = min(1, τ·priority_i/scale_i) at the highest level τ whose demand
// Σ scale_i·y_i fits the cluster, spread over the GPU types in proportion
// to their numbers of GPUs (the symmetric point of the LP's optimal face,
// where an interior-point solver such as Gavel's lands).
type MaxMinFairness struct {
	y     []float64
	order []int
}

// Name implements AllocationPolicy.
func (p *MaxMinFairness) Name() string { return "max_min_fairness" }

// RoundHints implements RoundHintsPolicy: Gavel shuffles the type order of
// heterogeneity-agnostic policies.
func (p *MaxMinFairness) RoundHints() RoundHints { return RoundHints{ShuffleTypes: true} }

// Allocate implements AllocationPolicy.
func (p *MaxMinFairness) Allocate(s *RoundState, x []float64) error {
	p.y = slices.Grow(p.y[:0], len(s.Jobs))[:len(s.Jobs)]
	p.order = waterFill(s, p.y, p.order)
	spreadShares(s, p.y, x)
	return nil
}

// waterFill sets y_i = min(1, τ·priority_i/scale_i) at the largest τ with
// Σ scale_i·y_i <= the cluster's GPUs.
func waterFill(s *RoundState, y []float64, order []int) []int {
	total, demand := 0.0, 0.0
	for _, c := range s.Capacity {
		total += float64(c)
	}
	order = order[:0]
	for i, j := range s.Jobs {
		demand += float64(j.Scale)
		order = append(order, i)
	}
	if demand <= total {
		for i := range y {
			y[i] = 1
		}
		return order
	}
	cut := func(i int) float64 { return float64(s.Jobs[i].Scale) / prio(s.Jobs[i]) }
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(cut(a), cut(b)) })
	capped, open := 0.0, 0.0
	for _, i := range order {
		open += prio(s.Jobs[i])
	}
	tau := math.Inf(1)
	for _, i := range order {
		if t := (total - capped) / open; t <= cut(i) {
			tau = t
			break
		}
		capped += float64(s.Jobs[i].Scale)
		open -= prio(s.Jobs[i])
	}
	for i, j := range s.Jobs {
		y[i] = min(1, tau*prio(j)/float64(j.Scale))
	}
	return order
}

func prio(j RoundJob) float64 {
	if j.Priority > 0 {
		return j.Priority
	}
	return 1
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// spreadShares writes x[i,j] = y_i·capacity_j/GPUs, zero on types where the
// job cannot run (its share moves to the others).
func spreadShares(s *RoundState, y, x []float64) {
	nt := len(s.Types)
	clear(x)
	for i := range s.Jobs {
		tot := 0.0
		for j, c := range s.Capacity {
			if s.Throughput[i*nt+j] > 0 {
				tot += float64(c)
			}
		}
		if tot == 0 {
			continue
		}
		for j, c := range s.Capacity {
			if s.Throughput[i*nt+j] > 0 {
				x[i*nt+j] = y[i] * float64(c) / tot
			}
		}
	}
}

// Gandiva is Gavel's model of Gandiva (Xiao et al., "Gandiva:
// Introspective Cluster Scheduling for Deep Learning", OSDI 2018): the
// cluster's time is split equally among jobs while they fit; when more GPUs
// are requested than the cluster has, jobs not yet paired are paired at
// random (equal scale factors only) to share GPUs, and a pair is dropped
// when a member finishes or the pair cannot progress on some type.
type Gandiva struct {
	rng    *pyRandom
	mate   map[int]int // job ID -> partner ID, or -1 for a job that runs alone
	pairs  []RoundPair
	xs     []float64
	idx    map[int]int
	keys   []int
	unpair []int
}

// Name implements AllocationPolicy.
func (p *Gandiva) Name() string { return "gandiva" }

// Seed implements SeededPolicy.
func (p *Gandiva) Seed(seed uint64) { p.rng = newPyRandom(seed) }

// Pairs implements PackingPolicy.
func (p *Gandiva) Pairs(*RoundState) []RoundPair { return p.pairs }

// packedGain is Gavel's normalised packed throughput of jobs i and k:
// Σ over types of both jobs' pair/alone throughput ratios; 0 when the pair
// cannot progress on some type.
func packedGain(s *RoundState, i, k int) float64 {
	nt, g := len(s.Types), 0.0
	for j := range nt {
		ti, tk, ok := s.Pair(i, k, j)
		if !ok || s.Throughput[i*nt+j] <= 0 || s.Throughput[k*nt+j] <= 0 {
			return 0
		}
		g += ti/s.Throughput[i*nt+j] + tk/s.Throughput[k*nt+j]
	}
	return g
}

// Allocate implements AllocationPolicy.
func (p *Gandiva) Allocate(s *RoundState, x []float64) error {
	if p.rng == nil {
		p.Seed(0)
	}
	if p.mate == nil {
		p.mate, p.idx = map[int]int{}, map[int]int{}
	}
	clear(p.idx)
	requested, available := 0, 0
	for i, j := range s.Jobs {
		p.idx[j.ID] = i
		requested += j.Scale
	}
	for _, c := range s.Capacity {
		available += c
	}
	p.keys = p.keys[:0]
	for id := range p.mate {
		p.keys = append(p.keys, id)
	}
	slices.Sort(p.keys)
	for _, id := range p.keys {
		o, ok := p.mate[id]
		if !ok {
			continue
		}
		i, live := p.idx[id]
		k, olive := p.idx[o]
		if !live || (o >= 0 && !olive) || (o >= 0 && packedGain(s, i, k) < 1) {
			delete(p.mate, id)
			if o >= 0 {
				delete(p.mate, o)
			}
		}
	}
	p.pairs = p.pairs[:0]
	nt := len(s.Types)
	clear(x)
	if requested <= available {
		for i, j := range s.Jobs {
			p.equalShare(s, x[i*nt:(i+1)*nt], j.Scale, len(s.Jobs))
		}
		return nil
	}
	p.pairUp(s)
	m := 0
	for _, j := range s.Jobs {
		if o := p.mate[j.ID]; o < 0 || j.ID < o {
			m++
		}
	}
	p.xs = slices.Grow(p.xs[:0], m*nt)[:0]
	for i, j := range s.Jobs {
		o := p.mate[j.ID]
		switch {
		case o < 0:
			p.equalShare(s, x[i*nt:(i+1)*nt], j.Scale, m)
		case j.ID < o:
			p.xs = p.xs[:len(p.xs)+nt]
			row := p.xs[len(p.xs)-nt:]
			p.equalShare(s, row, j.Scale, m)
			p.pairs = append(p.pairs, RoundPair{A: j.ID, B: o, X: row})
		}
	}
	return nil
}

// equalShare is Gavel's split of the cluster over m combinations:
// x_j = capacity_j/m/scale, scaled down so the row sums to at most 1.
func (p *Gandiva) equalShare(s *RoundState, row []float64, scale, m int) {
	sum := 0.0
	for j, c := range s.Capacity {
		row[j] = float64(c) / float64(m) / float64(scale)
		sum += row[j]
	}
	if sum > 1 {
		for j := range row {
			row[j] /= sum
		}
	}
}

// pairUp pairs the jobs without a combination at random, as Gavel's
// Gandiva does: as many draws of two jobs as there are such jobs, a draw
// of unequal scale factors wasted; the rest run alone.
func (p *Gandiva) pairUp(s *RoundState) {
	p.unpair = p.unpair[:0]
	for _, j := range s.Jobs {
		if _, ok := p.mate[j.ID]; !ok {
			p.unpair = append(p.unpair, j.ID)
		}
	}
	n := len(p.unpair)
	for i := 0; len(p.unpair) > 1 && i < n; i++ {
		a, b := p.rng.sample2(len(p.unpair))
		ja, jb := p.unpair[a], p.unpair[b]
		if s.Jobs[p.idx[ja]].Scale != s.Jobs[p.idx[jb]].Scale {
			continue
		}
		p.mate[ja], p.mate[jb] = jb, ja
		p.unpair = slices.DeleteFunc(p.unpair, func(id int) bool { return id == ja || id == jb })
	}
	for _, id := range p.unpair {
		p.mate[id] = -1
	}
}

// Tiresias is the two-dimensional least-attained-service policy of Gu et
// al. (NSDI 2019): jobs are ranked by the queue their attained service
// (GPU-seconds) falls in, Thresholds apart, then by arrival; in that order
// each job takes whole GPUs (x = 1) of the type with the most free GPUs
// that fit its gang. It is heterogeneity-agnostic and preemptive at every
// allocation recomputation. With RoundConfig.Locality it consolidates the
// placement-sensitive jobs (ConsolidatingPolicy).
type Tiresias struct {
	// Thresholds are the attained service (GPU-seconds) that demote a job
	// to the next queue; default one and ten GPU-hours.
	Thresholds []float64
	order      []int
	free       []int
}

// Name implements AllocationPolicy.
func (p *Tiresias) Name() string { return "tiresias" }

// MustConsolidate implements ConsolidatingPolicy with Tiresias's rule
// (Gu et al., NSDI 2019): only a job whose model is sensitive
// to placement is consolidated, sensitive meaning here that its table
// throughput spread over servers is below half its consolidated one on
// the GPU type; other gangs take any free GPUs.
func (p *Tiresias) MustConsolidate(consolidated, spread float64) bool {
	return placementSensitive(consolidated, spread)
}

// placementSensitive is Tiresias's test of a gang's sensitivity to
// placement: its throughput spread over servers is below half its
// consolidated one.
func placementSensitive(consolidated, spread float64) bool {
	return spread < 0.5*consolidated
}

// RoundHints implements RoundHintsPolicy.
func (p *Tiresias) RoundHints() RoundHints { return RoundHints{SkipUnallocated: true} }

func (p *Tiresias) queueOf(attained float64) int {
	th := p.Thresholds
	if th == nil {
		th = []float64{3600, 36000}
	}
	q := 0
	for q < len(th) && attained >= th[q] {
		q++
	}
	return q
}

// Allocate implements AllocationPolicy.
func (p *Tiresias) Allocate(s *RoundState, x []float64) error {
	p.order = p.order[:0]
	for i := range s.Jobs {
		p.order = append(p.order, i)
	}
	slices.SortStableFunc(p.order, func(a, b int) int {
		qa, qb := p.queueOf(s.Jobs[a].Attained), p.queueOf(s.Jobs[b].Attained)
		if qa != qb {
			return qa - qb
		}
		return cmpFloat(s.Jobs[a].Arrival, s.Jobs[b].Arrival)
	})
	p.free = append(p.free[:0], s.Capacity...)
	nt := len(s.Types)
	clear(x)
	for _, i := range p.order {
		best := -1
		for j := range nt {
			if p.free[j] >= s.Jobs[i].Scale && s.Throughput[i*nt+j] > 0 && (best < 0 || p.free[j] > p.free[best]) {
				best = j
			}
		}
		if best >= 0 {
			x[i*nt+best] = 1
			p.free[best] -= s.Jobs[i].Scale
		}
	}
	return nil
}

// SRTFOracle is a clairvoyant bound, not a competitor: it knows every
// job's remaining steps, ranks jobs by remaining time on their fastest GPU
// type (shortest first) and gives each, in that order, the fastest type
// with free GPUs for its gang (heterogeneity matching).
type SRTFOracle struct {
	order []int
	rem   []float64
	free  []int
}

// Name implements AllocationPolicy.
func (p *SRTFOracle) Name() string { return "srtf_oracle" }

// IsClairvoyant implements ClairvoyantPolicy.
func (p *SRTFOracle) IsClairvoyant() bool { return true }

// RoundHints implements RoundHintsPolicy.
func (p *SRTFOracle) RoundHints() RoundHints { return RoundHints{SkipUnallocated: true} }

// Allocate implements AllocationPolicy.
func (p *SRTFOracle) Allocate(s *RoundState, x []float64) error {
	nt := len(s.Types)
	p.order, p.rem = p.order[:0], p.rem[:0]
	for i, j := range s.Jobs {
		best := 0.0
		for t := range nt {
			best = math.Max(best, s.Throughput[i*nt+t])
		}
		r := math.Inf(1)
		if best > 0 {
			r = j.StepsLeft / best
		}
		p.order, p.rem = append(p.order, i), append(p.rem, r)
	}
	slices.SortStableFunc(p.order, func(a, b int) int { return cmpFloat(p.rem[a], p.rem[b]) })
	p.free = append(p.free[:0], s.Capacity...)
	clear(x)
	for _, i := range p.order {
		best := -1
		for t := range nt {
			if p.free[t] >= s.Jobs[i].Scale && s.Throughput[i*nt+t] > 0 && (best < 0 || s.Throughput[i*nt+t] > s.Throughput[i*nt+best]) {
				best = t
			}
		}
		if best >= 0 {
			x[i*nt+best] = 1
			p.free[best] -= s.Jobs[i].Scale
		}
	}
	return nil
}
