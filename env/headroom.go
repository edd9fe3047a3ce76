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
}

// Stats computes RunStats after Run (or RunLookahead) returned r.
func (s *RoundSim) Stats(r RoundResult) RunStats {
	st := RunStats{P99JCTHours: math.NaN()}
	if !r.Saturated && len(r.JCT) > 0 {
		v := slices.Clone(r.JCT)
		slices.Sort(v)
		k := int(math.Ceil(0.99*float64(len(v)))) - 1
		st.P99JCTHours = v[max(k, 0)] / 3600
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
