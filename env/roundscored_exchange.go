package env

import (
	"cmp"
	"math"
	"slices"
)

// xchEntry is a gang that could move between two GPU types in the
// exchange pass: its index, gang size and the slowdown it saves by moving.
type xchEntry struct {
	job, scale int
	gain       float64
}

// exchange improves a scored allocation's matching of gangs to GPU types
// without changing which gangs run: it lowers their summed slowdown
// (throughput on the job's best type over throughput on the type it gets)
// by changes that each lower it. The score decides who runs; greedy
// placement by score cannot trade a type between two jobs by comparative
// advantage, which Langevin's exchanges do (LangevinRound), and which is
// what matters when few jobs wait. Each pass makes
//
//   - swaps of two gangs of the same size on two types: for every pair of
//     types p < q and gang size, the best p-gangs paired with the best
//     q-gangs, in order of the slowdown each saves, while a pair saves any;
//   - then, gang by gang, the best of: a move to a type whose free GPUs
//     hold the gang, or a swap with a gang of another size where the free
//     GPUs of the two types absorb the difference (with free GPUs, as
//     below the knee, a type's best use may be a gang of another size).
//
// Passes repeat until one changes nothing, when no such swap or move
// would lower the summed slowdown; maxExchangePasses bounds them. A pass
// is O(jobs × types² × sizes + sorting) plus O(jobs × types) per move or
// unequal swap.
func (p *ScoredPolicy) exchange(s *RoundState, x []float64) {
	nt, n := len(s.Types), len(s.Jobs)
	p.xtyp = slices.Grow(p.xtyp[:0], n)[:n]
	p.xbest = slices.Grow(p.xbest[:0], n)[:n]
	p.xsizes = p.xsizes[:0]
	for i := range n {
		p.xtyp[i] = -1
		best := 0.0
		for j := range nt {
			if x[i*nt+j] > 0 {
				p.xtyp[i] = j
			}
			best = max(best, s.Throughput[i*nt+j])
		}
		p.xbest[i] = best
		if p.xtyp[i] >= 0 && !slices.Contains(p.xsizes, s.Jobs[i].Scale) {
			p.xsizes = append(p.xsizes, s.Jobs[i].Scale)
		}
	}
	for range maxExchangePasses {
		eq := p.swapEqual(s, x)
		if !p.swapUnequal(s, x) && !eq {
			return
		}
	}
}

// slowdown is job i's best throughput over its throughput on type j;
// +Inf where it cannot run.
func (p *ScoredPolicy) slowdown(s *RoundState, i, j int) float64 {
	if t := s.Throughput[i*len(s.Types)+j]; t > 0 {
		return p.xbest[i] / t
	}
	return math.Inf(1)
}

// gainOf is what job i saves by moving from its type to type j.
func (p *ScoredPolicy) gainOf(s *RoundState, i, j int) float64 {
	return p.slowdown(s, i, p.xtyp[i]) - p.slowdown(s, i, j)
}

// setType moves job i (allocated) to type j.
func (p *ScoredPolicy) setType(s *RoundState, x []float64, i, j int) {
	nt, sc := len(s.Types), s.Jobs[i].Scale
	from := p.xtyp[i]
	x[i*nt+from], x[i*nt+j] = 0, 1
	p.free[from] += sc
	p.free[j] -= sc
	p.xtyp[i] = j
	p.next[s.Jobs[i].ID] = j
}

// swapEqual is exchange's pass of equal-size swaps; it reports whether it
// swapped any.
func (p *ScoredPolicy) swapEqual(s *RoundState, x []float64) bool {
	nt, n := len(s.Types), len(s.Jobs)
	byGain := func(a, b xchEntry) int {
		if c := cmp.Compare(a.scale, b.scale); c != 0 {
			return c
		}
		if c := cmpFloat(b.gain, a.gain); c != 0 {
			return c
		}
		return a.job - b.job
	}
	swapped := false
	for tp := range nt {
		for tq := tp + 1; tq < nt; tq++ {
			p.xa, p.xb = p.xa[:0], p.xb[:0]
			for i := range n {
				switch p.xtyp[i] {
				case tp:
					if g := p.gainOf(s, i, tq); !math.IsInf(g, -1) {
						p.xa = append(p.xa, xchEntry{i, s.Jobs[i].Scale, g})
					}
				case tq:
					if g := p.gainOf(s, i, tp); !math.IsInf(g, -1) {
						p.xb = append(p.xb, xchEntry{i, s.Jobs[i].Scale, g})
					}
				}
			}
			if len(p.xa) == 0 || len(p.xb) == 0 {
				continue
			}
			slices.SortFunc(p.xa, byGain)
			slices.SortFunc(p.xb, byGain)
			for ia, ib := 0, 0; ia < len(p.xa) && ib < len(p.xb); {
				a, b := p.xa[ia], p.xb[ib]
				switch {
				case a.scale < b.scale:
					ia++
					continue
				case a.scale > b.scale:
					ib++
					continue
				}
				if !(a.gain+b.gain > exchangeMinGain) {
					// The rest of this size saves less: skip to the next size.
					for ia < len(p.xa) && p.xa[ia].scale == a.scale {
						ia++
					}
					for ib < len(p.xb) && p.xb[ib].scale == a.scale {
						ib++
					}
					continue
				}
				p.setType(s, x, a.job, tq)
				p.setType(s, x, b.job, tp)
				swapped = true
				ia++
				ib++
			}
		}
	}
	return swapped
}

// swapUnequal is exchange's pass of moves to free GPUs and swaps of gangs
// of different sizes; it reports whether it changed anything. For every
// (type b, type a, size) it keeps the gang on b of that size that would
// save most on a (p.xcand), so that a gang's best partner is a lookup;
// after a change the entries of the two types it touched are rebuilt.
func (p *ScoredPolicy) swapUnequal(s *RoundState, x []float64) bool {
	nt, n, ns := len(s.Types), len(s.Jobs), len(p.xsizes)
	if ns == 0 {
		return false
	}
	p.xcand = slices.Grow(p.xcand[:0], nt*nt*ns)[:nt*nt*ns]
	for t := range nt {
		p.rebuildCand(s, t)
	}
	changed := false
	for a := range n {
		ta := p.xtyp[a]
		if ta < 0 {
			continue
		}
		sa := s.Jobs[a].Scale
		bestB, bestT, bestG := -1, -1, exchangeMinGain
		for tb := range nt {
			if tb == ta {
				continue
			}
			ga := p.gainOf(s, a, tb)
			if math.IsInf(ga, -1) {
				continue
			}
			if p.free[tb] >= sa && ga > bestG {
				bestB, bestT, bestG = -1, tb, ga
			}
			for k, sb := range p.xsizes {
				if sb == sa || p.free[tb] < sa-sb || p.free[ta] < sb-sa {
					continue
				}
				c := p.xcand[(tb*nt+ta)*ns+k]
				if c.job < 0 {
					continue
				}
				if g := ga + c.gain; g > bestG {
					bestB, bestT, bestG = c.job, tb, g
				}
			}
		}
		if bestT < 0 {
			continue
		}
		// Move b first when it is the smaller gang, a first otherwise, so
		// that the free GPUs never go negative.
		if bestB >= 0 && s.Jobs[bestB].Scale < sa {
			p.setType(s, x, bestB, ta)
			p.setType(s, x, a, bestT)
		} else {
			p.setType(s, x, a, bestT)
			if bestB >= 0 {
				p.setType(s, x, bestB, ta)
			}
		}
		p.rebuildCand(s, ta)
		p.rebuildCand(s, bestT)
		changed = true
	}
	return changed
}

// rebuildCand recomputes p.xcand's entries of the gangs on type tb: for
// every other type and size, the gang on tb of that size that saves most
// (or loses least: its partner's gain may outweigh it) by moving there,
// lowest index on ties; job -1 where no gang of that size on tb can run
// there.
func (p *ScoredPolicy) rebuildCand(s *RoundState, tb int) {
	nt, ns := len(s.Types), len(p.xsizes)
	row := p.xcand[tb*nt*ns : (tb+1)*nt*ns]
	for k := range row {
		row[k] = xchEntry{job: -1, gain: math.Inf(-1)}
	}
	for i, t := range p.xtyp {
		if t != tb {
			continue
		}
		k := slices.Index(p.xsizes, s.Jobs[i].Scale)
		for ta := range nt {
			if ta == tb {
				continue
			}
			if g := p.gainOf(s, i, ta); !math.IsInf(g, -1) && g > row[ta*ns+k].gain {
				row[ta*ns+k] = xchEntry{job: i, scale: s.Jobs[i].Scale, gain: g}
			}
		}
	}
}

// maxExchangePasses bounds exchange's passes. Each change lowers the
// summed slowdown, so they end; on Gavel's continuous-multiple protocol
// (seed 100, 1.4, 2.0 and 2.6 jobs/h) the last, which changes nothing, is
// at most the fifth.
const maxExchangePasses = 32

// exchangeMinGain is the summed slowdown a swap must save: above round-off,
// so that a swap and its reverse cannot both qualify.
const exchangeMinGain = 1e-9
