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
