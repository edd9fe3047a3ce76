package env

import (
	"compress/gzip"
	"encoding/binary"
	"io"
	"math"
	"os"
	"testing"
)

// readLPFile reads an LP of testdata: little-endian uint32 rows, columns
// and nonzeros, then per nonzero uint16 row, uint16 column and float64
// value, then b, c1 and c2 as float64, all gzipped.
func readLPFile(t *testing.T, path string) (m, n int, a, b, c1, c2 []float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	m, n = int(le.Uint32(raw)), int(le.Uint32(raw[4:]))
	nz := int(le.Uint32(raw[8:]))
	raw = raw[12:]
	if len(raw) != 12*nz+8*(m+2*n) {
		t.Fatalf("%s: %d bytes for %d×%d with %d nonzeros", path, len(raw), m, n, nz)
	}
	a = make([]float64, m*n)
	for range nz {
		r, c := int(le.Uint16(raw)), int(le.Uint16(raw[2:]))
		a[r*n+c] = math.Float64frombits(le.Uint64(raw[4:]))
		raw = raw[12:]
	}
	vec := func(k int) []float64 {
		v := make([]float64, k)
		for i := range v {
			v[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
		raw = raw[8*k:]
		return v
	}
	b, c1, c2 = vec(m), vec(n), vec(n)
	return
}

// TestLPSolverRoundOff: the tiered policy's packed LP of spot/16-single at
// offered load 1.2, seed 0, at 674,280 s (50 job classes, 7,434 columns).
// Its second objective once pivoted on an entry of 2.4e-11 in a row whose
// right-hand side had drifted to -5e-14; the negative ratio won the test,
// the basis went infeasible and the solve ran out of pivots. The solution
// must be feasible and keep the first objective's optimum, which gonum's
// simplex confirms.
func TestLPSolverRoundOff(t *testing.T) {
	m, n, a, b, c1, c2 := readLPFile(t, "testdata/lp-spot16-tiered.bin.gz")
	var s lpSolver
	x, err := s.solve(m, n, a, b, c1, c2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d×%d: %d pivots, objectives %v and %v", m, n, s.pivots, s.value(0), s.value(1))
	if s.pivots > 5*(m+n) {
		t.Errorf("%d pivots", s.pivots)
	}
	for j, v := range x[:n] {
		if !(v >= 0) {
			t.Fatalf("x[%d] = %v", j, v)
		}
	}
	dot := func(c []float64) float64 {
		sum := 0.0
		for j := range n {
			sum += c[j] * x[j]
		}
		return sum
	}
	for r := range m {
		if lhs := dot(a[r*n : (r+1)*n]); lhs > b[r]+1e-9 {
			t.Errorf("row %d: %v > %v", r, lhs, b[r])
		}
	}
	if got, v := dot(c1), s.value(0); math.Abs(got-v) > 1e-9 {
		t.Errorf("first objective at x %v, reported %v", got, v)
	}
	if got, v := dot(c2), s.value(1); math.Abs(got-v) > 1e-6*math.Abs(v) {
		t.Errorf("second objective at x %v, reported %v", got, v)
	}
	if testing.Short() {
		return
	}
	want, _ := gonumMaxLE(t, m, n, a, b, c1)
	if math.Abs(s.value(0)-want) > 1e-9 {
		t.Errorf("first objective %v, gonum %v", s.value(0), want)
	}
	// The second objective over the first's optimal face (to 1e-9).
	a2 := append(append([]float64(nil), a...), make([]float64, n)...)
	for j := range n {
		a2[m*n+j] = -c1[j]
	}
	want2, _ := gonumMaxLE(t, m+1, n, a2, append(append([]float64(nil), b...), -(want-1e-9)), c2)
	if math.Abs(s.value(1)-want2) > 1e-6*math.Abs(want2) {
		t.Errorf("second objective %v, gonum %v", s.value(1), want2)
	}
}

// TestLPExtend: the LP of TestLPSolverRoundOff solved over every third
// column, then extended by the others in two steps, reaches the optimum
// of the LP solved whole, in both objectives, at a feasible point.
func TestLPExtend(t *testing.T) {
	m, n, a, b, c1, c2 := readLPFile(t, "testdata/lp-spot16-tiered.bin.gz")
	var whole lpSolver
	if _, err := whole.solve(m, n, a, b, c1, c2); err != nil {
		t.Fatal(err)
	}
	var first, second, third []int
	for j := range n {
		switch j % 3 {
		case 0:
			first = append(first, j)
		case 1:
			second = append(second, j)
		default:
			third = append(third, j)
		}
	}
	sub := func(cols []int) (sa, s1, s2 []float64) {
		sa = make([]float64, m*len(cols))
		for r := range m {
			for u, j := range cols {
				sa[r*len(cols)+u] = a[r*n+j]
			}
		}
		for _, j := range cols {
			s1, s2 = append(s1, c1[j]), append(s2, c2[j])
		}
		return
	}
	var s lpSolver
	sa, s1, s2 := sub(first)
	if _, err := s.solve(m, len(first), sa, b, s1, s2); err != nil {
		t.Fatal(err)
	}
	restricted := s.value(0)
	order := first
	var x []float64
	for _, cols := range [][]int{second, third} {
		var ent []lpEntry
		start := []int{0}
		var e1, e2 []float64
		for _, j := range cols {
			for r := range m {
				if v := a[r*n+j]; v != 0 {
					ent = append(ent, lpEntry{r, v})
				}
			}
			start = append(start, len(ent))
			e1, e2 = append(e1, c1[j]), append(e2, c2[j])
		}
		var err error
		if x, err = s.extend(ent, start, e1, e2); err != nil {
			t.Fatal(err)
		}
		order = append(order, cols...)
	}
	t.Logf("%d×%d: restricted %v, extended %v and %v, whole %v and %v", m, n, restricted, s.value(0), s.value(1), whole.value(0), whole.value(1))
	if math.Abs(s.value(0)-whole.value(0)) > 1e-9 || math.Abs(s.value(1)-whole.value(1)) > 1e-9*math.Abs(whole.value(1)) {
		t.Fatalf("extended to %v and %v, whole %v and %v", s.value(0), s.value(1), whole.value(0), whole.value(1))
	}
	if !(restricted < whole.value(0)-1e-6) {
		t.Fatalf("a third of the columns already reach the optimum (%v): the test cannot tell an extension from none", restricted)
	}
	xs := make([]float64, n)
	for u, j := range order {
		if !(x[u] >= 0) {
			t.Fatalf("x[%d] = %v", j, x[u])
		}
		xs[j] = x[u]
	}
	for r := range m {
		lhs := 0.0
		for j := range n {
			lhs += a[r*n+j] * xs[j]
		}
		if lhs > b[r]+1e-9 {
			t.Errorf("row %d: %v > %v", r, lhs, b[r])
		}
	}
}
