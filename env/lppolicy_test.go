package env

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// gonumMaxLE solves max c·x s.t. A x <= b, x >= 0 with gonum's simplex (the
// oracle), returning the optimum and x.
func gonumMaxLE(t testing.TB, m, n int, a, b, c []float64) (float64, []float64) {
	t.Helper()
	w := n + m
	A := mat.NewDense(m, w, nil)
	for r := range m {
		for j := range n {
			A.Set(r, j, a[r*n+j])
		}
		A.Set(r, n+r, 1)
	}
	cc := make([]float64, w)
	for j := range n {
		cc[j] = -c[j]
	}
	f, x, err := lp.Simplex(cc, A, b, 1e-10, nil)
	if err != nil {
		t.Fatalf("gonum simplex: %v", err)
	}
	return -f, x[:n]
}

// maxMinLP builds the un-collapsed max-min LP of maxMin (columns x[i,j]
// then λ) for the oracle.
func maxMinLP(coef []float64, scale, capacity []int) (m, n int, a, b, c []float64) {
	nj, nt := len(scale), len(capacity)
	n = nj*nt + 1
	m = 2*nj + nt
	a = make([]float64, m*n)
	b = make([]float64, m)
	c = make([]float64, n)
	c[n-1] = 1
	for i := range nj {
		a[i*n+n-1] = 1
		b[nj+i] = 1
		for j := range nt {
			v := i*nt + j
			if coef[v] > 0 && scale[i] <= capacity[j] {
				a[i*n+v] = -coef[v]
				a[(nj+i)*n+v] = 1
				a[(2*nj+j)*n+v] = float64(scale[i])
			} else {
				a[(nj+i)*n+v] = 1 // keeps the column bounded; it earns nothing
			}
		}
	}
	for j := range nt {
		b[2*nj+j] = float64(capacity[j])
	}
	return
}

func TestLPSolverHand(t *testing.T) {
	// max 3x + 2y s.t. x + y <= 4, x + 3y <= 6, x <= 3: the optimum is the
	// vertex x = 3, y = 1 with value 11.
	var s lpSolver
	x, err := s.solve(3, 2, []float64{1, 1, 1, 3, 1, 0}, []float64{4, 6, 3}, []float64{3, 2})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[0]-3) > 1e-12 || math.Abs(x[1]-1) > 1e-12 || math.Abs(s.value(0)-11) > 1e-12 {
		t.Fatalf("x = %v, value %v; want [3 1], 11", x, s.value(0))
	}
	// Lexicographic: max x + y (4, on the edge from (3, 1) to (4, 0) cut
	// by x <= 3, so only (3, 1) remains), then max y: (3, 1).
	x, err = s.solve(3, 2, []float64{1, 1, 1, 3, 1, 0}, []float64{4, 6, 3}, []float64{1, 1}, []float64{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[0]-3) > 1e-12 || math.Abs(x[1]-1) > 1e-12 {
		t.Fatalf("lexicographic x = %v, want [3 1]", x)
	}
	// The reverse order: max y first (y = 2 at x = 0), then x: x + 3y <= 6
	// binds, so x = 0.
	x, err = s.solve(3, 2, []float64{1, 1, 1, 3, 1, 0}, []float64{4, 6, 3}, []float64{0, 1}, []float64{1, 0})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(x[0]) > 1e-12 || math.Abs(x[1]-2) > 1e-12 {
		t.Fatalf("lexicographic x = %v, want [0 2]", x)
	}
	if _, err := s.solve(1, 2, []float64{1, -1}, []float64{1}, []float64{0, 1}); !errors.Is(err, errLPUnbounded) {
		t.Fatalf("unbounded LP: err %v", err)
	}
	if _, err := s.solve(1, 1, []float64{1}, []float64{-1}, []float64{1}); err == nil {
		t.Fatal("negative right-hand side accepted")
	}
}

func TestLPSolverMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s lpSolver
	trials := 300
	if testing.Short() {
		trials = 100
	}
	for trial := range trials {
		m, n := 1+rng.IntN(12), 1+rng.IntN(12)
		a := make([]float64, m*n)
		b := make([]float64, m)
		c := make([]float64, n)
		for i := range a {
			if rng.IntN(3) > 0 {
				a[i] = rng.Float64()*4 - 1
			}
		}
		for i := range b {
			b[i] = rng.Float64() * 5
			if rng.IntN(4) == 0 {
				b[i] = 0 // degenerate vertices
			}
		}
		for j := range n {
			c[j] = rng.Float64()*2 - 0.5
			a[j%m*n+j] = 1 + rng.Float64() // every column bounded
		}
		x, err := s.solve(m, n, a, b, c)
		want, _ := gonumMaxLE(t, m, n, a, b, c)
		if err != nil {
			if errors.Is(err, errLPUnbounded) {
				continue
			}
			t.Fatalf("trial %d: %v", trial, err)
		}
		got := 0.0
		for j := range n {
			got += c[j] * x[j]
			if x[j] < 0 {
				t.Fatalf("trial %d: x[%d] = %v", trial, j, x[j])
			}
		}
		for r := range m {
			lhs := 0.0
			for j := range n {
				lhs += a[r*n+j] * x[j]
			}
			if lhs > b[r]+1e-9 {
				t.Fatalf("trial %d: row %d: %v > %v", trial, r, lhs, b[r])
			}
		}
		if math.Abs(got-want) > 1e-7*(1+math.Abs(want)) {
			t.Fatalf("trial %d (%d×%d): objective %v, gonum %v", trial, m, n, got, want)
		}
	}
}

// round builds a RoundState with unit priorities and scale factors.
func round(types []string, capacity []int, thr [][]float64) *RoundState {
	s := &RoundState{Types: types, Capacity: capacity}
	for i, row := range thr {
		s.Jobs = append(s.Jobs, RoundJob{ID: i, Scale: 1, Priority: 1, StepsTotal: 1000, StepsLeft: 1000})
		s.Throughput = append(s.Throughput, row...)
	}
	return s
}

func TestMaxMinPerfHand(t *testing.T) {
	// Three jobs, one V100 and one K80. A runs 4 steps/s on the V100 and 1
	// on the K80, B and C 1 on either. Agnostic shares: 2 GPUs over 3 jobs,
	// y = 2/3 each; isolated throughputs A 2/3·(4+1)/2 = 5/3, B = C = 2/3,
	// so the normalised coefficients are A (2.4, 0.6), B = C (1.5, 1.5).
	// A gains four times more per V100 second than per K80 second, B and C
	// the same, so A takes only V100 time a: λ = 2.4a, and B and C split the
	// rest, 1.5·(2-a)/2 each. Equal at a = 10/21, λ = 8/7; the V100 then has
	// 11/21 left for B and C (11/42 each), the K80 gives them 1/2 each.
	s := round([]string{"v100", "k80"}, []int{1, 1}, [][]float64{{4, 1}, {1, 1}, {1, 1}})
	x := make([]float64, 6)
	p := &MaxMinFairnessPerf{}
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	want := []float64{10.0 / 21, 0, 11.0 / 42, 0.5, 11.0 / 42, 0.5}
	for i := range want {
		if math.Abs(x[i]-want[i]) > 1e-9 {
			t.Fatalf("x = %v, want %v", x, want)
		}
	}
	// Two jobs, two GPUs: everyone fits; job 0 (2, 1) and job 1 (1, 1) reach
	// λ = 1 with job 0 on the V100 and job 1 on the K80, the only allocation
	// that also gives each job its best type's throughput.
	s = round([]string{"v100", "k80"}, []int{1, 1}, [][]float64{{2, 1}, {1, 1}})
	x = x[:4]
	if err := p.Allocate(s, x); err != nil {
		t.Fatal(err)
	}
	want = []float64{1, 0, 0, 1}
	for i := range want {
		if math.Abs(x[i]-want[i]) > 1e-9 {
			t.Fatalf("x = %v, want %v", x, want)
		}
	}
}

func TestMaxMinPerfErrors(t *testing.T) {
	p := &MaxMinFairnessPerf{}
	ok := round([]string{"v100", "k80"}, []int{1, 1}, [][]float64{{2, 1}})
	cases := []struct {
		name string
		edit func(s *RoundState)
		want error
	}{
		{"zero capacity", func(s *RoundState) { s.Capacity = []int{0, 0} }, ErrRoundNoCapacity},
		{"no types", func(s *RoundState) { s.Types = nil; s.Capacity = nil }, ErrRoundNoCapacity},
		{"job cannot run", func(s *RoundState) { s.Throughput = []float64{0, 0} }, ErrRoundJobCannot},
		{"gang too large", func(s *RoundState) { s.Jobs[0].Scale = 2 }, ErrRoundJobCannot},
		{"NaN throughput", func(s *RoundState) { s.Throughput[0] = math.NaN() }, nil},
		{"zero priority", func(s *RoundState) { s.Jobs[0].Priority = 0 }, nil},
		{"short matrix", func(s *RoundState) { s.Throughput = s.Throughput[:1] }, nil},
	}
	// No active jobs: the empty allocation, no error.
	if err := p.Allocate(&RoundState{Types: ok.Types, Capacity: ok.Capacity}, nil); err != nil {
		t.Errorf("no jobs: %v", err)
	}
	for _, c := range cases {
		s := *ok
		s.Jobs = append([]RoundJob(nil), ok.Jobs...)
		s.Throughput = append([]float64(nil), ok.Throughput...)
		c.edit(&s)
		x := make([]float64, len(s.Jobs)*max(1, len(s.Types)))
		err := p.Allocate(&s, x)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// randomRound draws a cluster and jobs from a few job types (so classes
// form), with mixed scale factors and priorities when multi is set.
func randomRound(rng *rand.Rand, jobs, types int, multi bool) *RoundState {
	s := &RoundState{Time: 3600}
	for j := range types {
		s.Types = append(s.Types, fmt.Sprintf("g%d", j))
		s.Capacity = append(s.Capacity, rng.IntN(8))
	}
	s.Capacity[rng.IntN(types)] += 1 + rng.IntN(4)
	ntypes := 1 + rng.IntN(6)
	rows := make([][]float64, ntypes)
	for k := range rows {
		rows[k] = make([]float64, types)
		for j := range rows[k] {
			if rng.IntN(6) > 0 {
				rows[k][j] = 0.1 + rng.Float64()*10
			}
		}
		rows[k][rng.IntN(types)] = 0.5 + rng.Float64()
	}
	for i := range jobs {
		k := rng.IntN(ntypes)
		job := RoundJob{ID: i, Type: k, Scale: 1, Priority: 1, Arrival: rng.Float64() * 3000,
			StepsTotal: 1e5, StepsLeft: 1 + rng.Float64()*1e5, Attained: rng.Float64() * 1e4}
		if multi {
			job.Scale = []int{1, 1, 2, 4}[rng.IntN(4)]
			job.Priority = []float64{1, 1, 5}[rng.IntN(3)]
		}
		s.Jobs = append(s.Jobs, job)
		s.Throughput = append(s.Throughput, rows[k]...)
	}
	// Every job must be able to run somewhere: fix gangs that fit nowhere.
	for i := range s.Jobs {
		for !canRun(s, i) {
			if s.Jobs[i].Scale > 1 {
				s.Jobs[i].Scale /= 2
				continue
			}
			s.Throughput[i*types] = 1
			s.Capacity[0] = max(s.Capacity[0], 1)
		}
	}
	return s
}

func canRun(s *RoundState, i int) bool {
	for j := range s.Types {
		if usable(s, i, j) {
			return true
		}
	}
	return false
}

// checkFeasible fails unless x is a valid allocation for s.
func checkFeasible(t testing.TB, s *RoundState, x []float64) {
	t.Helper()
	nt := len(s.Types)
	used := make([]float64, nt)
	for i, job := range s.Jobs {
		row := 0.0
		for j := range nt {
			v := x[i*nt+j]
			if v < 0 || math.IsNaN(v) {
				t.Fatalf("x[%d,%d] = %v", i, j, v)
			}
			if v > 0 && !usable(s, i, j) {
				t.Fatalf("job %d given %v of type %d it cannot use", i, v, j)
			}
			row += v
			used[j] += v * float64(job.Scale)
		}
		if row > 1+1e-9 {
			t.Fatalf("job %d's row sums to %v", i, row)
		}
	}
	for j := range nt {
		if used[j] > float64(s.Capacity[j])+1e-9 {
			t.Fatalf("type %d: %v GPUs used of %d", j, used[j], s.Capacity[j])
		}
	}
}

// perfCoef recomputes max_min_fairness_perf's coefficients independently
// of the policy's code path (same definition, direct loops).
func perfCoef(s *RoundState) []float64 {
	nt := len(s.Types)
	y := make([]float64, len(s.Jobs))
	agnosticShares(s, y, nil)
	total := 0
	for _, c := range s.Capacity {
		total += c
	}
	coef := make([]float64, len(s.Throughput))
	for i, job := range s.Jobs {
		iso := 0.0
		for j := range nt {
			iso += s.Throughput[i*nt+j] * y[i] * float64(s.Capacity[j]) / float64(total)
		}
		for j := range nt {
			coef[i*nt+j] = float64(job.Scale) * s.Throughput[i*nt+j] / (job.Priority * iso)
		}
	}
	return coef
}

func minLevel(s *RoundState, coef, x []float64) float64 {
	nt := len(s.Types)
	lv := math.Inf(1)
	for i := range s.Jobs {
		v := 0.0
		for j := range nt {
			v += coef[i*nt+j] * x[i*nt+j]
		}
		lv = min(lv, v)
	}
	return lv
}

func TestMaxMinPerfMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	p := &MaxMinFairnessPerf{}
	trials := 200
	if testing.Short() {
		trials = 40
	}
	for trial := range trials {
		s := randomRound(rng, 1+rng.IntN(12), 1+rng.IntN(3), trial%2 == 1)
		x := make([]float64, len(s.Throughput))
		if err := p.Allocate(s, x); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		checkFeasible(t, s, x)
		coef := perfCoef(s)
		scale := make([]int, len(s.Jobs))
		for i, j := range s.Jobs {
			scale[i] = j.Scale
		}
		m, n, a, b, c := maxMinLP(coef, scale, s.Capacity)
		want, _ := gonumMaxLE(t, m, n, a, b, c)
		got := minLevel(s, coef, x)
		if math.Abs(got-want) > 1e-6*max(1, want) {
			t.Fatalf("trial %d: min level %v, gonum's LP %v", trial, got, want)
		}
	}
}

func TestMaxMinPerfGrid(t *testing.T) {
	// Two jobs on two types: no allocation on a 0.05 grid has a larger
	// minimum than the policy's (up to the grid's resolution, which can
	// only lose).
	rng := rand.New(rand.NewPCG(3, 4))
	p := &MaxMinFairnessPerf{}
	const steps = 20
	for trial := range 20 {
		s := round([]string{"a", "b"}, []int{1 + rng.IntN(2), 1},
			[][]float64{{0.2 + rng.Float64()*3, 0.2 + rng.Float64()*3}, {0.2 + rng.Float64()*3, 0.2 + rng.Float64()*3}})
		x := make([]float64, 4)
		if err := p.Allocate(s, x); err != nil {
			t.Fatal(err)
		}
		checkFeasible(t, s, x)
		coef := perfCoef(s)
		got := minLevel(s, coef, x)
		g := make([]float64, 4)
		for a := range steps + 1 {
			for b := range steps + 1 - a {
				for c := range steps + 1 {
					for d := range steps + 1 - c {
						g[0], g[1], g[2], g[3] = float64(a)/steps, float64(b)/steps, float64(c)/steps, float64(d)/steps
						if g[0]+g[2] > float64(s.Capacity[0])+1e-12 || g[1]+g[3] > float64(s.Capacity[1])+1e-12 {
							continue
						}
						if lv := minLevel(s, coef, g); lv > got+1e-9 {
							t.Fatalf("trial %d: grid point %v reaches %v > policy's %v (x %v)", trial, g, lv, got, x)
						}
					}
				}
			}
		}
	}
}

func TestMaxMinPerfDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := randomRound(rng, 200, 3, true)
	x1 := make([]float64, len(s.Throughput))
	x2 := make([]float64, len(s.Throughput))
	if err := (&MaxMinFairnessPerf{}).Allocate(s, x1); err != nil {
		t.Fatal(err)
	}
	p := &MaxMinFairnessPerf{}
	// A policy reused after another input gives the same bytes.
	if err := p.Allocate(randomRound(rng, 30, 3, false), make([]float64, 90)); err != nil {
		t.Fatal(err)
	}
	if err := p.Allocate(s, x2); err != nil {
		t.Fatal(err)
	}
	for i := range x1 {
		if math.Float64bits(x1[i]) != math.Float64bits(x2[i]) {
			t.Fatalf("x[%d]: %v then %v", i, x1[i], x2[i])
		}
	}
	checkFeasible(t, s, x1)
}
