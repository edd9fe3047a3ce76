package rl

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tegrl/tegrl/env"
)

// roundSampler is env.ScoredPolicy as a stochastic policy: at each
// allocation it picks (job, GPU type) pairs one at a time from a masked
// softmax over the pairs still allocatable (the job not yet placed this
// round, its gang fitting the type's free GPUs) plus a "stop" action of
// logit 0 that leaves the rest idle. A pair's logit is the scored
// policy's linear score, so the greedy limit (the best allocatable pair
// while its score is positive) allocates exactly as env.ScoredPolicy with
// the same weights: the weights PPO learns are a scored policy file.
//
// It records what PPO needs: the time and number of active jobs of every
// allocation (the cost that Little's law turns into average JCT), and,
// for a random share of the allocations, the features, the choices and
// their log-probabilities.
type roundSampler struct {
	w          []float64
	greedy     bool
	rng        *rand.Rand // the actions
	rec        *rand.Rand // which allocations are recorded
	recordProb float64

	feat       env.ScoredFeatureSet
	prev, next map[int]int
	logit, e   []float64
	free       []int
	done       []bool
	scale      []int

	calls  []roundCall
	points []roundPoint
}

// roundCall is one allocation: its time and the active jobs then.
type roundCall struct {
	t    float64 // simulated seconds
	jobs int
}

// roundPoint is one recorded allocation: a PPO sample.
type roundPoint struct {
	t     float64
	dim   int
	x     []float64 // dim features per pair (env.ScoredFeatureSet.X)
	job   []int32   // each pair's job index within the allocation
	typ   []int32   // each pair's GPU type
	scale []int32   // each pair's gang size
	cap   []int32   // free GPUs per type before the first choice
	// seq are the choices in order: a pair index, or -1 for stop (last).
	seq  []int32
	logp []float64 // the behaviour policy's log-probability of each choice
	adv  float64   // filled by the learner
}

func newRoundSampler(w []float64, greedy bool, seed uint64, recordProb float64) *roundSampler {
	return &roundSampler{
		w: w, greedy: greedy, recordProb: recordProb,
		rng:  rand.New(rand.NewPCG(seed, 0x5851f42d4c957f2d)),
		rec:  rand.New(rand.NewPCG(seed, 0x14057b7ef767814f)),
		prev: map[int]int{}, next: map[int]int{},
	}
}

// Name implements env.AllocationPolicy.
func (p *roundSampler) Name() string { return "scored_sampler" }

// RoundHints implements env.RoundHintsPolicy, as env.ScoredPolicy does.
func (p *roundSampler) RoundHints() env.RoundHints { return env.RoundHints{SkipUnallocated: true} }

// Allocate implements env.AllocationPolicy.
func (p *roundSampler) Allocate(s *env.RoundState, x []float64) error {
	p.calls = append(p.calls, roundCall{t: s.Time, jobs: len(s.Jobs)})
	p.feat.Compute(s, p.prev, false)
	fs := &p.feat
	n := len(fs.Pairs)
	p.logit = slices.Grow(p.logit[:0], n)[:n]
	p.e = slices.Grow(p.e[:0], n)[:n]
	p.scale = slices.Grow(p.scale[:0], n)[:n]
	top := 0.0 // the stop action's logit
	for r, q := range fs.Pairs {
		l := 0.0
		for k, wk := range p.w {
			l += wk * fs.X[r*fs.Dim+k]
		}
		p.logit[r], p.scale[r] = l, s.Jobs[q.Job].Scale
		top = math.Max(top, l)
	}
	for r := range p.e {
		p.e[r] = math.Exp(p.logit[r] - top)
	}
	eStop := math.Exp(-top)
	p.free = append(p.free[:0], s.Capacity...)
	p.done = slices.Grow(p.done[:0], len(s.Jobs))[:len(s.Jobs)]
	clear(p.done)
	clear(x)
	clear(p.next)
	var pt *roundPoint
	if !p.greedy && n > 0 && p.rec.Float64() < p.recordProb {
		pt = p.record(s)
	}
	nt := len(s.Types)
	for {
		pick, z := -1, eStop
		for r, q := range fs.Pairs {
			if p.done[q.Job] || p.free[q.Type] < p.scale[r] {
				continue
			}
			if p.greedy {
				if p.logit[r] > 0 && (pick < 0 || p.logit[r] > p.logit[pick]) {
					pick = r
				}
				continue
			}
			z += p.e[r]
			pick = -2 // some pair is allocatable
		}
		if pick == -1 {
			break // greedy: no positive pair left; sampling: nothing allocatable
		}
		lp := 0.0
		if !p.greedy {
			pick, lp = p.sample(z, eStop)
		}
		if pt != nil {
			pt.seq, pt.logp = append(pt.seq, int32(pick)), append(pt.logp, lp)
		}
		if pick < 0 {
			break // stop
		}
		q := fs.Pairs[pick]
		p.done[q.Job] = true
		p.free[q.Type] -= p.scale[pick]
		x[q.Job*nt+q.Type] = 1
		p.next[s.Jobs[q.Job].ID] = q.Type
	}
	p.prev, p.next = p.next, p.prev
	return nil
}

// sample draws one action among the allocatable pairs (weights e) and
// stop (eStop), whose weights sum to z, and returns it (-1: stop) with its
// log-probability.
func (p *roundSampler) sample(z, eStop float64) (int, float64) {
	u := p.rng.Float64() * z
	last := -1
	for r, q := range p.feat.Pairs {
		if p.done[q.Job] || p.free[q.Type] < p.scale[r] {
			continue
		}
		last = r
		if u -= p.e[r]; u < 0 {
			return r, math.Log(p.e[r] / z)
		}
	}
	if u -= eStop; u < 0 || last < 0 {
		return -1, math.Log(eStop / z)
	}
	return last, math.Log(p.e[last] / z) // rounding left u just above 0
}

// record starts a recorded allocation with the call's features.
func (p *roundSampler) record(s *env.RoundState) *roundPoint {
	fs := &p.feat
	n := len(fs.Pairs)
	pt := roundPoint{t: s.Time, dim: fs.Dim, x: slices.Clone(fs.X), job: make([]int32, n), typ: make([]int32, n), scale: make([]int32, n), cap: make([]int32, len(s.Capacity))}
	for r, q := range fs.Pairs {
		pt.job[r], pt.typ[r], pt.scale[r] = int32(q.Job), int32(q.Type), int32(p.scale[r])
	}
	for t, c := range s.Capacity {
		pt.cap[t] = int32(c)
	}
	p.points = append(p.points, pt)
	return &p.points[len(p.points)-1]
}

// roundPointGrad replays point pt's choices under weights w and adds to g
// the gradient of PPO's clipped surrogate plus entCoef times the entropy,
// summed over the choices. It returns the sums over the choices of the
// surrogate, the entropy, the approximate KL (old minus new
// log-probability) and the number of clipped choices.
func roundPointGrad(pt *roundPoint, w []float64, clip, entCoef float64, g []float64, buf *roundGradBuf) (obj, ent, kl float64, clipped int) {
	n, d := len(pt.job), pt.dim
	buf.logit = slices.Grow(buf.logit[:0], n)[:n]
	buf.e = slices.Grow(buf.e[:0], n)[:n]
	buf.free = append(buf.free[:0], pt.cap...)
	nj := 0
	for r := range n {
		l := 0.0
		for k, wk := range w {
			l += wk * pt.x[r*d+k]
		}
		buf.logit[r] = l
		nj = max(nj, int(pt.job[r])+1)
	}
	buf.done = slices.Grow(buf.done[:0], nj)[:nj]
	clear(buf.done)
	// exp(l - base) once per pair: each choice's softmax is then sums
	// over the pairs still allocatable. base is the largest logit (stop's
	// is 0), rebased should the allocatable ones all underflow.
	base := buf.rebase(pt, false)
	buf.mean = slices.Grow(buf.mean[:0], d)[:d]
	for c, a := range pt.seq {
		// The softmax over the allocatable pairs and stop (logit 0): z,
		// E_p[l] and E_p[x] (stop has x = 0 and l = 0) in one pass.
		var z, sl float64
		clear(buf.mean)
		for pass := 0; pass < 2; pass++ {
			z, sl = math.Exp(-base), 0
			for r := range n {
				if buf.done[pt.job[r]] || buf.free[pt.typ[r]] < pt.scale[r] {
					continue
				}
				e := buf.e[r]
				z += e
				sl += e * buf.logit[r]
				row := pt.x[r*d : (r+1)*d]
				for k, v := range row {
					buf.mean[k] += e * v
				}
			}
			if z > 1e-200 {
				break
			}
			base = buf.rebase(pt, true)
			clear(buf.mean)
		}
		lz := base + math.Log(z)
		lbar := sl / z
		for k := range buf.mean {
			buf.mean[k] /= z
		}
		h := lz - lbar // -Σ p log p = log Z - E_p[l]
		la := 0.0
		if a >= 0 {
			la = buf.logit[a]
		}
		logp := la - lz
		ratio := math.Exp(logp - pt.logp[c])
		adv := pt.adv
		surr := math.Min(ratio*adv, math.Max(1-clip, math.Min(1+clip, ratio))*adv)
		obj += surr
		ent += h
		kl += pt.logp[c] - logp
		active := !(adv > 0 && ratio > 1+clip) && !(adv < 0 && ratio < 1-clip)
		if !active {
			clipped++
		}
		// d surr/dw = ratio·A·(x_a - E_p[x]) while the ratio is not clipped.
		if active {
			s := ratio * adv
			for k := range d {
				xa := 0.0
				if a >= 0 {
					xa = pt.x[int(a)*d+k]
				}
				g[k] += s * (xa - buf.mean[k])
			}
		}
		// dH/dw = -Σ_r p_r (l_r - E_p[l]) x_r.
		if entCoef != 0 {
			for r := range n {
				if buf.done[pt.job[r]] || buf.free[pt.typ[r]] < pt.scale[r] {
					continue
				}
				f := entCoef * buf.e[r] / z * (buf.logit[r] - lbar)
				for k := range d {
					g[k] -= f * pt.x[r*d+k]
				}
			}
		}
		if a < 0 {
			break
		}
		buf.done[pt.job[a]] = true
		buf.free[pt.typ[a]] -= pt.scale[a]
	}
	return obj, ent, kl, clipped
}

// rebase sets buf.e[r] = exp(logit[r] - base) and returns base: the
// largest logit of stop (0) and the pairs, or of the pairs still
// allocatable when allocatable.
func (buf *roundGradBuf) rebase(pt *roundPoint, allocatable bool) float64 {
	base := 0.0
	for r, l := range buf.logit {
		if allocatable && (buf.done[pt.job[r]] || buf.free[pt.typ[r]] < pt.scale[r]) {
			continue
		}
		base = math.Max(base, l)
	}
	for r, l := range buf.logit {
		buf.e[r] = math.Exp(l - base)
	}
	return base
}

// roundGradBuf is roundPointGrad's scratch space, one per worker.
type roundGradBuf struct {
	logit, e, mean []float64
	free           []int32
	done           []bool
}
