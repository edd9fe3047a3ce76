package env

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// A clairvoyant lookahead over the heuristics' choices: at every
// allocation recomputation, each candidate policy's allocation is tried
// for the next Horizon rounds on a copy of the simulator (the same jobs
// arrive: the job source is copied too), scored by the completion time it
// costs, and the best candidate's allocation is the one used. It knows the
// future arrivals and every job's remaining work, so it is a bound on what
// choosing among these heuristics round by round can give, not a policy.

// LookaheadCandidates are the heuristics the lookahead may copy (policies
// whose state cloneAllocationPolicy can copy).
var LookaheadCandidates = []string{"fifo", "fifo_perf", "max_min_fairness", "gandiva", "tiresias", "srtf_oracle"}

// switchPolicy runs one of its candidates, chosen from outside. Every
// candidate computes its allocation at every recomputation, so that each
// keeps the state it would have on its own (FIFO's placements, Gandiva's
// pairs) and a candidate chosen twice in a row acts as itself.
type switchPolicy struct {
	cands   []AllocationPolicy
	hints   []RoundHints
	cur     int
	scratch []float64
}

func (p *switchPolicy) Name() string { return "lookahead" }

func (p *switchPolicy) Allocate(s *RoundState, x []float64) error {
	p.scratch = slices.Grow(p.scratch[:0], len(x))[:len(x)]
	for k, c := range p.cands {
		out := p.scratch
		if k == p.cur {
			out = x
		}
		clear(out)
		if err := c.Allocate(s, out); err != nil {
			return fmt.Errorf("%s: %w", c.Name(), err)
		}
	}
	return nil
}

func (p *switchPolicy) Pairs(s *RoundState) []RoundPair {
	if pp, ok := p.cands[p.cur].(PackingPolicy); ok {
		return pp.Pairs(s)
	}
	return nil
}

func (p *switchPolicy) Seed(seed uint64) {
	for _, c := range p.cands {
		if sp, ok := c.(SeededPolicy); ok {
			sp.Seed(seed)
		}
	}
}

func clonePy(r *pyRandom) *pyRandom {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// cloneAllocationPolicy deep-copies the state of the heuristics.
func cloneAllocationPolicy(p AllocationPolicy) (AllocationPolicy, error) {
	switch q := p.(type) {
	case *FIFO:
		return &FIFO{Perf: q.Perf, rng: clonePy(q.rng), where: maps.Clone(q.where), byID: map[int]int{}}, nil
	case *Gandiva:
		return &Gandiva{rng: clonePy(q.rng), mate: maps.Clone(q.mate), idx: map[int]int{}}, nil
	case *MaxMinFairness:
		return &MaxMinFairness{}, nil
	case *Tiresias:
		return &Tiresias{Thresholds: q.Thresholds}, nil
	case *SRTFOracle:
		return &SRTFOracle{}, nil
	}
	return nil, fmt.Errorf("lookahead: cannot copy the state of policy %s", p.Name())
}

func cloneSource(src JobSource) (JobSource, error) {
	switch g := src.(type) {
	case *GavelGenerator:
		c := *g
		c.jobs, c.gaps = clonePy(g.jobs), clonePy(g.gaps)
		return &c, nil
	}
	return nil, fmt.Errorf("lookahead: cannot copy job source %T", src)
}

func cloneEntry(e entry) entry {
	// alloc, time and deficit share one row, which the rounds write; the
	// rest of the row (throughputs, written once) stays shared.
	row := slices.Clone(e.alloc[:cap(e.alloc)])
	nt := len(e.alloc)
	e.alloc, e.time, e.deficit = row[:nt], row[nt:2*nt], row[2*nt:3*nt]
	wk := slices.Clone(e.wk[:cap(e.wk)])
	sc := len(e.wk)
	e.wk, e.prevWk = wk[:sc], wk[sc:]
	return e
}

// clone copies the simulator between rounds (no gang running): what the
// next rounds write is copied, the layout and finished jobs' entries are
// shared.
func (s *RoundSim) clone() (*RoundSim, error) {
	if len(s.running) > 0 {
		return nil, fmt.Errorf("lookahead: copy during a round")
	}
	c := *s
	sw, ok := s.pol.(*switchPolicy)
	if !ok {
		return nil, fmt.Errorf("lookahead: policy %s is not a lookahead switch", s.pol.Name())
	}
	nsw := &switchPolicy{hints: sw.hints, cur: sw.cur}
	for _, p := range sw.cands {
		q, err := cloneAllocationPolicy(p)
		if err != nil {
			return nil, err
		}
		nsw.cands = append(nsw.cands, q)
	}
	c.pol, c.pack = nsw, nsw
	var err error
	if c.src, err = cloneSource(s.src); err != nil {
		return nil, err
	}
	c.rng = clonePy(s.rng)
	c.round = slices.Clone(s.round)
	c.jobs = slices.Clone(s.jobs)
	c.active = slices.Clone(s.active)
	c.sEnt = slices.Clone(s.sEnt)
	for _, id := range s.active {
		c.sEnt[id] = cloneEntry(s.sEnt[id])
	}
	c.pairs = make([]entry, len(s.pairs))
	for i := range s.pairs {
		c.pairs[i] = cloneEntry(s.pairs[i])
	}
	c.pairDf = map[[2]int]*entry{}
	c.workerTime = slices.Clone(s.workerTime)
	c.workerStmp = slices.Clone(s.workerStmp)
	c.cursor = make([][]int, len(s.cursor))
	for i := range s.cursor {
		c.cursor[i] = make([]int, len(s.cursor[i]))
	}
	c.queue, c.running, c.x = nil, nil, nil
	c.sched = make([][]*entry, s.nt)
	c.left = make([]int, s.nt)
	c.state = RoundState{Types: s.state.Types, Capacity: s.state.Capacity}
	c.state.Pair = c.pairThroughput
	return &c, nil
}

// due reports whether the next startRound recomputes the allocation.
func (s *RoundSim) due() bool {
	return s.needUpdate && (s.now-s.lastReset >= s.cfg.AllocationInterval || s.lastReset == 0)
}

// advance is one iteration of Run's loop up to (not including) the next
// round's start: book the running round, take arrivals; stop reports the
// end of the run (measured jobs done or a bound hit).
func (s *RoundSim) advance() (stop bool) {
	cfg := &s.cfg
	if s.measureDone >= cfg.MeasureTo-cfg.MeasureFrom {
		return true
	}
	if len(s.running) > 0 {
		s.now = s.running[0].finish
		for _, e := range s.running[1:] {
			s.now = math.Max(s.now, e.finish)
		}
		s.endRound()
	} else if s.pend.Arrival > s.now {
		if math.IsInf(s.pend.Arrival, 1) {
			s.res.Saturated = true
			return true
		}
		s.now = s.pend.Arrival
	}
	for s.pend.Arrival <= s.now {
		s.arrive()
	}
	if len(s.active) > cfg.MaxActive || (cfg.MaxSeconds > 0 && s.now > cfg.MaxSeconds) {
		s.res.Saturated = true
		return true
	}
	return false
}

func (s *RoundSim) use(k int) {
	sw := s.pol.(*switchPolicy)
	sw.cur = k
	s.hints = sw.hints[k]
}

// LookaheadConfig configures RunLookahead.
type LookaheadConfig struct {
	Candidates []string // policy names; LookaheadCandidates if empty
	Horizon    int      // rounds each candidate is tried for (default 16)
}

// NewLookaheadSim prepares a lookahead run: NewRoundSim (or, with servers,
// NewRoundSimServers) with the candidates behind one switch.
func NewLookaheadSim(c *GPUCluster, servers [][]int, src JobSource, cfg RoundConfig, lc LookaheadConfig) (*RoundSim, error) {
	names := lc.Candidates
	if len(names) == 0 {
		names = LookaheadCandidates
	}
	sw := &switchPolicy{}
	for _, n := range names {
		p, err := AllocationPolicyByName(n)
		if err != nil {
			return nil, err
		}
		if _, err := cloneAllocationPolicy(p); err != nil {
			return nil, err
		}
		var h RoundHints
		if hp, ok := p.(RoundHintsPolicy); ok {
			h = hp.RoundHints()
		}
		sw.cands, sw.hints = append(sw.cands, p), append(sw.hints, h)
	}
	s, err := NewRoundSim(c, sw, src, cfg)
	if err != nil {
		return nil, err
	}
	if servers != nil {
		s.layoutServers(servers)
	}
	s.use(0)
	return s, nil
}

// score is the completion time (seconds) the jobs active at t0 or arrived
// since cost from t0 on: time in the system up to now, plus, for a job
// still active, its remaining work alone on its fastest type.
func (s *RoundSim) score(active []int, n0 int, t0 float64) float64 {
	add := func(id int) float64 {
		j := &s.jobs[id]
		start := math.Max(j.Arrival, t0)
		if !j.active {
			return j.finish - start
		}
		best := s.bestThroughput(j)
		rest := math.Inf(1)
		if best > 0 {
			rest = (j.Steps - j.done) / best
		}
		return s.now - start + rest
	}
	tot := 0.0
	for _, id := range active {
		tot += add(id)
	}
	for id := n0; id < len(s.jobs); id++ {
		tot += add(id)
	}
	return tot
}

// RunLookahead runs a simulator from NewLookaheadSim to the end, choosing
// a candidate at every allocation recomputation; Choices counts how often
// each candidate was chosen.
func (s *RoundSim) RunLookahead(lc LookaheadConfig) (RoundResult, []int, error) {
	h := lc.Horizon
	if h <= 0 {
		h = 16
	}
	sw, ok := s.pol.(*switchPolicy)
	if !ok {
		return RoundResult{}, nil, fmt.Errorf("lookahead: simulator not from NewLookaheadSim")
	}
	choices := make([]int, len(sw.cands))
	for !s.advance() {
		if s.due() && len(sw.cands) > 1 {
			best, bestScore := 0, math.Inf(1)
			for k := range sw.cands {
				c, err := s.clone()
				if err != nil {
					return s.res, choices, err
				}
				c.use(k)
				t0, n0, act := c.now, len(c.jobs), s.active // s.active does not change in the branch
				for r := 0; r < h; r++ {
					if err := c.startRound(); err != nil {
						return s.res, choices, err
					}
					if c.advance() {
						break
					}
				}
				if sc := c.score(act, n0, t0); sc < bestScore {
					best, bestScore = k, sc
				}
			}
			s.use(best)
			choices[best]++
		}
		if err := s.startRound(); err != nil {
			return s.res, choices, err
		}
	}
	return s.result(), choices, nil
}
