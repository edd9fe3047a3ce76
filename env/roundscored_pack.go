package env

import "slices"

// PackedScoredPolicy is a ScoredPolicy that also space-shares GPUs, as
// Gavel's packed policies and Gandiva do: when the scored allocation has
// given out every GPU a waiting job could use, each waiting job in score
// order joins the running job, on that job's GPU type, whose pair keeps the
// most normalised throughput (the sum over both jobs of the pair's
// throughput over the job's alone on the type), provided that sum is above
// MinGain: the pair does enough more work on those GPUs than one job
// alone to pay for slowing the running job. A pair
// formed in the previous round is kept while both jobs are still in those
// roles and it still gains, so pairs do not churn. It reads Gavel's
// space-sharing table (RoundState.Pair) and nothing the unpacked policy
// does not.
type PackedScoredPolicy struct {
	ScoredPolicy
	// MinGain is the normalised pair throughput a pair must exceed; 0
	// means DefaultMinPairGain.
	MinGain float64

	pairsOut []RoundPair
	xs       []float64
	mate     map[int]int // job ID -> partner ID, last round
	nextMate map[int]int
	idx      map[int]int // job ID -> index in RoundState.Jobs
	waiting  []int       // job indices, best score first
	partner  []int       // per job index: partner index, -1 if none
}

// DefaultMinPairGain is PackedScoredPolicy's pair threshold. Of 1.0,
// 1.2, 1.3, 1.4 and 1.5 it gave the lowest average JCT on the single-GPU
// protocol's training seeds (100-102) at 5.8, 6.4 and 7.0 jobs/h with the
// weights of docs/policies/gavel-single-high.json: 23.07 h against 25.71
// h at 1.0. A pair just above 1 halves the running job's speed for little
// more work.
const DefaultMinPairGain = 1.4

// Name implements AllocationPolicy.
func (p *PackedScoredPolicy) Name() string { return p.ScoredPolicy.Name() + "_packed" }

// Pairs implements PackingPolicy.
func (p *PackedScoredPolicy) Pairs(*RoundState) []RoundPair { return p.pairsOut }

// Allocate implements AllocationPolicy.
func (p *PackedScoredPolicy) Allocate(s *RoundState, x []float64) error {
	if err := p.ScoredPolicy.Allocate(s, x); err != nil {
		return err
	}
	p.pairsOut = p.pairsOut[:0]
	if s.Pair == nil {
		return nil
	}
	minGain := p.MinGain
	if minGain == 0 {
		minGain = DefaultMinPairGain
	}
	if p.mate == nil {
		p.mate, p.nextMate, p.idx = map[int]int{}, map[int]int{}, map[int]int{}
	}
	nt, n := len(s.Types), len(s.Jobs)
	clear(p.idx)
	for i, j := range s.Jobs {
		p.idx[j.ID] = i
	}
	// Waiting: wanted (a positive score) but not allocated, best first.
	p.waiting = p.waiting[:0]
	for _, q := range p.pairs {
		if !p.done[q.job] {
			p.done[q.job] = true // seen; reset below
			p.waiting = append(p.waiting, q.job)
		}
	}
	for _, w := range p.waiting {
		p.done[w] = false
	}
	p.partner = slices.Grow(p.partner[:0], n)[:n]
	for i := range p.partner {
		p.partner[i] = -1
	}
	typeOf := func(i int) int { // the running job's type, -1 if not allocated
		for t := range nt {
			if x[i*nt+t] > 0 {
				return t
			}
		}
		return -1
	}
	gain := func(r, w, t int) float64 {
		tr, tw, ok := s.Pair(r, w, t)
		if !ok || s.Jobs[r].Scale != s.Jobs[w].Scale || s.Throughput[w*nt+t] <= 0 {
			return 0
		}
		return tr/s.Throughput[r*nt+t] + tw/s.Throughput[w*nt+t]
	}
	pair := func(r, w, t int) {
		p.partner[r], p.partner[w] = w, r
		x[r*nt+t] = 0
		p.xs = p.xs[:len(p.xs)+nt]
		row := p.xs[len(p.xs)-nt:]
		clear(row)
		row[t] = 1
		a, b := s.Jobs[r].ID, s.Jobs[w].ID
		p.pairsOut = append(p.pairsOut, RoundPair{A: min(a, b), B: max(a, b), X: row})
	}
	// Room for a row per pair, so that appending never moves the rows
	// the pairs' X slices point into.
	p.xs = slices.Grow(p.xs[:0], (n/2+1)*nt)
	// Last round's pairs first, while they still gain.
	for _, w := range p.waiting {
		o, ok := p.mate[s.Jobs[w].ID]
		if !ok {
			continue
		}
		r, live := p.idx[o]
		if !live || p.partner[r] >= 0 {
			continue
		}
		if t := typeOf(r); t >= 0 && gain(r, w, t) > minGain {
			pair(r, w, t)
		}
	}
	for _, w := range p.waiting {
		if p.partner[w] >= 0 {
			continue
		}
		best, bestR, bestT := minGain, -1, -1
		for r := range n {
			if !p.done[r] || p.partner[r] >= 0 {
				continue
			}
			t := typeOf(r)
			if t < 0 {
				continue
			}
			if g := gain(r, w, t); g > best {
				best, bestR, bestT = g, r, t
			}
		}
		if bestR >= 0 {
			pair(bestR, w, bestT)
		}
	}
	clear(p.nextMate)
	for _, q := range p.pairsOut {
		p.nextMate[q.A], p.nextMate[q.B] = q.B, q.A
	}
	p.mate, p.nextMate = p.nextMate, p.mate
	return nil
}
