package env

import (
	"errors"
	"fmt"
	"math"
)

// ErrOverCapacity is returned (wrapped) by FluidBoundHours for work the
// cluster cannot keep up with under any allocation.
var ErrOverCapacity = errors.New("the cluster cannot keep up under any allocation")

// ErrNoMeasuredJobs is returned by RoundSim.FluidBoundHours for a run that
// stopped before its first measured job arrived.
var ErrNoMeasuredJobs = errors.New("fluid bound: no measured job arrived")

// FluidBoundHours is a lower bound on the long-run average JCT (hours) of
// any policy that keeps up with a stream of jobs arriving at rate jobs per
// hour with the mix of jobs on cluster c: the steady-state fluid
// relaxation of the cluster.
//
// The zero-wait floor gives every job its fastest GPU type; the fluid
// bound also counts each type's GPUs. In steady state a policy runs, on
// average, x jobs of each class (model and gang size) alone on each type
// and z pairs of classes sharing GPUs of a type (at the table's pair
// throughputs); together they must do the classes' work as fast as it
// arrives and use no more GPUs of a type than the cluster has. By Little's
// law the average number of jobs running divided by the arrival rate is
// the average time a job spends running, which no JCT is shorter than; the
// bound is the least such time over every feasible (x, z), a linear
// program solved with gonum's simplex (optimize/convex/lp).
//
// It leaves out everything that only lengthens JCT: waiting, gangs that
// do not fit one server, spread gangs, rounds and restarts. Which pairs
// meet is free, so it is the bound of a policy that always finds the best
// partner. With idle GPUs of every job's fastest type it equals the floor;
// it rises above it when the fastest types cannot hold the work.
//
// jobs are the sample whose mix (classes and their work, in steps) stands
// for the stream; rate is the stream's arrival rate. A job class that no
// type of c runs is an error, and so is work the cluster cannot keep up
// with under any allocation (ErrOverCapacity): no policy has a finite
// long-run JCT there.
func FluidBoundHours(c *GPUCluster, jobs []DLJob, rate float64) (float64, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return 0, fmt.Errorf("fluid bound: the arrival rate must be a positive number of jobs/h, got %v", rate)
	}
	if len(jobs) == 0 {
		return 0, errors.New("fluid bound: no jobs")
	}
	t := c.Table
	type class struct{ model, scale int }
	index := map[class]int{}
	var classes []class
	var work []float64 // steps per job of the stream, per class
	for _, j := range jobs {
		if !(j.Steps >= 0) || math.IsInf(j.Steps, 1) {
			return 0, fmt.Errorf("fluid bound: job %d has %v steps, want a finite non-negative number", j.ID, j.Steps)
		}
		if j.Steps == 0 {
			continue // done at arrival; it still counts in the average
		}
		k := class{j.Model, j.Scale}
		i, ok := index[k]
		if !ok {
			i = len(classes)
			index[k] = i
			classes = append(classes, k)
			work = append(work, 0)
		}
		work[i] += j.Steps / float64(len(jobs))
	}
	if len(classes) == 0 {
		return 0, nil
	}
	perSec := rate / 3600
	nt := len(c.Types)
	// Columns: alone (class, type), pairs (class a <= class b, same gang
	// size, type), then one capacity slack per type. Rows: one work row
	// per class, one capacity row per type.
	type column struct {
		a, b, typ int     // b < 0: alone
		ta, tb    float64 // steps/s of a and of b
	}
	var cols []column
	for a, ca := range classes {
		for ti, g := range c.Types {
			if r := t.Throughput(ca.model, g, ca.scale, false); r > 0 {
				cols = append(cols, column{a: a, b: -1, typ: ti, ta: r})
			}
		}
	}
	for a, ca := range classes {
		for b := a; b < len(classes); b++ {
			cb := classes[b]
			if cb.scale != ca.scale {
				continue
			}
			for ti, g := range c.Types {
				if ta, tb, ok := t.PairThroughput(ca.model, cb.model, g, ca.scale); ok {
					cols = append(cols, column{a: a, b: b, typ: ti, ta: ta, tb: tb})
				}
			}
		}
	}
	served := make([]bool, len(classes))
	for _, col := range cols {
		if col.b < 0 {
			served[col.a] = true
		}
	}
	for i, ok := range served {
		if !ok {
			return 0, fmt.Errorf("fluid bound: no GPU type of the cluster runs %s at %d GPUs",
				t.Models[classes[i].model], classes[i].scale)
		}
	}
	// The LP's dual has a variable per class (the running time a unit of
	// its work costs) and per type (the price of a GPU), and a row per
	// column above; it fits the round policies' simplex (maximise subject
	// to A x <= b with b >= 0) and is far smaller than the primal.
	nc := len(classes)
	m, n := len(cols), nc+nt
	a := make([]float64, m*n)
	b := make([]float64, m)
	for k, col := range cols {
		row := a[k*n : (k+1)*n]
		da := work[col.a] * perSec
		switch {
		case col.b < 0:
			row[col.a], b[k] = col.ta/da, 1
		case col.b == col.a:
			row[col.a], b[k] = (col.ta+col.tb)/da, 2
		default:
			row[col.a], row[col.b], b[k] = col.ta/da, col.tb/(work[col.b]*perSec), 2
		}
		row[nc+col.typ] = -float64(classes[col.a].scale)
	}
	obj := make([]float64, n)
	for i := range nc {
		obj[i] = 1
	}
	for ti := range nt {
		obj[nc+ti] = -float64(c.Capacity[ti])
	}
	var s lpSolver
	x, err := s.solve(m, n, a, b, obj)
	if errors.Is(err, errLPUnbounded) {
		return 0, fmt.Errorf("fluid bound: %.4g jobs/h of this mix: %w", rate, ErrOverCapacity)
	}
	if err != nil {
		return 0, fmt.Errorf("fluid bound: %w", err)
	}
	opt := 0.0
	for i, v := range x {
		opt += obj[i] * v
	}
	// The floor is a bound too; taking the larger keeps the simplex's
	// round-off from putting the bound a hair below it on an idle cluster.
	floor := 0.0
	for _, j := range jobs {
		if j.Steps > 0 {
			best := 0.0
			for _, g := range c.Types {
				best = math.Max(best, t.Throughput(j.Model, g, j.Scale, false))
			}
			floor += j.Steps / best
		}
	}
	return math.Max(opt/perSec, floor/float64(len(jobs))) / 3600, nil
}

// FluidBoundHours is FluidBoundHours of the run's cluster for its measured
// jobs that have arrived, at rate jobs per hour (the stream's);
// ErrNoMeasuredJobs before the first of them.
func (s *RoundSim) FluidBoundHours(rate float64) (float64, error) {
	hi := min(s.cfg.MeasureTo, len(s.jobs))
	if hi <= s.cfg.MeasureFrom {
		return 0, ErrNoMeasuredJobs
	}
	jobs := make([]DLJob, 0, hi-s.cfg.MeasureFrom)
	for id := s.cfg.MeasureFrom; id < hi; id++ {
		jobs = append(jobs, s.jobs[id].DLJob)
	}
	return FluidBoundHours(s.c, jobs, rate)
}
