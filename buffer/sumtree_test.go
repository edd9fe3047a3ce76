package buffer

import (
	"math"
	"math/rand/v2"
	"testing"
)

// checkTree verifies the tree's structure and returns the brute-force sum
// (left to right) and positive minimum of its leaves.
func checkTree(t *testing.T, tr *sumTree, n int) (sum, minPos float64) {
	t.Helper()
	if err := tr.check(n); err != nil {
		t.Fatal(err)
	}
	minPos = math.Inf(1)
	for i := range n {
		v := tr.leaf(i)
		sum += v
		if v > 0 {
			minPos = min(minPos, v)
		}
	}
	return sum, minPos
}

func TestSumTreeShape(t *testing.T) {
	for _, c := range []struct {
		n, leaves, levels int
	}{
		{0, 8, 1}, {1, 8, 1}, {8, 8, 1}, {9, 16, 2}, {64, 64, 2}, {65, 72, 3},
		{10_000, 10_000, 5}, {1_000_000, 1_000_000, 7}, {1 << 21, 1 << 21, 7}, {1<<21 + 1, 1<<21 + 8, 8},
	} {
		if c.n > 1_000_000 && testing.Short() {
			continue
		}
		tr := newSumTree(c.n)
		if got := leafCount(c.n); got != c.leaves || len(tr.sum)-tr.leaves != c.leaves || len(tr.off) != c.levels {
			t.Errorf("n %d: %d leaves (%d stored), %d levels; want %d, %d", c.n, got, len(tr.sum)-tr.leaves, len(tr.off), c.leaves, c.levels)
		}
		for l, o := range tr.off {
			if o%fanout != 0 {
				t.Errorf("n %d: level %d starts at %d, not a whole group", c.n, l, o)
			}
		}
	}
}

// TestSumTreeExactSums: with priorities that are multiples of 1/8 below
// 2^10, every partial sum is exact in float64, so the tree's total must
// equal the brute-force sum exactly, whatever the order of additions.
func TestSumTreeExactSums(t *testing.T) {
	for _, n := range []int{1, 5, 13, 100} { // one group, part of one, 2 levels, 3 levels
		tr := newSumTree(n)
		leaves := make([]float64, n)
		rng := rand.New(rand.NewPCG(8, uint64(n)))
		for step := range 3000 {
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
				t.Fatalf("n %d, step %d: total %v, brute force %v", n, step, tr.total(), want)
			}
			if tr.minPositive() != wantMin || minPos != wantMin {
				t.Fatalf("n %d, step %d: min %v, brute force %v", n, step, tr.minPositive(), wantMin)
			}
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
	// 20 leaves: three groups of 8 below a top group.
	tr := newSumTree(20)
	vals := map[int]float64{0: 2, 2: 3, 9: 0.5, 17: 4, 18: 0}
	for i, v := range vals {
		tr.set(i, v)
	}
	// Cumulative ranges: 0 [0,2), 2 [2,5), 9 [5,5.5), 17 [5.5,9.5).
	for _, c := range []struct {
		u    float64
		want int
	}{
		{0, 0}, {1.999, 0}, {2, 2}, {4.999, 2}, {5, 9}, {5.49, 9}, {5.5, 17}, {9.49, 17},
		{9.5, 17}, {12, 17}, {math.Inf(1), 17}, // at or past the total: last positive leaf
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
	// Past the total when the last positive leaf is in a middle group:
	// that leaf, not a zero leaf of the last group.
	tr.set(17, 0)
	if got := tr.find(5.5); got != 9 {
		t.Errorf("find(5.5) = %d, want 9 (the last positive leaf)", got)
	}
	one := newSumTree(1)
	one.set(0, 4)
	if one.find(3.9) != 0 || one.find(100) != 0 || one.total() != 4 || one.minPositive() != 4 {
		t.Fatal("one-leaf tree")
	}
}

// TestSumTreeFindMatchesScan: on a 3-level tree with random values, find
// agrees with a linear scan of the cumulative sums at every leaf boundary
// and in between.
func TestSumTreeFindMatchesScan(t *testing.T) {
	const n = 300
	tr := newSumTree(n)
	rng := rand.New(rand.NewPCG(5, 6))
	vals := make([]float64, n)
	for i := range vals {
		if rng.IntN(4) > 0 {
			vals[i] = float64(1 + rng.IntN(64)) // integers: exact cumulative sums
		}
		tr.set(i, vals[i])
	}
	var cum float64
	for i, v := range vals {
		if v == 0 {
			continue
		}
		for _, u := range []float64{cum, cum + v/2, cum + v - 0.5} {
			if got := tr.find(u); got != i {
				t.Fatalf("find(%v) = %d, want %d", u, got, i)
			}
		}
		cum += v
	}
}
