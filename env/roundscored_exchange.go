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
// without changing which gangs run or how many GPUs of each type are
// used: it swaps the types of two gangs of the same size while the swap
// lowers their summed slowdown (throughput on the job's best type over
// throughput on the type it gets). The score decides who runs; greedy
// placement by score cannot trade a type between two jobs by comparative
// advantage, which Langevin's exchanges do (LangevinRound), and which is
// what matters when few jobs wait. For every pair of types p < q and gang
// size the swaps are the best p-gangs paired with the best q-gangs, in
// order of the slowdown each saves, while a pair saves any. Passes repeat
// until one swaps nothing, when no swap of two equal-size gangs would
// lower their summed slowdown; each is O(jobs × types² + sorting), and
// maxExchangePasses bounds them.
func (p *ScoredPolicy) exchange(s *RoundState, x []float64) {
	nt, n := len(s.Types), len(s.Jobs)
	p.xtyp = slices.Grow(p.xtyp[:0], n)[:n]
	p.xbest = slices.Grow(p.xbest[:0], n)[:n]
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
	}
	// slowdown of job i on type j; +Inf where it cannot run.
	slowdown := func(i, j int) float64 {
		if t := s.Throughput[i*nt+j]; t > 0 {
			return p.xbest[i] / t
		}
		return math.Inf(1)
	}
	byGain := func(a, b xchEntry) int {
		if c := cmp.Compare(a.scale, b.scale); c != 0 {
			return c
		}
		if c := cmpFloat(b.gain, a.gain); c != 0 {
			return c
		}
		return a.job - b.job
	}
	for range maxExchangePasses {
		swapped := false
		for tp := range nt {
			for tq := tp + 1; tq < nt; tq++ {
				p.xa, p.xb = p.xa[:0], p.xb[:0]
				for i := range n {
					switch p.xtyp[i] {
					case tp:
						if g := slowdown(i, tp) - slowdown(i, tq); !math.IsInf(g, -1) {
							p.xa = append(p.xa, xchEntry{i, s.Jobs[i].Scale, g})
						}
					case tq:
						if g := slowdown(i, tq) - slowdown(i, tp); !math.IsInf(g, -1) {
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
					x[a.job*nt+tp], x[b.job*nt+tq] = 0, 0
					x[a.job*nt+tq], x[b.job*nt+tp] = 1, 1
					p.xtyp[a.job], p.xtyp[b.job] = tq, tp
					p.next[s.Jobs[a.job].ID], p.next[s.Jobs[b.job].ID] = tq, tp
					swapped = true
					ia++
					ib++
				}
			}
		}
		if !swapped {
			return
		}
	}
}

// maxExchangePasses bounds exchange's passes. Each swap lowers the summed
// slowdown, so they end; on Gavel's continuous-multiple protocol (seed
// 100, 1.4 and 2.6 jobs/h) the last is the first, second or third.
const maxExchangePasses = 32

// exchangeMinGain is the summed slowdown a swap must save: above round-off,
// so that a swap and its reverse cannot both qualify.
const exchangeMinGain = 1e-9
