package env

import (
	"fmt"
	"math"
	"slices"
)

// MaxMinFairnessPacked is Gavel's max_min_fairness_packed: heterogeneity-
// aware max-min fairness with space sharing. Besides running alone, two
// jobs with the same scale factor may share the same GPUs of a type, each
// at the pair throughput of Gavel's co-location table (RoundState.Pair). It
// maximises the minimum over jobs of
//
//	scale_i · (Σ_j T[i,j]·x[i,j] + Σ_pairs Σ_j T_pair[i|k,j]·z[ik,j]) / (priority_i · Σ_j T[i,j])
//
// (Gavel's packing normalisation: the sum of the job's isolated throughputs
// over the types) subject to each job's time alone and in pairs summing to
// at most 1 and each type's GPUs, a pair using scale GPUs.
//
// Jobs of one job type, scale factor and priority are interchangeable, so
// the LP has one variable per class of such jobs and type and one per pair
// of classes and type (Gavel, too, solves a job-type formulation for this
// reason); the pairs' time is then spread over concrete job pairs: between
// two classes so that every job gets its class's share (the north-west
// corner rule), within a class along a ring. Ties among optimal allocations
// go to the one with the most total throughput relative to each job's best,
// as in MaxMinFairnessPerf.
type MaxMinFairnessPacked struct {
	// TieDeficit, when positive, weights each class in that tie-break by
	// 1 + TieDeficit × its jobs' mean progress deficit (1 − steps done /
	// (age × steps per second on the job's fastest type), within [0, 1]):
	// among allocations with the same max-min level, the spare fast GPUs
	// go first to the jobs furthest behind running alone, rather than to
	// the same jobs at every solve. Gangs are weighted only while the
	// jobs ask for more GPUs than the cluster has: a gang's deficit also
	// counts the rounds it waited for enough GPUs of one type at once,
	// and with GPUs for every job that wait is placement, which a larger
	// share does not remove (weighting gangs then cost 0.75% of average
	// JCT on the spot cluster's multi-GPU workload at load 0.6). 0 is
	// Gavel's policy.
	TieDeficit float64
	// Support, when set, keeps only its columns (and each class's alone
	// column on its fastest usable type): a distilled student's LP.
	Support *ColumnSupport
	// MaxPairColumns, when positive, refuses (ErrRoundTooLarge) a round
	// whose LP would have more pair columns, before the LP is built: its
	// cost grows with the cube of the job classes, and a service bounds
	// what one request may cost. 0 leaves only the simulator's bound.
	MaxPairColumns int

	used    []UsedColumn
	lp      lpSolver
	classOf []int
	first   []int
	count   []int
	members [][]int // class -> its jobs (indices into s.Jobs), in order
	best    []float64
	cols    []packCol
	a, b    []float64
	c1, c2  []float64
	norm    []float64
	pairs   []RoundPair
	xbuf    []float64 // the pairs' X, nt values each, in pair order
	per     []float64 // one class pair's time per type
	wk      []float64 // class tie-break weights (TieDeficit)
	cost    []float64 // each column's tie-break coefficient
	sel     []int     // the solver's columns: indices into cols, -1 for the max-min level
	start   []int     // priced-in columns' first entries in ent
	y       []float64 // each column's value
	ent     []lpEntry
	gid     []int // the support's number of each GPU type of the round
	// Priced counts the solves a priced support needed again (tests and
	// benchmarks).
	Priced int
}

// packCol is one LP column: class k alone (l < 0) or classes k <= l
// together, on type j, with the per-unit throughputs tk, tl.
type packCol struct {
	k, l, j int
	tk, tl  float64
	// out marks a column outside a priced support (ColumnSupport.Price):
	// it enters the LP only when the restricted LP's duals price it in.
	out bool
}

// Used lists the columns with a positive value in the last allocation's
// LP (owned by p, valid until the next Allocate): what a distilled
// student's support is made of.
func (p *MaxMinFairnessPacked) Used() []UsedColumn { return p.used }

// Name returns "max_min_fairness_packed".
func (p *MaxMinFairnessPacked) Name() string { return "max_min_fairness_packed" }

// Pairs returns the co-located pairs of the last Allocate, valid until the
// next call.
func (p *MaxMinFairnessPacked) Pairs(s *RoundState) []RoundPair { return p.pairs }

// Allocate fills x with the jobs' time alone and records the pairs' time
// for Pairs.
func (p *MaxMinFairnessPacked) Allocate(s *RoundState, x []float64) error {
	if err := checkRound(s, x); err != nil {
		return fmt.Errorf("%s: %w", p.Name(), err)
	}
	p.pairs, p.used = p.pairs[:0], p.used[:0]
	clear(x)
	nj, nt := len(s.Jobs), len(s.Types)
	if nj == 0 {
		return nil
	}
	p.group(s)
	nc := len(p.first)
	price := p.Support != nil && p.Support.Price
	if p.Support != nil {
		p.gid = p.Support.gpuIDs(s.Types, p.gid)
	}
	// Normalisation and the columns.
	p.norm = lpGrow(p.norm, nc)
	p.best = lpGrow(p.best, nc)
	p.cols = p.cols[:0]
	for k, i := range p.first {
		job := s.Jobs[i]
		sum := 0.0
		for j := range nt {
			sum += s.Throughput[i*nt+j]
		}
		p.norm[k] = float64(job.Scale) / (job.Priority * sum)
		fastest := -1
		if p.Support != nil {
			for j := range nt {
				if usable(s, i, j) && (fastest < 0 || s.Throughput[i*nt+j] > s.Throughput[i*nt+fastest]) {
					fastest = j
				}
			}
		}
		for j := range nt {
			in := p.Support == nil || j == fastest || p.Support.hasAlone(job.Type, p.gid[j])
			if usable(s, i, j) && (in || price) {
				p.cols = append(p.cols, packCol{k: k, l: -1, j: j, tk: s.Throughput[i*nt+j] * p.norm[k], out: !in})
			}
		}
	}
	if s.Pair != nil {
		alone := len(p.cols)
		for k, i := range p.first {
			for l := k; l < nc; l++ {
				i2 := p.first[l]
				if s.Jobs[i].Scale != s.Jobs[i2].Scale || (l == k && p.count[k] < 2) {
					continue
				}
				for j := range nt {
					in := p.Support == nil || p.Support.hasPair(s.Jobs[i].Type, s.Jobs[i2].Type, p.gid[j])
					if s.Jobs[i].Scale > s.Capacity[j] || !(in || price) {
						continue
					}
					ti, tk, ok := s.Pair(i, i2, j)
					if !ok || !(ti > 0) || !(tk > 0) {
						continue
					}
					p.cols = append(p.cols, packCol{k: k, l: l, j: j, tk: ti * p.norm[k], tl: tk * p.norm[l], out: !in})
					if p.MaxPairColumns > 0 && len(p.cols)-alone > p.MaxPairColumns {
						return fmt.Errorf("%s: more than %d pair columns: %w", p.Name(), p.MaxPairColumns, ErrRoundTooLarge)
					}
				}
			}
		}
	}
	// A job gains at most its class's best coefficient per unit of its own
	// time, alone or paired, so λ* <= best_k for every class.
	clear(p.best)
	for _, c := range p.cols {
		p.best[c.k] = max(p.best[c.k], c.tk)
		if c.l >= 0 {
			p.best[c.l] = max(p.best[c.l], c.tl)
		}
	}
	for k, b := range p.best {
		if !(b > 0) {
			return fmt.Errorf("%s: job %d: %w", p.Name(), s.Jobs[p.first[k]].ID, ErrRoundJobCannot)
		}
	}
	rows := 2*nc + nt
	if nc > maxLPClasses || rows*(len(p.cols)+1+rows) > maxLPTableau {
		return fmt.Errorf("%s: %d job classes, %d columns: %w", p.Name(), nc, len(p.cols), ErrRoundTooLarge)
	}
	// Each column's objective coefficients: c1 (the max-min level) is 0
	// for every column, c2 the tie-break's relative throughput.
	p.cost = lpGrow(p.cost, len(p.cols))
	for v, c := range p.cols {
		mk := float64(p.count[c.k])
		switch {
		case c.l < 0:
			p.cost[v] = mk * c.tk / p.best[c.k]
		case c.l == c.k:
			p.cost[v] = 2 * c.tk / p.best[c.k]
		default:
			p.cost[v] = c.tk/p.best[c.k] + c.tl/p.best[c.l]
		}
	}
	if p.TieDeficit > 0 {
		p.weighTies(s)
	}
	y, err := p.solveColumns(s, rows)
	if err != nil {
		return fmt.Errorf("%s: LP over %d job classes and %d columns: %w", p.Name(), nc, len(p.cols), err)
	}
	for v, c := range p.cols {
		if y[v] > 0 {
			u := UsedColumn{A: s.Jobs[p.first[c.k]].Type, B: -1, GPU: c.j}
			if c.l >= 0 {
				u.B = s.Jobs[p.first[c.l]].Type
			}
			p.used = append(p.used, u)
		}
	}
	for v, c := range p.cols {
		if c.l >= 0 || y[v] <= 0 {
			continue
		}
		for _, i := range p.members[c.k] {
			x[i*nt+c.j] = min(y[v], 1)
		}
	}
	p.spreadPairs(s, y)
	return nil
}

// weighTies scales the tie-break objective's coefficients by each
// class's TieDeficit weight (1 for gangs unless the jobs ask for more
// GPUs than the cluster has).
func (p *MaxMinFairnessPacked) weighTies(s *RoundState) {
	nt := len(s.Types)
	p.wk = lpGrow(p.wk, len(p.first))
	asked, gpus := s.demand()
	for k, members := range p.members[:len(p.first)] {
		if s.Jobs[p.first[k]].Scale > 1 && asked <= gpus {
			p.wk[k] = 1
			continue
		}
		sum := 0.0
		for _, i := range members {
			j := &s.Jobs[i]
			best := slices.Max(s.Throughput[i*nt : (i+1)*nt])
			rate := 1.0
			if age := s.Time - j.Arrival; age > 0 && best > 0 {
				rate = min(1, max(0, (j.StepsTotal-j.StepsLeft)/(age*best)))
			}
			sum += 1 - rate
		}
		p.wk[k] = 1 + p.TieDeficit*sum/float64(len(members))
	}
	for v, c := range p.cols {
		if c.l < 0 || c.l == c.k {
			p.cost[v] *= p.wk[c.k]
		} else {
			p.cost[v] = c.tk/p.best[c.k]*p.wk[c.k] + c.tl/p.best[c.l]*p.wk[c.l]
		}
	}
}

// entries appends column c's constraint coefficients to e as (row,
// value) pairs: rows 0..nc-1 the classes' max-min rows, nc..2nc-1 their
// time, 2nc.. the types' GPUs. Alone, a variable is one job's share; in
// a pair, the pair entity's total time (GPU gangs × time), shared by the
// classes' jobs.
func (p *MaxMinFairnessPacked) entries(s *RoundState, c packCol, e []lpEntry) []lpEntry {
	nc := len(p.first)
	mk := float64(p.count[c.k])
	sc := float64(s.Jobs[p.first[c.k]].Scale)
	cj := float64(s.Capacity[c.j])
	switch {
	case c.l < 0:
		e = append(e, lpEntry{c.k, -c.tk / p.best[c.k]}, lpEntry{nc + c.k, 1}, lpEntry{2*nc + c.j, mk * sc / cj})
	case c.l == c.k:
		// Each unit involves two of the class's m_k jobs.
		e = append(e, lpEntry{c.k, -2 * c.tk / (mk * p.best[c.k])}, lpEntry{nc + c.k, 2 / mk}, lpEntry{2*nc + c.j, sc / cj})
	default:
		ml := float64(p.count[c.l])
		e = append(e, lpEntry{c.k, -c.tk / (mk * p.best[c.k])}, lpEntry{c.l, -c.tl / (ml * p.best[c.l])},
			lpEntry{nc + c.k, 1 / mk}, lpEntry{nc + c.l, 1 / ml}, lpEntry{2*nc + c.j, sc / cj})
	}
	return e
}

// lpEntry is one nonzero of an LP column.
type lpEntry struct {
	row int
	v   float64
}

// solveColumns solves the LP over the columns not marked out, then, for
// a priced support, adds every column outside it that the solution's
// duals price in (a negative reduced cost in the max-min level, or a
// zero one there and a negative one in the tie-break) and solves again,
// until none is: the optimum of the LP over every column, found in the
// LP over few. It returns each column's value (0 for those left out).
func (p *MaxMinFairnessPacked) solveColumns(s *RoundState, rows int) ([]float64, error) {
	nc := len(p.first)
	l := slices.Min(p.best)
	p.sel = p.sel[:0]
	for v, c := range p.cols {
		if !c.out {
			p.sel = append(p.sel, v)
		}
	}
	nv := len(p.sel) + 1
	mu := nv - 1
	p.a = lpGrow(p.a, rows*nv)
	p.b = lpGrow(p.b, rows)
	p.c1 = lpGrow(p.c1, nv)
	p.c2 = lpGrow(p.c2, nv)
	clear(p.a)
	clear(p.b)
	clear(p.c1)
	clear(p.c2)
	for k := range nc {
		p.a[k*nv+mu] = l / p.best[k]
		p.b[nc+k] = 1
	}
	for j := range len(s.Types) {
		p.b[2*nc+j] = 1
	}
	for u, v := range p.sel {
		p.ent = p.entries(s, p.cols[v], p.ent[:0])
		for _, e := range p.ent {
			p.a[e.row*nv+u] = e.v
		}
		p.c2[u] = p.cost[v]
	}
	p.c1[mu] = 1
	x, err := p.lp.solve(rows, nv, p.a, p.b, p.c1, p.c2)
	if err != nil {
		return nil, err
	}
	p.sel = append(p.sel, -1) // the solver's columns: sel, μ, then those priced in
	for len(p.sel)-1 < len(p.cols) {
		// Reduced costs of the columns left out: -c + dual·column.
		// c1 and c2 now hold the priced-in columns' costs: the solver has
		// its own copy of the LP's.
		p.ent, p.start = p.ent[:0], append(p.start[:0], 0)
		p.c1, p.c2 = p.c1[:0], p.c2[:0]
		for v := range p.cols {
			c := &p.cols[v]
			if !c.out {
				continue
			}
			n0 := len(p.ent)
			p.ent = p.entries(s, *c, p.ent)
			d1, d2 := 0.0, -p.cost[v]
			for _, e := range p.ent[n0:] {
				d1 += p.lp.dual(0, e.row) * e.v
				d2 += p.lp.dual(1, e.row) * e.v
			}
			if d1 < -lpTol || (d1 <= lpTol && d2 < -lpTol) {
				c.out = false
				p.sel = append(p.sel, v)
				p.start = append(p.start, len(p.ent))
				p.c1, p.c2 = append(p.c1, 0), append(p.c2, p.cost[v])
			} else {
				p.ent = p.ent[:n0]
			}
		}
		if len(p.start) == 1 {
			break
		}
		if x, err = p.lp.extend(p.ent, p.start, p.c1, p.c2); err != nil {
			return nil, err
		}
		p.Priced++
	}
	p.y = lpGrow(p.y, len(p.cols))
	clear(p.y)
	for u, v := range p.sel {
		if v >= 0 {
			p.y[v] = x[u]
		}
	}
	return p.y, nil
}

// group puts jobs of one (job type, scale, priority, throughput row) into
// a class, numbered by first job.
func (p *MaxMinFairnessPacked) group(s *RoundState) {
	nt := len(s.Types)
	p.classOf = lpGrowInt(p.classOf, len(s.Jobs))
	p.first, p.count = p.first[:0], p.count[:0]
	p.members = p.members[:0]
	for i, job := range s.Jobs {
		k := -1
		for c, f := range p.first {
			fj := s.Jobs[f]
			if fj.Type == job.Type && fj.Scale == job.Scale && fj.Priority == job.Priority &&
				slices.Equal(s.Throughput[f*nt:(f+1)*nt], s.Throughput[i*nt:(i+1)*nt]) {
				k = c
				break
			}
		}
		if k < 0 {
			k = len(p.first)
			p.first = append(p.first, i)
			p.count = append(p.count, 0)
			if k < cap(p.members) {
				p.members = p.members[:k+1]
				p.members[k] = p.members[k][:0]
			} else {
				p.members = append(p.members, nil)
			}
		}
		p.classOf[i] = k
		p.count[k]++
		p.members[k] = append(p.members[k], i)
	}
}

// spreadPairs turns each class pair's time into concrete job pairs whose
// time gives every job of a class the same share.
func (p *MaxMinFairnessPacked) spreadPairs(s *RoundState, y []float64) {
	nt := len(s.Types)
	p.xbuf = p.xbuf[:0]
	// Collect, per class pair, the time on each type.
	for v := 0; v < len(p.cols); {
		c := p.cols[v]
		if c.l < 0 {
			v++
			continue
		}
		// Columns of one class pair are consecutive (built type by type).
		p.per = lpGrow(p.per, nt)
		per := p.per
		clear(per)
		used := false
		w := v
		for ; w < len(p.cols) && p.cols[w].k == c.k && p.cols[w].l == c.l; w++ {
			per[p.cols[w].j] = y[w]
			if y[w] > 1e-12 {
				used = true
			}
		}
		v = w
		if !used {
			continue
		}
		A, B := p.members[c.k], p.members[c.l]
		if c.k == c.l {
			m := len(A)
			n := m // a ring: m pairs, each 1/m of the time
			frac := 1 / float64(m)
			if m == 2 {
				n, frac = 1, 1
			}
			for r := range n {
				p.addPair(s, A[r], A[(r+1)%m], per, frac)
			}
			continue
		}
		// North-west corner: supplies 1/m_k, demands 1/m_l, total 1.
		ra, rb := 1/float64(len(A)), 1/float64(len(B))
		ia, ib := 0, 0
		for ia < len(A) && ib < len(B) {
			f := min(ra, rb)
			if f > 1e-15 {
				p.addPair(s, A[ia], B[ib], per, f)
			}
			ra -= f
			rb -= f
			if ra <= 1e-15 {
				ia++
				ra = 1 / float64(len(A))
			}
			if rb <= 1e-15 {
				ib++
				rb = 1 / float64(len(B))
			}
		}
	}
	// X slices into xbuf only once it has stopped growing.
	for i := range p.pairs {
		p.pairs[i].X = p.xbuf[i*nt : (i+1)*nt : (i+1)*nt]
	}
}

func (p *MaxMinFairnessPacked) addPair(s *RoundState, i, k int, per []float64, frac float64) {
	a, b := s.Jobs[i].ID, s.Jobs[k].ID
	if a > b {
		a, b = b, a
	}
	for _, v := range per {
		p.xbuf = append(p.xbuf, math.Min(v*frac, 1))
	}
	p.pairs = append(p.pairs, RoundPair{A: a, B: b})
}
