package env

import (
	"fmt"
	"math"
)

// referenceThroughput is what a heterogeneity-agnostic policy believes job
// i runs at on every type: as in Gavel, its throughput on the V100 (the
// type named "v100"), or, in clusters without one or for a job that cannot
// run there, its best throughput. Types the job cannot use keep 0.
func referenceThroughput(s *RoundState, i int) float64 {
	nt := len(s.Types)
	for j, name := range s.Types {
		if name == "v100" && usable(s, i, j) {
			return s.Throughput[i*nt+j]
		}
	}
	best := 0.0
	for j := range nt {
		if usable(s, i, j) {
			best = max(best, s.Throughput[i*nt+j])
		}
	}
	return best
}

// policyThroughputs fills thr with what the policy plans with: the real
// matrix for the -perf variants, each job's reference throughput on every
// type it can use for the agnostic ones.
func policyThroughputs(s *RoundState, perf bool, thr []float64) {
	nt := len(s.Types)
	for i := range s.Jobs {
		ref := 0.0
		if !perf {
			ref = referenceThroughput(s, i)
		}
		for j := range nt {
			switch {
			case !usable(s, i, j):
				thr[i*nt+j] = 0
			case perf:
				thr[i*nt+j] = s.Throughput[i*nt+j]
			default:
				thr[i*nt+j] = ref
			}
		}
	}
}

// MinTotalDuration is Gavel's min_total_duration (Perf false) and
// min_total_duration_perf (Perf true): the allocation under which every
// active job can finish soonest, minimising the time T by which all finish:
//
//	minimise T  subject to  Σ_j throughput[i,j]·x[i,j] >= stepsLeft_i / T
//
// and the usual row and capacity constraints. With λ = 1/T this is the
// max-min LP of coefficients throughput[i,j]/stepsLeft_i, solved exactly in
// one LP (Gavel bisects on T to 5%, one LP per step). The agnostic variant
// plans with each job's V100 throughput on every type. Jobs with no steps
// left get nothing.
type MinTotalDuration struct {
	Perf bool
	mm   maxMin
	thr  []float64
	coef []float64
	scl  []int
	idx  []int
	sub  RoundState
	xs   []float64
}

// Name returns "min_total_duration" or "min_total_duration_perf".
func (p *MinTotalDuration) Name() string {
	if p.Perf {
		return "min_total_duration_perf"
	}
	return "min_total_duration"
}

// Allocate fills x with the allocation that minimises the time by which all
// active jobs finish.
func (p *MinTotalDuration) Allocate(s *RoundState, x []float64) error {
	if err := checkRound(s, x); err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	nt := len(s.Types)
	p.thr = lpGrow(p.thr, len(s.Throughput))
	policyThroughputs(s, p.Perf, p.thr)
	p.idx, p.scl, p.coef = p.idx[:0], p.scl[:0], p.coef[:0]
	for i, job := range s.Jobs {
		if !(job.StepsLeft > 0) {
			continue
		}
		p.idx = append(p.idx, i)
		p.scl = append(p.scl, job.Scale)
		for j := range nt {
			p.coef = append(p.coef, p.thr[i*nt+j]/job.StepsLeft)
		}
	}
	clear(x)
	if len(p.idx) == 0 {
		return nil
	}
	p.xs = lpGrow(p.xs, len(p.idx)*nt)
	if _, err := p.mm.solve(p.coef, p.scl, s.Capacity, p.xs); err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	for k, i := range p.idx {
		copy(x[i*nt:(i+1)*nt], p.xs[k*nt:(k+1)*nt])
	}
	return nil
}

// ftfJob is finish-time fairness's memory of one job between rounds.
type ftfJob struct {
	isoTime   float64 // cumulative isolated time: work done, in isolated seconds
	prevSteps float64 // steps left at the previous allocation
	prevIso   float64 // isolated throughput at the previous allocation
}

// FinishTimeFairness is Gavel's finish_time_fairness (Perf false) and
// finish_time_fairness_perf (Perf true), after Themis (Mahajan et al.,
// "Themis: Fair and Efficient GPU Cluster Scheduling", NSDI 2020). It
// minimises the largest finish-time ratio
//
//	ρ_i = (elapsed_i + stepsLeft_i/(Σ_j throughput[i,j]·x[i,j])) / isolatedTime_i
//
// where elapsed_i is the time since job i arrived and isolatedTime_i the
// time it would take on a 1/n share of the cluster (Gavel's isolated
// allocation: capacity_j/(n·scale_i) of each type, scaled to a row sum of
// at most 1), counting the work already done at the isolated rate. For a
// fixed ρ the constraints ρ_i <= ρ are linear (throughput >= stepsLeft_i/
// (ρ·isolatedTime_i - elapsed_i)), a max-min LP whose optimum reaches 1
// exactly when ρ is achievable; the policy searches ρ by bisection, moving
// the upper end down to the ratio each LP's allocation actually achieves,
// which converges in a handful of LPs. Gavel solves the convex program
// with ECOS instead. The agnostic variant plans with each job's V100
// throughput on every type.
//
// The policy keeps per-job state between calls (the isolated time already
// served), so one instance serves one simulation.
type FinishTimeFairness struct {
	Perf bool
	mm   maxMin
	thr  []float64
	iso  []float64 // isolated throughput
	iTim []float64 // isolated finish time E_i
	coef []float64
	scl  []int
	idx  []int
	xs   []float64
	best []float64
	seen map[int]ftfJob
	live map[int]bool
	// LPs counts the LPs of the last call (for benchmarks and tests).
	LPs int
}

// Name returns "finish_time_fairness" or "finish_time_fairness_perf".
func (p *FinishTimeFairness) Name() string {
	if p.Perf {
		return "finish_time_fairness_perf"
	}
	return "finish_time_fairness"
}

// Allocate fills x with the allocation that minimises the largest
// finish-time fairness ratio.
func (p *FinishTimeFairness) Allocate(s *RoundState, x []float64) error {
	if err := checkRound(s, x); err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	nt, nj := len(s.Types), len(s.Jobs)
	p.thr = lpGrow(p.thr, len(s.Throughput))
	policyThroughputs(s, p.Perf, p.thr)
	if p.seen == nil {
		p.seen = make(map[int]ftfJob)
		p.live = make(map[int]bool)
	}
	// Isolated throughputs and the isolated time already served.
	p.iso = lpGrow(p.iso, nj)
	p.iTim = lpGrow(p.iTim, nj)
	clear(p.live)
	for i, job := range s.Jobs {
		row := 0.0
		for _, c := range s.Capacity {
			row += float64(c) / float64(nj*job.Scale)
		}
		norm := max(row, 1)
		iso := 0.0
		for j, c := range s.Capacity {
			iso += p.thr[i*nt+j] * float64(c) / float64(nj*job.Scale) / norm
		}
		st := p.seen[job.ID]
		if st.prevIso > 0 {
			st.isoTime += (st.prevSteps - job.StepsLeft) / st.prevIso
		}
		st.prevSteps, st.prevIso = job.StepsLeft, iso
		p.seen[job.ID] = st
		p.live[job.ID] = true
		// iso > 0: checkRound found a type with GPUs the job can use.
		p.iso[i] = iso
		p.iTim[i] = st.isoTime + job.StepsLeft/iso
	}
	for id := range p.seen {
		if !p.live[id] {
			delete(p.seen, id)
		}
	}
	p.idx, p.scl = p.idx[:0], p.scl[:0]
	for i, job := range s.Jobs {
		if job.StepsLeft > 0 {
			p.idx = append(p.idx, i)
			p.scl = append(p.scl, job.Scale)
		}
	}
	clear(x)
	if len(p.idx) == 0 {
		return nil
	}
	if err := p.search(s, x); err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	return nil
}

// ratio returns job i's finish-time ratio under allocation row xi.
func (p *FinishTimeFairness) ratio(s *RoundState, i int, xi []float64) float64 {
	nt := len(s.Types)
	u := 0.0
	for j := range nt {
		u += p.thr[i*nt+j] * xi[j]
	}
	if u <= 0 {
		return math.Inf(1)
	}
	job := s.Jobs[i]
	return (s.Time - job.Arrival + job.StepsLeft/u) / p.iTim[i]
}

// search finds the smallest achievable largest ratio and writes its
// allocation into x.
func (p *FinishTimeFairness) search(s *RoundState, x []float64) error {
	nt := len(s.Types)
	n := len(p.idx)
	p.xs = lpGrow(p.xs, n*nt)
	p.best = lpGrow(p.best, n*nt)
	p.coef = lpGrow(p.coef, n*nt)
	// No job can beat running alone on its best type all the time.
	lo := 0.0
	for _, i := range p.idx {
		bestThr := 0.0
		for j := range nt {
			bestThr = max(bestThr, p.thr[i*nt+j])
		}
		job := s.Jobs[i]
		lo = max(lo, (s.Time-job.Arrival+job.StepsLeft/bestThr)/p.iTim[i])
	}
	hi := math.Inf(1)
	p.LPs = 0
	rho := lo
	// λ*(ρ) rises with ρ; the next ρ is the secant through the last two
	// (ρ, λ*) toward λ* = 1, kept inside the middle of [lo, hi], else the
	// midpoint.
	prevRho, prevLambda := math.NaN(), math.NaN()
	for iter := 0; iter < 100; iter++ {
		lambda, err := p.level(s, rho)
		if err != nil {
			return err
		}
		// What this allocation achieves is an upper bound.
		got := 0.0
		for k, i := range p.idx {
			got = max(got, p.ratio(s, i, p.xs[k*nt:(k+1)*nt]))
		}
		if got < hi {
			hi = got
			copy(p.best, p.xs)
		}
		if lambda < 1 {
			lo = max(lo, rho)
		}
		if hi-lo <= 1e-12*hi {
			break
		}
		next := lo + (hi-lo)/2
		if d := lambda - prevLambda; d != 0 && !math.IsNaN(d) {
			sec := rho + (1-lambda)*(rho-prevRho)/d
			if w := (hi - lo) / 64; sec > lo+w && sec < hi-w {
				next = sec
			}
		}
		prevRho, prevLambda = rho, lambda
		rho = next
	}
	if math.IsInf(hi, 1) {
		return fmt.Errorf("no allocation gives every job progress")
	}
	for k, i := range p.idx {
		copy(x[i*nt:(i+1)*nt], p.best[k*nt:(k+1)*nt])
	}
	return nil
}

// level solves the max-min LP for target ratio rho: coefficients
// throughput/required, where required_i = stepsLeft_i/(rho·E_i - elapsed_i)
// is the throughput job i needs to reach ratio rho. It returns λ*, >= 1
// exactly when rho is achievable, with the allocation in p.xs.
func (p *FinishTimeFairness) level(s *RoundState, rho float64) (float64, error) {
	nt := len(s.Types)
	p.LPs++
	for k, i := range p.idx {
		job := s.Jobs[i]
		// rho >= the lower bound of search, so slack > 0: every job can
		// reach rho on its own.
		slack := rho*p.iTim[i] - (s.Time - job.Arrival)
		w := slack / job.StepsLeft // 1/required throughput
		for j := range nt {
			p.coef[k*nt+j] = p.thr[i*nt+j] * w
		}
	}
	return p.mm.solve(p.coef, p.scl, s.Capacity, p.xs)
}
