package env

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// The LP-based, heterogeneity-aware allocation policies of Gavel
// (Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for
// Deep Learning Workloads", OSDI 2020). Each fills X[job][GPU type] from a
// RoundState by solving a linear program with lpSolver; docs/gavel-policies.md
// gives every formulation, its solver and its measured cost.

// Errors the LP policies return for input no allocation can serve. A round
// without active jobs is not one of them: its allocation is empty.
var (
	ErrRoundNoCapacity = errors.New("allocation: the cluster has no GPUs")
	ErrRoundJobCannot  = errors.New("allocation: a job can run on no GPU type")
	// ErrRoundTooLarge: more distinct jobs than the dense LP serves in
	// reasonable time and memory (maxLPClasses).
	ErrRoundTooLarge = errors.New("allocation: LP too large")
)

// maxLPClasses bounds the classes of distinct jobs one max-min LP takes:
// its tableau has 2·classes+types rows and about 5·classes columns, so
// 1,000 classes are 40 MB and seconds per LP (the cost grows with the cube).
// Policies whose jobs all differ (finish-time fairness, min total duration)
// reach it only far above a cluster's capacity.
const maxLPClasses = 1000

// maxLPTableau bounds a tableau's entries, rows × (columns + slacks), for
// LPs whose columns grow faster than the classes (the packed LP's pairs
// grow with their square): the size of the largest tableau maxLPClasses
// allows, with 100 GPU types.
const maxLPTableau = (2*maxLPClasses + 100) * (5*maxLPClasses + 2*maxLPClasses + 100)

// checkRound validates what every LP policy reads of s and x.
func checkRound(s *RoundState, x []float64) error {
	nt := len(s.Types)
	if nt == 0 || len(s.Capacity) != nt {
		return fmt.Errorf("allocation: %d GPU types with %d capacities: %w", nt, len(s.Capacity), ErrRoundNoCapacity)
	}
	total := 0
	for j, c := range s.Capacity {
		if c < 0 {
			return fmt.Errorf("allocation: capacity of %s is %d", s.Types[j], c)
		}
		total += c
	}
	if total == 0 {
		return ErrRoundNoCapacity
	}
	if len(s.Throughput) != len(s.Jobs)*nt {
		return fmt.Errorf("allocation: throughput matrix has %d entries, want %d jobs × %d types", len(s.Throughput), len(s.Jobs), nt)
	}
	if len(x) != len(s.Jobs)*nt {
		return fmt.Errorf("allocation: x has %d entries, want %d", len(x), len(s.Jobs)*nt)
	}
	for i, job := range s.Jobs {
		if job.Scale < 1 {
			return fmt.Errorf("allocation: job %d has scale factor %d", job.ID, job.Scale)
		}
		if !(job.Priority > 0) || math.IsInf(job.Priority, 1) {
			return fmt.Errorf("allocation: job %d has priority %v, want > 0", job.ID, job.Priority)
		}
		can := false
		for j := range nt {
			t := s.Throughput[i*nt+j]
			if !(t >= 0) || math.IsInf(t, 1) {
				return fmt.Errorf("allocation: job %d's throughput on %s is %v", job.ID, s.Types[j], t)
			}
			if usable(s, i, j) {
				can = true
			}
		}
		if !can {
			return fmt.Errorf("allocation: job %d (scale %d): %w", job.ID, job.Scale, ErrRoundJobCannot)
		}
	}
	return nil
}

// usable reports whether job i can run on type j at all: it progresses there
// and its gang fits in the type's GPUs.
func usable(s *RoundState, i, j int) bool {
	return s.Throughput[i*len(s.Types)+j] > 0 && s.Jobs[i].Scale <= s.Capacity[j]
}

// maxMin solves the weighted max-min LP every LP policy here reduces to:
//
//	maximise λ  subject to  Σ_j coef[i,j]·x[i,j] >= λ   for every job i
//	                        Σ_j x[i,j] <= 1              for every job i
//	                        Σ_i scale_i·x[i,j] <= cap_j  for every type j
//	                        x >= 0,
//
// then, among the optimal allocations, maximises Σ_i Σ_j x[i,j]·coef[i,j] /
// max_j coef[i,j] (each job's throughput as a fraction of its best type's,
// summed), which spends capacity the minimum does not need. coef[i,j] <= 0
// marks a type job i cannot use; such x stay 0.
//
// Jobs with the same scale factor and coefficient row are interchangeable:
// the LP is symmetric under swapping them, so averaging an optimum over
// the swaps gives an optimum in which they share one allocation. maxMin
// therefore solves one LP row pair per class of identical jobs, which is
// what keeps Gavel's workloads (26 job types) at a few dozen rows however
// many jobs are active.
type maxMin struct {
	lp      lpSolver
	classOf []int // job -> class
	first   []int // class -> its first job
	count   []int // class -> jobs in it
	order   []int // jobs sorted by (scale, coefficients)
	rank    []int // run number -> class
	vars    []int // LP column -> class*nt+type
	a, b    []float64
	c1, c2  []float64
	best    []float64 // class -> max coefficient
	ycls    []float64 // class × type -> allocation
}

// solve fills x (jobs × nt) and returns λ*. coef is jobs × nt.
func (m *maxMin) solve(coef []float64, scale []int, capacity []int, x []float64) (float64, error) {
	nt := len(capacity)
	nj := len(scale)
	m.group(coef, scale, nt)
	nc := len(m.first)
	if nc > maxLPClasses {
		return 0, fmt.Errorf("allocation: %d distinct jobs, more than %d: %w", nc, maxLPClasses, ErrRoundTooLarge)
	}
	m.best = lpGrow(m.best, nc)
	m.vars = m.vars[:0]
	for k, i := range m.first {
		best := 0.0
		for j := range nt {
			if c := coef[i*nt+j]; c > 0 && scale[i] <= capacity[j] {
				best = max(best, c)
				m.vars = append(m.vars, k*nt+j)
			}
		}
		if best == 0 {
			return 0, fmt.Errorf("allocation: job %d: %w", i, ErrRoundJobCannot)
		}
		m.best[k] = best
	}
	// λ is measured in units of L = min_k best_k, an upper bound on λ*, and
	// each class's row is divided by its best coefficient: the λ rows'
	// entries then lie in [0, 1] whatever the throughputs' units.
	l := slices.Min(m.best)
	nv := len(m.vars) + 1 // the classes' columns, then μ = λ/L
	rows := 2*nc + nt
	m.a = lpGrow(m.a, rows*nv)
	m.b = lpGrow(m.b, rows)
	m.c1 = lpGrow(m.c1, nv)
	m.c2 = lpGrow(m.c2, nv)
	clear(m.a)
	clear(m.b)
	clear(m.c1)
	clear(m.c2)
	mu := nv - 1
	for k := range nc {
		m.a[k*nv+mu] = l / m.best[k]
		m.b[nc+k] = 1
	}
	for j := range nt {
		m.b[2*nc+j] = 1
	}
	for v, kj := range m.vars {
		k, j := kj/nt, kj%nt
		i := m.first[k]
		f := coef[i*nt+j] / m.best[k]
		m.a[k*nv+v] = -f
		m.a[(nc+k)*nv+v] = 1
		m.a[(2*nc+j)*nv+v] = float64(m.count[k]*scale[i]) / float64(capacity[j])
		m.c2[v] = f * float64(m.count[k])
	}
	m.c1[mu] = 1
	y, err := m.lp.solve(rows, nv, m.a, m.b, m.c1, m.c2)
	if err != nil {
		return 0, fmt.Errorf("allocation: max-min LP over %d job classes: %w", nc, err)
	}
	m.ycls = lpGrow(m.ycls, nc*nt)
	clear(m.ycls)
	for v, kj := range m.vars {
		m.ycls[kj] = min(y[v], 1)
	}
	for i := range nj {
		k := m.classOf[i]
		copy(x[i*nt:(i+1)*nt], m.ycls[k*nt:(k+1)*nt])
	}
	return y[mu] * l, nil
}

// group assigns jobs to classes of identical (scale, coefficient row),
// numbered in order of their first job, so the LP, and so the result,
// depend only on the input. It sorts job indices rather than hashing rows,
// which allocates nothing once the buffers have grown.
func (m *maxMin) group(coef []float64, scale []int, nt int) {
	nj := len(scale)
	m.classOf = lpGrowInt(m.classOf, nj)
	m.order = lpGrowInt(m.order, nj)
	for i := range m.order {
		m.order[i] = i
	}
	cmpJobs := func(a, b int) int {
		if scale[a] != scale[b] {
			return scale[a] - scale[b]
		}
		for j := range nt {
			ca, cb := coef[a*nt+j], coef[b*nt+j]
			if ca < cb {
				return -1
			}
			if ca > cb {
				return 1
			}
		}
		return 0
	}
	slices.SortFunc(m.order, func(a, b int) int {
		if c := cmpJobs(a, b); c != 0 {
			return c
		}
		return a - b
	})
	// Runs of equal jobs; each run's first entry is its smallest index.
	m.first = m.first[:0]
	for r, i := range m.order {
		if r == 0 || cmpJobs(m.order[r-1], i) != 0 {
			m.first = append(m.first, i)
		}
		m.classOf[i] = len(m.first) - 1 // provisional: the run number
	}
	slices.Sort(m.first)
	// Renumber runs by first job: first is now sorted, and a run's number
	// maps to its rank via its first job.
	m.rank = lpGrowInt(m.rank, len(m.first))
	for k, i := range m.first {
		m.rank[m.classOf[i]] = k
	}
	m.count = lpGrowInt(m.count, len(m.first))
	clear(m.count)
	for i := range nj {
		m.classOf[i] = m.rank[m.classOf[i]]
		m.count[m.classOf[i]]++
	}
}

// agnosticShares returns each job's time share under heterogeneity-agnostic
// max-min fairness (Gavel's max_min_fairness with every throughput 1):
// maximise the minimum of scale_i·y_i/priority_i subject to y_i <= 1 and
// Σ scale_i·y_i <= the cluster's GPUs, filled like water (y_i = min(1,
// τ·priority_i/scale_i) at the highest feasible level τ) so capacity the
// minimum does not need is shared too. y must have len(s.Jobs) entries.
func agnosticShares(s *RoundState, y []float64, order []int) []int {
	total := 0.0
	for _, c := range s.Capacity {
		total += float64(c)
	}
	demand := 0.0
	order = order[:0]
	for i, job := range s.Jobs {
		demand += float64(job.Scale)
		order = append(order, i)
	}
	if demand <= total {
		for i := range y {
			y[i] = 1
		}
		return order
	}
	// A job is capped at y = 1 once τ reaches scale/priority; visit the
	// caps in increasing order and find the level where the capacity runs out.
	cut := func(i int) float64 { return float64(s.Jobs[i].Scale) / s.Jobs[i].Priority }
	slices.SortStableFunc(order, func(a, b int) int {
		ca, cb := cut(a), cut(b)
		switch {
		case ca < cb:
			return -1
		case ca > cb:
			return 1
		}
		return 0
	})
	capped := 0.0 // GPUs of the capped jobs
	open := 0.0   // Σ priority of the uncapped jobs
	for _, i := range order {
		open += s.Jobs[i].Priority
	}
	tau := 0.0
	for _, i := range order {
		// Uncapped jobs use τ·Σ priority GPUs.
		if t := (total - capped) / open; t <= cut(i) {
			tau = t
			break
		}
		capped += float64(s.Jobs[i].Scale)
		open -= s.Jobs[i].Priority
	}
	for i, job := range s.Jobs {
		y[i] = min(1, tau*job.Priority/float64(job.Scale))
	}
	return order
}

// MaxMinFairnessPerf is Gavel's max_min_fairness_perf, heterogeneity-aware
// least attained service: it maximises the minimum over jobs of
//
//	scale_i · Σ_j throughput[i,j]·x[i,j] / (priority_i · isolated_i),
//
// the job's effective throughput normalised by what it would get under the
// heterogeneity-agnostic max-min allocation (isolated_i = Σ_j
// throughput[i,j]·y_i·capacity_j/GPUs, y_i its agnostic time share spread
// over the types in proportion to their GPUs) and divided by its priority,
// as Gavel's policy does. Ties among optimal allocations go to the one with
// the most total throughput relative to each job's best type.
type MaxMinFairnessPerf struct {
	mm    maxMin
	coef  []float64
	scale []int
	y     []float64
	order []int
}

// Name returns "max_min_fairness_perf".
func (p *MaxMinFairnessPerf) Name() string { return "max_min_fairness_perf" }

// Allocate fills x with the max-min fair, heterogeneity-aware allocation.
func (p *MaxMinFairnessPerf) Allocate(s *RoundState, x []float64) error {
	if err := checkRound(s, x); err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	nj, nt := len(s.Jobs), len(s.Types)
	if nj == 0 {
		return nil
	}
	p.y = lpGrow(p.y, nj)
	p.order = agnosticShares(s, p.y, p.order)
	total := 0.0
	for _, c := range s.Capacity {
		total += float64(c)
	}
	p.coef = lpGrow(p.coef, nj*nt)
	p.scale = lpGrowInt(p.scale, nj)
	for i, job := range s.Jobs {
		iso := 0.0
		for j, c := range s.Capacity {
			iso += s.Throughput[i*nt+j] * p.y[i] * float64(c) / total
		}
		w := float64(job.Scale) / (job.Priority * iso)
		for j := range nt {
			p.coef[i*nt+j] = s.Throughput[i*nt+j] * w
		}
		p.scale[i] = job.Scale
	}
	if _, err := p.mm.solve(p.coef, p.scale, s.Capacity, x); err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	return nil
}
