package env

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// A small dense simplex for the allocation LPs of the round-based policies.
//
// Every LP the policies build has the form
//
//	maximise c1·x, then c2·x among the c1-optimal points, …
//	subject to A x <= b, x >= 0, with b >= 0,
//
// so the origin is a feasible basis (all slacks basic) and no phase 1 is
// needed. The policies collapse identical jobs into classes first, which
// keeps the tableau at a few dozen rows for Gavel's workloads; at that size a
// dense tableau with reused buffers beats gonum's general revised simplex
// (optimize/convex/lp), which the tests keep as the oracle, by two orders of
// magnitude (docs/gavel-policies.md).

// errLPUnbounded reports an objective that grows without bound.
var errLPUnbounded = errors.New("lp: objective is unbounded")

// lpTol is the pivot and optimality tolerance. The LPs' coefficients are
// normalised to O(1) by the policies, so an absolute tolerance serves.
const lpTol = 1e-11

// lpPivotTol is the smallest entry the ratio test pivots on: dividing by
// entries near round-off amplifies it until the basis is infeasible.
const lpPivotTol = 1e-9

// lpSolver solves LPs of the form above, reusing its buffers between calls.
// The zero value is ready to use. It is not safe for concurrent use.
type lpSolver struct {
	m, n  int       // constraints, structural variables
	w     int       // tableau row width: n + m + 1 (slacks, then the RHS)
	tab   []float64 // m rows of width w
	obj   []float64 // one row of width w per objective: reduced costs, value last
	nobj  int
	basis []int     // basis[r]: the column basic in row r
	nz    []int     // the pivot row's nonzero columns
	nzv   []float64 // and their values, in nz's order
	x     []float64
	// Pivots counts the pivots of the last solve (for benchmarks and tests).
	pivots int
}

// solve maximises the objectives lexicographically subject to A x <= b,
// x >= 0. a is row-major m×n, b has m entries (all >= 0), each objective n
// entries. It returns x (owned by the solver, valid until the next call).
func (s *lpSolver) solve(m, n int, a, b []float64, objs ...[]float64) ([]float64, error) {
	if len(a) != m*n || len(b) != m {
		return nil, fmt.Errorf("lp: shapes: a has %d entries for %d×%d, b %d", len(a), m, n, len(b))
	}
	if len(objs) == 0 {
		return nil, errors.New("lp: no objective")
	}
	s.m, s.n, s.w, s.nobj = m, n, n+m+1, len(objs)
	s.tab = lpGrow(s.tab, m*s.w)
	s.obj = lpGrow(s.obj, s.nobj*s.w)
	s.basis = lpGrowInt(s.basis, m)
	s.x = lpGrow(s.x, n)
	clear(s.tab)
	clear(s.obj)
	for r := range m {
		if !(b[r] >= 0) || math.IsInf(b[r], 1) {
			return nil, fmt.Errorf("lp: right-hand side %d is %v, want finite >= 0", r, b[r])
		}
		row := s.tab[r*s.w : (r+1)*s.w]
		copy(row[:n], a[r*n:(r+1)*n])
		row[n+r] = 1
		row[s.w-1] = b[r]
		s.basis[r] = n + r
	}
	for k, c := range objs {
		if len(c) != n {
			return nil, fmt.Errorf("lp: objective %d has %d entries, want %d", k, len(c), n)
		}
		z := s.obj[k*s.w : (k+1)*s.w]
		for j, v := range c {
			z[j] = -v
		}
	}
	s.pivots = 0
	return s.optimiseAll()
}

// optimiseAll optimises every objective in turn from the current basis
// and returns the structural variables' values.
func (s *lpSolver) optimiseAll() ([]float64, error) {
	for k := range s.nobj {
		if err := s.optimise(k); err != nil {
			return nil, err
		}
	}
	clear(s.x)
	for r, col := range s.basis {
		if col < s.n {
			s.x[col] = max(s.tab[r*s.w+s.w-1], 0) // a value below 0 is round-off
		}
	}
	return s.x, nil
}

// optimise runs primal simplex on objective k, letting in only columns whose
// reduced costs in the earlier objectives are zero, so their optima hold.
// Entering: the most negative reduced cost (lowest index on ties); after a
// run of degenerate pivots, Bland's rule (lowest eligible index) until the
// objective moves again, which rules out cycling. Leaving: the minimum
// ratio, lowest basic column on ties.
func (s *lpSolver) optimise(k int) error {
	z := s.obj[k*s.w : (k+1)*s.w]
	limit := 50 * (s.m + s.n + 10)
	degenerate := 0
	for iter := 0; ; iter++ {
		if iter > limit {
			return fmt.Errorf("lp: no optimum after %d pivots (%d×%d)", iter, s.m, s.n)
		}
		bland := degenerate > s.m
		enter := -1
		best := -lpTol
		for j := 0; j < s.w-1; j++ {
			if z[j] >= best {
				continue
			}
			if !s.eligible(k, j) {
				continue
			}
			enter = j
			if bland {
				break
			}
			best = z[j]
		}
		if enter < 0 {
			return nil
		}
		leave := -1
		ratio := math.Inf(1)
		for r := range s.m {
			v := s.tab[r*s.w+enter]
			if v <= lpPivotTol {
				continue
			}
			// A right-hand side below 0 is round-off: as 0 it cannot make
			// a negative ratio win the test.
			q := max(s.tab[r*s.w+s.w-1], 0) / v
			if q < ratio-1e-14 || (q <= ratio+1e-14 && leave >= 0 && s.basis[r] < s.basis[leave]) {
				ratio, leave = q, r
			}
		}
		if leave < 0 {
			return errLPUnbounded
		}
		if ratio <= 1e-14 {
			degenerate++
		} else {
			degenerate = 0
		}
		s.pivot(leave, enter)
	}
}

// eligible reports whether column j may enter while optimising objective k:
// every earlier objective must be indifferent to it.
func (s *lpSolver) eligible(k, j int) bool {
	for l := range k {
		if math.Abs(s.obj[l*s.w+j]) > lpTol {
			return false
		}
	}
	return true
}

// pivot makes column enter basic in row leave. The pivot row is usually
// sparse, so the elimination runs over its nonzero columns only.
func (s *lpSolver) pivot(leave, enter int) {
	s.pivots++
	w := s.w
	prow := s.tab[leave*w : (leave+1)*w]
	inv := 1 / prow[enter]
	s.nz, s.nzv = s.nz[:0], s.nzv[:0]
	for j := range prow {
		if prow[j] != 0 {
			if j == enter {
				prow[j] = 1
			} else {
				prow[j] *= inv
			}
			s.nz = append(s.nz, j)
			s.nzv = append(s.nzv, prow[j])
		}
	}
	for r := range s.m {
		if r == leave {
			continue
		}
		lpEliminate(s.tab[r*w:(r+1)*w], s.nz, s.nzv, enter)
	}
	for k := range s.nobj {
		lpEliminate(s.obj[k*w:(k+1)*w], s.nz, s.nzv, enter)
	}
	s.basis[leave] = enter
}

// lpEliminate subtracts f times the pivot row from row so that row[enter]
// becomes 0; nz lists the pivot row's nonzero columns and v their values
// (gathered once per pivot, so each row reads them in order).
func lpEliminate(row []float64, nz []int, v []float64, enter int) {
	f := row[enter]
	if f == 0 {
		return
	}
	v = v[:len(nz)]
	for k, j := range nz {
		row[j] -= f * v[k]
	}
	row[enter] = 0
}

// extend adds structural columns to the last solve's LP and optimises
// the objectives again from its basis, which stays feasible: column q's
// constraint coefficients are the entries ent[start[q]:start[q+1]] and
// its objective coefficients costs[k][q]. The new columns come after the
// old ones. It returns x over all columns, like solve.
func (s *lpSolver) extend(ent []lpEntry, start []int, costs ...[]float64) ([]float64, error) {
	q := len(start) - 1
	if q <= 0 {
		return s.x, nil
	}
	if len(costs) != s.nobj {
		return nil, fmt.Errorf("lp: %d objectives for %d", len(costs), s.nobj)
	}
	m, n, w := s.m, s.n, s.w
	n2, w2 := n+q, w+q
	// Move the rows to the wider layout in place, from the last row so
	// that no row is overwritten before it moves: [old structurals][new][slacks][rhs].
	s.tab = slices.Grow(s.tab[:m*w], m*q)[:m*w2]
	s.obj = slices.Grow(s.obj[:s.nobj*w], s.nobj*q)[:s.nobj*w2]
	widen := func(buf []float64, rows int) {
		for r := rows - 1; r >= 0; r-- {
			old := buf[r*w : (r+1)*w]
			nw := buf[r*w2 : (r+1)*w2]
			copy(nw[n+q:], old[n:]) // slacks and rhs (copy handles the overlap)
			copy(nw[:n], old[:n])
			clear(nw[n : n+q])
		}
	}
	widen(s.tab, m)
	widen(s.obj, s.nobj)
	for r := range s.basis {
		if s.basis[r] >= n {
			s.basis[r] += q
		}
	}
	// A new column in the current basis: B⁻¹a, B⁻¹ being the slacks' part
	// of the tableau; its reduced costs -c + y·a, y the slacks' ones.
	for c := range q {
		col := ent[start[c]:start[c+1]]
		for r := range m {
			row := s.tab[r*w2 : (r+1)*w2]
			v := 0.0
			for _, e := range col {
				v += row[n2+e.row] * e.v
			}
			row[n+c] = v
		}
		for k := range s.nobj {
			z := s.obj[k*w2 : (k+1)*w2]
			v := -costs[k][c]
			for _, e := range col {
				v += z[n2+e.row] * e.v
			}
			z[n+c] = v
		}
	}
	s.n, s.w = n2, w2
	s.x = lpGrow(s.x, n2)
	return s.optimiseAll()
}

// dual returns objective k's dual value of constraint r after a solve:
// its slack's reduced cost.
func (s *lpSolver) dual(k, r int) float64 { return s.obj[k*s.w+s.n+r] }

// value returns objective k's optimal value after a solve.
func (s *lpSolver) value(k int) float64 { return s.obj[k*s.w+s.w-1] }

func lpGrow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}

func lpGrowInt(b []int, n int) []int {
	if cap(b) < n {
		return make([]int, n)
	}
	return b[:n]
}
