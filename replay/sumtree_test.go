package replay

import (
	"math"
	"math/rand/v2"
	"testing"
)

// checkTree verifies that every internal node is its children's sum and
// minimum, and returns the brute-force sum and positive minimum of leaves
// 0..n-1, summed left to right.
func checkTree(t *testing.T, tr *sumTree, n int) (sum, minPos float64) {
	t.Helper()
	for j := tr.size - 1; j >= 1; j-- {
		if s := tr.sum[2*j] + tr.sum[2*j+1]; tr.sum[j] != s {
			t.Fatalf("node %d: sum %v, children sum to %v", j, tr.sum[j], s)
		}
		if m := min(tr.min[2*j], tr.min[2*j+1]); tr.min[j] != m {
			t.Fatalf("node %d: min %v, children's min %v", j, tr.min[j], m)
		}
	}
	minPos = math.Inf(1)
	for i := range tr.size {
		v := tr.leaf(i)
		if i >= n && v != 0 {
			t.Fatalf("leaf %d beyond %d holds %v", i, n, v)
		}
		sum += v
		if v > 0 {
			minPos = min(minPos, v)
		}
	}
	return sum, minPos
}

func TestLeafCount(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 1000: 1024, 1 << 20: 1 << 20, 1<<20 + 1: 1 << 21} {
		if got := leafCount(n); got != want {
			t.Errorf("leafCount(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestSumTreeExactSums: with priorities that are multiples of 1/8 below
// 2^20, every partial sum is exact in float64, so the tree's total must
// equal the brute-force sum exactly, whatever the order of additions.
func TestSumTreeExactSums(t *testing.T) {
	const n = 13 // not a power of two: 3 empty leaves
	tr := newSumTree(n)
	leaves := make([]float64, n)
	rng := rand.New(rand.NewPCG(8, 8))
	for step := range 5000 {
		i := rng.IntN(n)
		v := float64(rng.IntN(8*1024)) / 8
		if step%17 == 0 {
			v = 0
		}
		leaves[i] = v
		tr.set(i, v)
		sum, minPos := checkTree(t, tr, n)
		var want float64
		wantMin := math.Inf(1)
		for _, l := range leaves {
			want += l
			if l > 0 {
				wantMin = min(wantMin, l)
			}
		}
		if tr.total() != want || sum != want {
			t.Fatalf("step %d: total %v, brute force %v", step, tr.total(), want)
		}
		if tr.minPositive() != wantMin || minPos != wantMin {
			t.Fatalf("step %d: min %v, brute force %v", step, tr.minPositive(), wantMin)
		}
	}
}

// TestSumTreeNoDrift: a million updates with arbitrary values leave the
// total within rounding of a fresh sum (no accumulated drift, since nodes
// are recomputed, never adjusted).
func TestSumTreeNoDrift(t *testing.T) {
	n, updates := 1000, 1_000_000
	if testing.Short() {
		updates = 100_000
	}
	tr := newSumTree(n)
	leaves := make([]float64, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for range updates {
		i := rng.IntN(n)
		v := math.Pow(rng.ExpFloat64()*100, 0.6)
		leaves[i] = v
		tr.set(i, v)
	}
	var want, c float64 // Kahan sum as the reference
	for _, l := range leaves {
		y := l - c
		s := want + y
		c = (s - want) - y
		want = s
	}
	if d := math.Abs(tr.total() - want); d > 1e-12*want {
		t.Fatalf("total %v, brute force %v (relative error %.2g)", tr.total(), want, d/want)
	}
	checkTree(t, tr, n)
}

func TestSumTreeFind(t *testing.T) {
	tr := newSumTree(6)
	vals := []float64{2, 0, 3, 0.5, 0, 0} // leaves 6, 7 unused
	for i, v := range vals {
		tr.set(i, v)
	}
	// Cumulative ranges: 0 [0,2), 2 [2,5), 3 [5,5.5).
	for _, c := range []struct {
		u    float64
		want int
	}{
		{0, 0}, {1.999, 0}, {2, 2}, {4.999, 2}, {5, 3}, {5.49, 3},
		{5.5, 3}, {7, 3}, {math.Inf(1), 3}, // at or past the total: last positive leaf
		{-1, 0},
	} {
		if got := tr.find(c.u); got != c.want {
			t.Errorf("find(%v) = %d, want %d", c.u, got, c.want)
		}
	}
	// A zero leaf is never returned, even at its exact (empty) position.
	tr.set(0, 0)
	if got := tr.find(0); got != 2 {
		t.Errorf("find(0) with leaf 0 empty = %d, want 2", got)
	}
	// One leaf.
	one := newSumTree(1)
	one.set(0, 4)
	if one.find(3.9) != 0 || one.find(100) != 0 || one.total() != 4 || one.minPositive() != 4 {
		t.Fatal("one-leaf tree")
	}
}
