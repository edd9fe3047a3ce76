package replay

import (
	"math"
	"math/bits"
)

// sumTree is a complete binary tree over float64 leaf values that keeps,
// in every internal node, the sum and the minimum of the positive values
// below it. Leaves are the slots of a Prioritized buffer. Node 1 is the
// root, node j has children 2j and 2j+1, leaf i is node size+i.
//
// Internal sums are recomputed from the two children on every update (not
// adjusted by the difference), so rounding errors do not accumulate over
// millions of updates: each node is always the correctly rounded sum of its
// children.
type sumTree struct {
	size int       // number of leaves, a power of two
	sum  []float64 // 2·size; sum[0] unused
	min  []float64 // 2·size; +Inf where no positive leaf lies below
}

// newSumTree returns a tree of at least n leaves, all zero.
func newSumTree(n int) *sumTree {
	size := leafCount(n)
	t := &sumTree{size: size, sum: make([]float64, 2*size), min: make([]float64, 2*size)}
	for i := range t.min {
		t.min[i] = math.Inf(1)
	}
	return t
}

// leafCount is the power of two at least n (and at least 1).
func leafCount(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// maxLeaf is the largest leaf value whose sum over every leaf of a tree for
// capacity n cannot overflow.
func maxLeaf(n int) float64 { return math.MaxFloat64 / float64(leafCount(n)) }

// set stores v (finite, >= 0) at leaf i and updates its ancestors: O(log n).
func (t *sumTree) set(i int, v float64) {
	j := t.size + i
	t.sum[j] = v
	if v > 0 {
		t.min[j] = v
	} else {
		// A zero leaf is never drawn, so it must not set the largest
		// importance weight either.
		t.min[j] = math.Inf(1)
	}
	for j > 1 {
		j >>= 1
		l, r := 2*j, 2*j+1
		t.sum[j] = t.sum[l] + t.sum[r]
		t.min[j] = min(t.min[l], t.min[r])
	}
}

// leaf returns the value at leaf i.
func (t *sumTree) leaf(i int) float64 { return t.sum[t.size+i] }

// total is the sum of every leaf.
func (t *sumTree) total() float64 { return t.sum[1] }

// minPositive is the smallest positive leaf, +Inf when there is none.
func (t *sumTree) minPositive() float64 { return t.min[1] }

// find returns the leaf whose cumulative range [S_{i-1}, S_i) holds u, where
// S_i is the sum of leaves 0..i. It never returns a zero leaf when the
// total is positive: a subtree whose sum is zero is never entered, which
// also catches u >= total from rounding (the last positive leaf is
// returned then). O(log n).
func (t *sumTree) find(u float64) int {
	j := 1
	for j < t.size {
		l := 2 * j
		left := t.sum[l]
		if left > 0 && (u < left || t.sum[l+1] <= 0) {
			j = l
		} else {
			u -= left
			j = l + 1
		}
	}
	return j - t.size
}
