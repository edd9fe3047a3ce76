package rl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/replay"
	"github.com/tegrl/tegrl/report"
)

// Offline learning of env.ScoredPolicy's weights from recordings of the
// round simulator (tegrl dataset record --scenario gavel-...). A
// recording keeps the jobs and every allocation, not the policy's input:
// the simulator is deterministic, so re-running the recorded jobs under a
// policy that returns the recorded allocation at each allocation index
// reproduces every state, and the scored features of each (job, GPU
// type) pair are computed there (env.ScoredFeatureSet, the code the
// policy itself scores). A pair's label is 1 where the recorded
// allocation gave the job a positive share on the type.
//
// The loss is logistic regression on the pairs, not a pairwise ranking
// loss: ScoredPolicy never allocates a pair whose score is not positive,
// so the sign of the score is part of the policy, and logistic
// regression fits it (score > 0 exactly where the fitted probability of
// being allocated is above one half), where a ranking loss would fit only
// the order and leave the threshold free.
//
// BC weighs every pair alike. AWR (Peng et al., "Advantage-Weighted
// Regression", 2019) weighs a recording's pairs by exp(A/β), A = −(its
// average JCT / the best recording's at the same rate and seed − 1), so
// that the better runs count more.

// RoundOfflineConfig configures TrainRoundOffline. Every field has its
// default in DefaultRoundOfflineConfig.
type RoundOfflineConfig struct {
	// Method is "bc" (behaviour cloning: every recording weighs alike) or
	// "awr" (advantage-weighted regression).
	Method string `json:"method"`
	// L2 is the ridge penalty (λ/2)·|w|² on the weights other than the
	// bias, added to the weighted mean log-loss.
	L2 float64 `json:"l2"`
	// Beta is AWR's temperature β: a recording 10% slower than the best
	// at its rate and seed weighs exp(−0.1/β).
	Beta float64 `json:"awr_beta"`
	// MinWeight clips AWR's weights below: A ≤ 0 (every run is compared
	// with the best recorded one), so exp(A/β) ≤ 1, and the clip keeps
	// the worst runs' states in the data at this weight.
	MinWeight float64 `json:"awr_min_weight"`
	// BoundRelJCT is the relative JCT (average JCT / the best's) given to
	// a recording that stopped at the simulator's bound, whose average
	// JCT is not known (RoundESConfig.Penalty's 5).
	BoundRelJCT float64 `json:"awr_bound_rel_jct"`
	// MaxPairs bounds the pairs kept from one recording: allocations are
	// kept at a stride (1, 2, 4, ...) doubled until they fit, so that a
	// run above capacity, with thousands of active jobs, neither fills
	// the memory nor outweighs the others.
	MaxPairs int `json:"max_pairs_per_recording"`
	// Censor drops the unallocated pairs whose type had fewer GPUs left,
	// after the recorded allocation, than the job's gang: the policy's
	// order (best score first while GPUs are free), not its sign, is
	// what keeps them off, so a label 0 there would teach the policy to
	// refuse jobs it only had no room for. Without it the learned
	// policy leaves the cluster idle (the logged states have far more
	// waiting jobs than started ones).
	Censor bool `json:"censor"`
	// Iterations bounds Newton's steps; GradTol stops them once the
	// gradient's largest entry is below it.
	Iterations int     `json:"iterations"`
	GradTol    float64 `json:"grad_tol"`
}

// DefaultRoundOfflineConfig: BC, L2 1e-4, AWR β 0.25 (a run 10% slower
// than the best weighs 0.67, one 50% slower 0.14), weights clipped at
// 0.01, runs at the bound counted 5 times the best's JCT, at most 200,000
// pairs per recording, up to 100 Newton steps to a gradient of 1e-9.
func DefaultRoundOfflineConfig() RoundOfflineConfig {
	return RoundOfflineConfig{Method: "bc", L2: 1e-4, Beta: 0.25, MinWeight: 0.01, BoundRelJCT: 5,
		MaxPairs: 200_000, Censor: true, Iterations: 100, GradTol: 1e-9}
}

// RoundOfflineRecording is what offline learning read from one recording.
type RoundOfflineRecording struct {
	Dir      string   `json:"dir"`
	Policy   string   `json:"scheduler"`
	Rate     float64  `json:"rate_jobs_per_h"`
	Seed     uint64   `json:"seed"`
	Multi    bool     `json:"multi"`
	AvgJCT   *float64 `json:"avg_jct_h"` // nil when AtBound
	AtBound  bool     `json:"at_bound"`
	Allocs   int      `json:"allocations"`
	Stride   int      `json:"stride"` // every Stride-th allocation was kept
	Pairs    int      `json:"pairs"`  // pairs kept
	Positive int      `json:"positive"`
	// Advantage and Weight are AWR's (0 and 1 under BC).
	Advantage float64 `json:"advantage"`
	Weight    float64 `json:"weight"`
}

// RoundOfflineResult is TrainRoundOffline's outcome.
type RoundOfflineResult struct {
	Weights    []float64               `json:"weights"`
	Loss       float64                 `json:"loss"`     // weighted mean log-loss, without the penalty
	Accuracy   float64                 `json:"accuracy"` // weighted share of pairs whose score's sign is the label's
	Pairs      int                     `json:"pairs"`
	Iterations int                     `json:"iterations"`
	Recordings []RoundOfflineRecording `json:"recordings"`
}

// roundSamples are the pairs of every recording: Dim features per pair
// in x, its label in y and its weight in w.
type roundSamples struct {
	dim  int
	x    []float64
	y    []float64
	w    []float64
	from []int // first pair of each recording
	// check, when set (tests), sees every replayed allocation: the
	// state, its pairs' features and labels (-1: censored).
	check func(s *env.RoundState, fs *env.ScoredFeatureSet, labels []float64)
}

// TrainRoundOffline learns non-clairvoyant scored weights from the
// recording folders dirs. The result depends only on the recordings and
// cfg.
func TrainRoundOffline(dirs []string, cfg RoundOfflineConfig) (RoundOfflineResult, error) {
	var res RoundOfflineResult
	switch {
	case cfg.Method != "bc" && cfg.Method != "awr":
		return res, fmt.Errorf("round offline: method %q, want bc or awr", cfg.Method)
	case len(dirs) == 0:
		return res, errors.New("round offline: no recordings")
	case cfg.L2 < 0 || cfg.MaxPairs < 1 || cfg.Iterations < 1 || !(cfg.GradTol > 0):
		return res, fmt.Errorf("round offline: need l2 >= 0, max pairs, iterations and a gradient tolerance (got %+v)", cfg)
	case cfg.Method == "awr" && (!(cfg.Beta > 0) || cfg.MinWeight < 0 || cfg.MinWeight > 1 || !(cfg.BoundRelJCT >= 1)):
		return res, fmt.Errorf("round offline: AWR needs beta > 0, min weight in [0, 1] and a bound relative JCT >= 1 (got %+v)", cfg)
	}
	s := roundSamples{dim: env.NumScoredFeatures}
	return trainRoundOffline(dirs, cfg, &s)
}

// trainRoundOffline is TrainRoundOffline on the samples s, whose check
// hook tests set.
func trainRoundOffline(dirs []string, cfg RoundOfflineConfig, s *roundSamples) (RoundOfflineResult, error) {
	var res RoundOfflineResult
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return res, err
	}
	for _, dir := range dirs {
		rec, err := replayRoundRecording(dir, tab, cfg.MaxPairs, cfg.Censor, s)
		if err != nil {
			return res, err
		}
		res.Recordings = append(res.Recordings, rec)
	}
	awrWeights(res.Recordings, cfg)
	s.w = make([]float64, len(s.y))
	for r, rec := range res.Recordings {
		end := len(s.y)
		if r+1 < len(s.from) {
			end = s.from[r+1]
		}
		for i := s.from[r]; i < end; i++ {
			s.w[i] = rec.Weight
		}
	}
	res.Pairs = len(s.y)
	if res.Pairs == 0 {
		return res, errors.New("round offline: the recordings have no allocatable pairs")
	}
	w, iters, err := fitLogistic(s, cfg)
	if err != nil {
		return res, err
	}
	res.Weights, res.Iterations = w, iters
	res.Loss, res.Accuracy = s.evaluate(w)
	return res, nil
}

// awrWeights sets each recording's advantage and weight: 1 under BC.
func awrWeights(recs []RoundOfflineRecording, cfg RoundOfflineConfig) {
	type run struct {
		rate  float64
		seed  uint64
		multi bool
	}
	best := map[run]float64{}
	for _, r := range recs {
		k := run{r.Rate, r.Seed, r.Multi}
		if b, ok := best[k]; r.AvgJCT != nil && (!ok || *r.AvgJCT < b) {
			best[k] = *r.AvgJCT
		}
	}
	for i := range recs {
		r := &recs[i]
		r.Weight = 1
		if cfg.Method != "awr" {
			continue
		}
		rel := cfg.BoundRelJCT
		if b, ok := best[run{r.Rate, r.Seed, r.Multi}]; ok && r.AvgJCT != nil {
			rel = *r.AvgJCT / b
		}
		r.Advantage = -(rel - 1)
		r.Weight = math.Max(cfg.MinWeight, math.Exp(r.Advantage/cfg.Beta))
	}
}

// replayPolicy returns the recorded allocation at each allocation index,
// with the recorded policy's hints to the mechanism, and computes the
// scored features of every allocatable pair on the way.
type replayPolicy struct {
	name  string
	hints env.RoundHints
	dir   string
	r     *datasets.AllocationsReader
	batch []datasets.Allocation
	at    int
	index int32 // next allocation
	rows  int64

	prev, next map[int]int // job ID -> type of the largest share
	fs         env.ScoredFeatureSet
	// keep receives each allocation's pairs: the features, then the
	// labels in pair order.
	keep   func(index int32, s *env.RoundState, fs *env.ScoredFeatureSet, labels []float64)
	label  []float64
	censor bool
	free   []float64
	err    error
}

func (p *replayPolicy) Name() string               { return p.name }
func (p *replayPolicy) RoundHints() env.RoundHints { return p.hints }

// peek returns the next recorded row, or nil at the end of the file.
func (p *replayPolicy) peek() *datasets.Allocation {
	for p.at >= len(p.batch) {
		if !p.r.Next() {
			if p.err == nil {
				p.err = p.r.Err()
			}
			return nil
		}
		p.batch, p.at = p.r.Batch(), 0
	}
	return &p.batch[p.at]
}

// Allocate implements env.AllocationPolicy: x is the recorded rows of
// this allocation, which must name active jobs and known types at this
// allocation's time.
func (p *replayPolicy) Allocate(s *env.RoundState, x []float64) error {
	nt := len(s.Types)
	index := p.index
	p.index++
	for a := p.peek(); a != nil && a.Index == index; a = p.peek() {
		p.at++
		p.rows++
		i, ok := slices.BinarySearchFunc(s.Jobs, int(a.Job), func(j env.RoundJob, id int) int { return j.ID - id })
		t := slices.Index(s.Types, a.GPUType)
		switch {
		case a.TimeS != s.Time:
			return fmt.Errorf("%s: allocation %d: recorded at %v s, replayed at %v s: the replay left the recording", p.dir, index, a.TimeS, s.Time)
		case !ok:
			return fmt.Errorf("%s: allocation %d at %v s: recorded job %d is not active in the replay", p.dir, index, s.Time, a.Job)
		case t < 0:
			return fmt.Errorf("%s: allocation %d at %v s: recorded GPU type %q is not the cluster's %v", p.dir, index, s.Time, a.GPUType, s.Types)
		}
		x[i*nt+t] = a.Fraction
	}
	if p.err != nil {
		return fmt.Errorf("%s: %w", p.dir, p.err)
	}
	if a := p.peek(); a != nil && a.Index < index {
		return fmt.Errorf("%s: allocation %d: a row of allocation %d follows: the replay left the recording", p.dir, index, a.Index)
	}
	p.fs.Compute(s, p.prev, false)
	// GPUs of each type the allocation leaves free (shares of time count
	// their part of the gang).
	p.free = p.free[:0]
	for t, c := range s.Capacity {
		f := float64(c)
		for i, j := range s.Jobs {
			f -= x[i*nt+t] * float64(j.Scale)
		}
		p.free = append(p.free, f)
	}
	// Labels: 1 allocated, 0 not, -1 censored (left out).
	p.label = slices.Grow(p.label[:0], len(p.fs.Pairs))[:len(p.fs.Pairs)]
	for k, q := range p.fs.Pairs {
		switch {
		case x[q.Job*nt+q.Type] > 0:
			p.label[k] = 1
		case p.censor && p.free[q.Type] < float64(s.Jobs[q.Job].Scale):
			p.label[k] = -1
		default:
			p.label[k] = 0
		}
	}
	p.keep(index, s, &p.fs, p.label)
	// The previous round's type of a job with shares on several types
	// (the LP policies) is the one with the largest share, the lowest
	// index on a tie: exactly the type a scored policy gave it.
	clear(p.next)
	for i, j := range s.Jobs {
		row := x[i*nt : (i+1)*nt]
		if t := argmaxPositive(row); t >= 0 {
			p.next[j.ID] = t
		}
	}
	p.prev, p.next = p.next, p.prev
	return nil
}

func argmaxPositive(row []float64) int {
	best := -1
	for t, v := range row {
		if v > 0 && (best < 0 || v > row[best]) {
			best = t
		}
	}
	return best
}

// replayRoundRecording re-runs the recording in dir under replayPolicy,
// appends its pairs to s (every stride-th allocation, the stride doubled
// until at most maxPairs are kept) and checks that the run reproduced the
// recorded metrics.
func replayRoundRecording(dir string, tab *env.ThroughputTable, maxPairs int, censor bool, s *roundSamples) (RoundOfflineRecording, error) {
	out := RoundOfflineRecording{Dir: dir, Stride: 1}
	rec, err := replay.OpenGPU(dir)
	if err != nil {
		return out, fmt.Errorf("round offline: %w", err)
	}
	c := rec.Config
	out.Policy, out.Seed, out.Rate = c.Policy, c.Seed, rec.Metrics.Rate
	// The gavel presets learn from runs of the cluster they train on.
	sc, err := report.ParseGPUScenario(c.Scenario)
	if err != nil {
		return out, fmt.Errorf("round offline %s: %w", dir, err)
	}
	if sc.Cluster != "gavel" {
		return out, fmt.Errorf("round offline %s: scenario %s: only the gavel cluster's recordings are replayed", dir, c.Scenario)
	}
	out.Multi = sc.Workload == "multi"
	recorded, err := env.AllocationPolicyByName(c.Policy)
	if err != nil {
		return out, fmt.Errorf("round offline %s: %w", dir, err)
	}
	if _, ok := recorded.(env.PackingPolicy); ok {
		return out, fmt.Errorf("round offline %s: %s co-locates pairs of jobs, which %s does not record: its runs cannot be replayed from the allocations", dir, c.Policy, replay.GPUAllocationsFile)
	}
	jobs, err := datasets.ReadDLJobs(filepath.Join(dir, replay.GPUJobsFile), tab, datasets.ReaderOptions{})
	if err != nil {
		return out, fmt.Errorf("round offline %s: %w", dir, err)
	}
	list, err := env.NewJobList(tab, jobs)
	if err != nil {
		return out, fmt.Errorf("round offline %s: %w", dir, err)
	}
	ar, err := datasets.OpenAllocations(filepath.Join(dir, replay.GPUAllocationsFile), datasets.ReaderOptions{})
	if err != nil {
		return out, fmt.Errorf("round offline %s: %w", dir, err)
	}
	defer ar.Close()
	pol := &replayPolicy{name: c.Policy, dir: dir, r: ar, prev: map[int]int{}, next: map[int]int{}, censor: censor}
	if h, ok := recorded.(env.RoundHintsPolicy); ok {
		pol.hints = h.RoundHints()
	}
	// The kept pairs of this recording, allocation by allocation; a
	// doubling of the stride drops the allocations off it.
	type kept struct {
		index    int32
		from, to int // pairs [from, to) after base
	}
	base := len(s.y)
	var allocs []kept
	pol.keep = func(index int32, st *env.RoundState, fs *env.ScoredFeatureSet, labels []float64) {
		if s.check != nil {
			s.check(st, fs, labels)
		}
		if int(index)%out.Stride != 0 {
			return
		}
		from := len(s.y) - base
		for k, y := range labels {
			if y >= 0 {
				s.x = append(s.x, fs.Row(k)...)
				s.y = append(s.y, y)
			}
		}
		allocs = append(allocs, kept{index, from, len(s.y) - base})
		for len(s.y)-base > maxPairs && len(allocs) > 1 {
			out.Stride *= 2
			x, y, n := s.x[:base*s.dim], s.y[:base], 0
			for _, a := range allocs {
				if int(a.index)%out.Stride != 0 {
					continue
				}
				from := len(y) - base
				x = append(x, s.x[(base+a.from)*s.dim:(base+a.to)*s.dim]...)
				y = append(y, s.y[base+a.from:base+a.to]...)
				allocs[n] = kept{a.index, from, len(y) - base}
				n++
			}
			s.x, s.y, allocs = x, y, allocs[:n]
		}
	}
	// The recorded run, on its recorded jobs, under the replay policy.
	rc := c.RunConfig()
	rc.Jobs, rc.New = list, func() env.AllocationPolicy { return pol }
	r, err := report.RunGPU(rc)
	if err != nil {
		return out, fmt.Errorf("round offline %s: %w", dir, err)
	}
	if a := pol.peek(); pol.err != nil {
		return out, fmt.Errorf("round offline %s: %w", dir, pol.err)
	} else if a != nil {
		return out, fmt.Errorf("round offline %s: the replay ended after %d allocations, before the recorded allocation %d: the replay left the recording", dir, pol.index, a.Index)
	}
	if pol.rows != rec.Allocations {
		return out, fmt.Errorf("round offline %s: %s has %d rows, %s says %d: the files do not belong together", dir, replay.GPUAllocationsFile, pol.rows, replay.GPURunFile, rec.Allocations)
	}
	m := rec.Metrics
	avgSame := (m.AvgJCT == nil) == (r.AvgJCT == nil) && (m.AvgJCT == nil || *m.AvgJCT == *r.AvgJCT)
	if !avgSame || m.AtBound != r.AtBound || m.Rounds != r.Rounds || m.Jobs != r.Jobs || m.Moves != r.Moves {
		return out, fmt.Errorf("round offline %s: the replay of every allocation ended with %d rounds, %d moves, at bound %v, avg JCT %v h; %s says %d, %d, %v, %v: the replay left the recording",
			dir, r.Rounds, r.Moves, r.AtBound, r.AvgJCT, replay.GPURunFile, m.Rounds, m.Moves, m.AtBound, m.AvgJCT)
	}
	out.AtBound, out.Allocs, out.Pairs = r.AtBound, int(pol.index), len(s.y)-base
	out.AvgJCT = r.AvgJCT
	for _, y := range s.y[base:] {
		out.Positive += int(y)
	}
	s.from = append(s.from, base)
	return out, nil
}

// fitLogistic minimises the weighted mean log-loss plus the L2 penalty
// by Newton's method from zero weights (iteratively reweighted least
// squares, the classic solver of logistic regression: with a dozen
// weights the Hessian costs what the gradient does, and it converges in
// a few tens of steps where gradient descent on these unscaled features
// would need thousands), each step halved until the objective
// decreases. One thread and a fixed summation order: the same samples
// give the same bytes.
func fitLogistic(s *roundSamples, cfg RoundOfflineConfig) ([]float64, int, error) {
	d := s.dim
	total := 0.0
	for _, w := range s.w {
		total += w
	}
	if !(total > 0) {
		return nil, 0, errors.New("round offline: every sample weighs 0")
	}
	theta, g, h := make([]float64, d), make([]float64, d), make([]float64, d*d)
	obj := func(theta []float64) float64 {
		loss, _ := s.evaluate(theta)
		for k := 1; k < d; k++ { // the bias is not penalised
			loss += cfg.L2 / 2 * theta[k] * theta[k]
		}
		return loss
	}
	f := obj(theta)
	it := 0
	for ; it < cfg.Iterations; it++ {
		clear(g)
		clear(h)
		for i, y := range s.y {
			x := s.x[i*d : (i+1)*d]
			z := 0.0
			for k, v := range x {
				z += theta[k] * v
			}
			p := sigmoid(z)
			c, q := s.w[i]*(p-y), s.w[i]*p*(1-p)
			for k, v := range x {
				g[k] += c * v
				for l := k; l < d; l++ {
					h[k*d+l] += q * v * x[l]
				}
			}
		}
		gmax := 0.0
		for k := range d {
			g[k] /= total
			for l := k; l < d; l++ {
				h[k*d+l] /= total
				h[l*d+k] = h[k*d+l]
			}
			if k > 0 {
				g[k] += cfg.L2 * theta[k]
				h[k*d+k] += cfg.L2
			}
			gmax = math.Max(gmax, math.Abs(g[k]))
		}
		if gmax < cfg.GradTol {
			break
		}
		step, err := solveSPD(h, g, d)
		if err != nil {
			return nil, it, fmt.Errorf("round offline: Newton step %d: %w", it, err)
		}
		next := make([]float64, d)
		improved := false
		for a := 1.0; a > 1e-10; a /= 2 {
			for k := range next {
				next[k] = theta[k] - a*step[k]
			}
			if fn := obj(next); fn < f {
				theta, f, improved = next, fn, true
				break
			}
		}
		if !improved {
			break // no descent left at float64 precision
		}
	}
	for k, v := range theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, it, fmt.Errorf("round offline: weight %d (%s) is %v", k, env.ScoredFeatures[k], v)
		}
	}
	return theta, it, nil
}

// solveSPD solves h x = g for the symmetric d×d matrix h by Cholesky
// factorisation (gonum); a matrix that is not positive definite (a
// feature constant over the data and unpenalised) gets a small ridge.
func solveSPD(h, g []float64, d int) ([]float64, error) {
	a := make([]float64, d*d)
	for ridge := 0.0; ridge < 1; ridge = math.Max(1e-10, 100*ridge) {
		copy(a, h)
		for i := range d {
			a[i*d+i] += ridge
		}
		var ch mat.Cholesky
		if !ch.Factorize(mat.NewSymDense(d, a)) {
			continue
		}
		x := mat.NewVecDense(d, nil)
		if err := ch.SolveVecTo(x, mat.NewVecDense(d, slices.Clone(g))); err != nil {
			continue
		}
		return x.RawVector().Data, nil
	}
	return nil, errors.New("the Hessian is not positive definite")
}

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// evaluate returns the weighted mean log-loss of theta and the weighted
// share of pairs whose score is positive exactly where the label is 1.
func (s *roundSamples) evaluate(theta []float64) (loss, acc float64) {
	d, total := s.dim, 0.0
	for i, y := range s.y {
		z := 0.0
		for k, v := range s.x[i*d : (i+1)*d] {
			z += theta[k] * v
		}
		loss += s.w[i] * (math.Max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))) - y*z)
		if (z > 0) == (y > 0) {
			acc += s.w[i]
		}
		total += s.w[i]
	}
	return loss / total, acc / total
}

// GavelOfflineSummary is summary.json of tegrl train --preset gavel
// --offline.
type GavelOfflineSummary struct {
	Preset    string             `json:"preset"`
	Config    RoundOfflineConfig `json:"config"`
	Result    RoundOfflineResult `json:"result"`
	Features  []string           `json:"features"`
	EvalSeeds []uint64           `json:"eval_seeds"`
	// Eval is EvalGavel's at the preset's (or --rates') rates.
	Eval    []GavelEvalRow `json:"eval"`
	Command string         `json:"command"`
}

// runGavelOffline is tegrl train --preset gavel --offline DIRS: the
// scored weights learned from the recordings (TrainRoundOffline with
// --offline-method), written as DIR/policy.json, then EvalGavel's
// held-out comparison at the preset's (or --rates') rates on
// --eval-seeds ("": none).
func (o TrainOptions) runGavelOffline(ctx context.Context, w io.Writer) error {
	switch {
	case o.Clairvoyant:
		return errors.New("--clairvoyant: offline learning fits the non-clairvoyant scored policy (the recordings' policies are not clairvoyant)")
	case o.Init != "":
		return errors.New("--init: offline learning starts from zero weights (the fit is convex)")
	}
	var seeds []uint64
	var err error
	evalSpec := o.gavelEvalSpec()
	if evalSpec != "" {
		if seeds, err = report.ParseSeeds(evalSpec); err != nil {
			return fmt.Errorf("--eval-seeds: %w", err)
		}
	}
	es := DefaultRoundESConfig()
	if o.Preset == "gavel-single" {
		es = DefaultRoundESConfigSingle()
	}
	if o.GavelRates != "" {
		if es.Rates, err = report.ParseRates(o.GavelRates); err != nil {
			return fmt.Errorf("--rates: %w", err)
		}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	cfg := DefaultRoundOfflineConfig()
	cfg.Method = o.OfflineConfig.Method
	var dirs []string
	for _, d := range strings.Split(o.Offline, ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	res, err := TrainRoundOffline(dirs, cfg)
	if err != nil {
		return fmt.Errorf("--offline: %w", err)
	}
	for _, r := range res.Recordings {
		o.Logger.Info("offline recording", "dir", r.Dir, "scheduler", r.Policy, "rate", r.Rate, "seed", r.Seed,
			"allocations", r.Allocs, "stride", r.Stride, "pairs", r.Pairs, "weight", r.Weight)
	}
	method := map[string]string{"bc": "behaviour cloning", "awr": "advantage-weighted regression"}[cfg.Method]
	pol := filepath.Join(o.Out, "policy.json")
	if err := env.WriteScoredPolicy(pol, res.Weights, map[string]any{"method": "offline " + method + " (logistic regression on the recorded allocations)",
		"recordings": dirs, "l2": cfg.L2, "awr_beta": cfg.Beta, "pairs": res.Pairs, "accuracy": res.Accuracy, "loss": res.Loss}); err != nil {
		return err
	}
	sum := GavelOfflineSummary{Preset: o.Preset, Config: cfg, Result: res, Features: env.ScoredFeatures, EvalSeeds: seeds, Command: o.Command}
	if len(seeds) > 0 {
		if sum.Eval, err = EvalGavel(ctx, es, res.Weights, seeds); err != nil {
			return err
		}
	}
	return o.finishGavel(w, sum, fmt.Sprintf("%s\noffline %s on %d pairs from %d recordings: label accuracy %.4f, log-loss %.4f\n", pol, method, res.Pairs, len(res.Recordings), res.Accuracy, res.Loss), seeds, sum.Eval)
}
