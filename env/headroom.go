package env

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Offered GPU load of a Gavel-style workload on a cluster:
//
//	load = rate (jobs/h) × mean GPU-hours per job on the reference GPU type
//	       / the cluster's capacity in reference GPUs
//
// A job's GPU-hours on the reference type are its duration there (the
// generator draws durations on the reference type, consolidated) times its
// scale factor. A GPU of type g counts as the mean over the table's job
// types of throughput(type, g) / throughput(type, reference) at scale 1
// (types that cannot run on either are left out): a K80 is about a
// quarter of a V100, an A100 about two. Load 1 is the rate at which the
// cluster, fully busy at these speeds, just keeps up.

// GavelMeanDurationSeconds is the mean of Gavel's duration mixture:
// 60·10^U(1.5,3) s with probability 0.8, else 60·10^U(3,4) s, whose means
// are 60·(10^b−10^a)/((b−a)·ln 10).
func GavelMeanDurationSeconds() float64 {
	m := func(a, b float64) float64 { return 60 * (math.Pow(10, b) - math.Pow(10, a)) / ((b - a) * math.Ln10) }
	return 0.8*m(1.5, 3) + 0.2*m(3, 4)
}

// gavelMeanScale is E[scale] of Gavel's multi-GPU mix 1/2/4/8 with
// probabilities 0.7/0.1/0.15/0.05.
const gavelMeanScale = 0.7*1 + 0.1*2 + 0.15*4 + 0.05*8

// MeanGPUHours is the mean GPU-hours per job on the reference GPU type of
// a workload: the Philly samples' mean of duration × GPUs when given, else
// Gavel's mean duration times its mean scale factor (1 for
// continuous-single, 1.9 for continuous-multiple).
func (cfg GavelWorkloadConfig) MeanGPUHours() float64 {
	if len(cfg.Philly) > 0 {
		s := 0.0
		for _, p := range cfg.Philly {
			s += p.Duration * float64(p.GPUs)
		}
		return s / float64(len(cfg.Philly)) / 3600
	}
	if cfg.Multi {
		return GavelMeanDurationSeconds() * gavelMeanScale / 3600
	}
	return GavelMeanDurationSeconds() / 3600
}

// RelativeSpeed is GPU type g's mean speed relative to type ref over the
// table's job types at scale 1 (those that run on both).
func (t *ThroughputTable) RelativeSpeed(g, ref int) float64 {
	s, n := 0.0, 0
	for m := range t.Models {
		a, b := t.Throughput(m, g, 1, false), t.Throughput(m, ref, 1, false)
		if a > 0 && b > 0 {
			s += a / b
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// ReferenceCapacity is the cluster's GPUs counted in reference GPUs:
// Σ_types capacity × RelativeSpeed(type, ref).
func (c *GPUCluster) ReferenceCapacity(ref string) (float64, error) {
	r, err := c.Table.GPU(ref)
	if err != nil {
		return 0, fmt.Errorf("reference capacity: %w", err)
	}
	tot := 0.0
	for i, g := range c.Types {
		tot += float64(c.Capacity[i]) * c.Table.RelativeSpeed(g, r)
	}
	return tot, nil
}

// RateForLoad is the arrival rate (jobs/h) at which workload cfg offers
// load (see above) to cluster c.
func RateForLoad(load float64, c *GPUCluster, cfg GavelWorkloadConfig) (float64, error) {
	if !(load > 0) || math.IsInf(load, 0) {
		return 0, fmt.Errorf("offered load must be a positive number, got %v", load)
	}
	ref := cfg.Reference
	if ref == "" {
		ref = "v100"
	}
	capacity, err := c.ReferenceCapacity(ref)
	if err != nil {
		return 0, err
	}
	if capacity <= 0 {
		return 0, errors.New("offered load: the cluster has no capacity on the workload's job types")
	}
	return load * capacity / cfg.MeanGPUHours(), nil
}

// GPUOfferedLoad is the inverse of RateForLoad.
func GPUOfferedLoad(rate float64, c *GPUCluster, cfg GavelWorkloadConfig) (float64, error) {
	r1, err := RateForLoad(1, c, cfg)
	if err != nil {
		return 0, err
	}
	return rate / r1, nil
}

// RunStats are the measured jobs' JCT statistics and the cluster's busy
// fraction of one run, beyond RoundResult.
type RunStats struct {
	P99JCTHours float64 // 99th percentile (nearest rank) of the measured JCTs; NaN when saturated
	// Utilisation is GPU-seconds of execution over GPUs × simulated time
	// (a co-located pair's GPUs count once per job, so Gandiva may
	// exceed the busy fraction).
	Utilisation float64
	// MaxSlowdown is the largest over the measured jobs of JCT / the job's
	// run time alone on its best allocation (its floor); NaN when saturated.
	MaxSlowdown float64
	// FTFMax and FTFUnfair are the largest finish-time fairness ρ over the
	// measured jobs and the fraction with ρ > 1; NaN when saturated. ρ is
	// a job's JCT over its JCT under an equal share of the cluster, as
	// Themis defines it (Mahajan et al., "Themis: Fair and Efficient GPU
	// Cluster Scheduling", NSDI 2020) with a gang's share in proportion to
	// its GPUs: the floor stretched by the mean over the job's life of
	// max(1, GPUs demanded by the jobs in the system / GPUs).
	FTFMax, FTFUnfair float64
}

// Stats computes RunStats after Run (or RunLookahead) returned r.
func (s *RoundSim) Stats(r RoundResult) RunStats {
	nan := math.NaN()
	st := RunStats{P99JCTHours: nan, MaxSlowdown: nan, FTFMax: nan, FTFUnfair: nan}
	if !r.Saturated && len(r.JCT) > 0 {
		st.P99JCTHours = r.P99JCTHours()
		st.MaxSlowdown, st.FTFMax, st.FTFUnfair = s.fairness()
	}
	busy := 0.0
	for i := range s.jobs {
		busy += s.jobs[i].attained
	}
	if s.now > 0 {
		st.Utilisation = busy / (float64(s.c.TotalGPUs()) * s.now)
	}
	return st
}

// fairness computes the measured jobs' largest slowdown and finish-time
// fairness (RunStats) once every measured job has finished. The cluster's
// contention max(1, demand/GPUs) is piecewise constant between arrivals
// and finishes; its running integral gives each job's mean over its life.
func (s *RoundSim) fairness() (maxSlow, ftfMax, unfair float64) {
	type ev struct {
		t float64
		d int // GPUs demanded from t on: +scale at arrival, -scale at finish
	}
	evs := make([]ev, 0, 2*len(s.jobs))
	for i := range s.jobs {
		j := &s.jobs[i]
		end := s.now
		if !j.active && j.done > 0 {
			end = j.finish
		}
		evs = append(evs, ev{j.Arrival, j.Scale}, ev{end, -j.Scale})
	}
	slices.SortStableFunc(evs, func(a, b ev) int { return cmpFloat(a.t, b.t) })
	// ts[k], area[k]: the k-th distinct event time and the integral of the
	// contention up to it.
	ts, area := make([]float64, 0, len(evs)), make([]float64, 0, len(evs))
	gpus := float64(s.c.TotalGPUs())
	demand, acc := 0, 0.0
	for k, e := range evs {
		if k > 0 {
			acc += (e.t - evs[k-1].t) * math.Max(1, float64(demand)/gpus)
		}
		demand += e.d
		if n := len(ts); n > 0 && ts[n-1] == e.t {
			area[n-1] = acc
		} else {
			ts, area = append(ts, e.t), append(area, acc)
		}
	}
	at := func(t float64) float64 {
		k, _ := slices.BinarySearch(ts, t)
		return area[min(k, len(area)-1)]
	}
	n := 0
	for id := s.cfg.MeasureFrom; id < s.cfg.MeasureTo && id < len(s.jobs); id++ {
		j := &s.jobs[id]
		best := s.bestThroughput(j)
		jct := j.finish - j.Arrival
		if j.active || j.done == 0 || best == 0 || jct <= 0 {
			continue
		}
		floor := j.Steps / best
		rho := jct / (floor * (at(j.finish) - at(j.Arrival)) / jct)
		maxSlow, ftfMax = math.Max(maxSlow, jct/floor), math.Max(ftfMax, rho)
		if rho > 1 {
			unfair++
		}
		n++
	}
	return maxSlow, ftfMax, unfair / float64(max(n, 1))
}
