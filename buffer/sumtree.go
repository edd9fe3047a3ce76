package buffer

import (
	"fmt"
	"math"
)

// fanout is the number of children of a sumTree node: 8 float64 fill one
// 64-byte cache line, so that a descent reads one line per level and a
// 1M-leaf tree is 7 levels deep instead of the 20 of a binary tree.
const fanout = 8

// sumTree is an 8-ary tree over float64 leaf values that keeps, in every
// internal node, the sum and the minimum of the positive values below it.
// Leaves are the slots of a Prioritized buffer.
//
// Levels are stored top-down in one array each for sums and minima: level
// 0 is the top group of at most 8 nodes, the last level holds the leaves.
// Node i of a level has the children 8i..8i+7 of the level below; every
// level's length is a multiple of 8, so a node's children are 8
// consecutive values (one cache line in the page-aligned arrays of a large
// tree). Unused positions hold sum 0 and min +Inf.
//
// Internal values are recomputed from the 8 children on every update (not
// adjusted by the difference), so rounding errors do not accumulate over
// millions of updates: each node is always the same function of its
// children.
type sumTree struct {
	off     []int     // start of each level in sum and min, top first
	sum     []float64 // all levels
	min     []float64 // +Inf where no positive leaf lies below
	leaves  int       // start of the leaf level (off[len(off)-1])
	root    float64   // sum of the top group
	rootMin float64   // min of the top group
}

// newSumTree returns a tree of at least n leaves, all zero.
func newSumTree(n int) *sumTree {
	// Level widths bottom-up: leaves rounded up to whole groups, then one
	// node per group below, rounded up, until a single group remains.
	widths := []int{leafCount(n)}
	for w := widths[0]; w > fanout; {
		w = roundUp(w/fanout, fanout)
		widths = append(widths, w)
	}
	t := &sumTree{off: make([]int, len(widths)), rootMin: math.Inf(1)}
	total := 0
	for l := range widths {
		t.off[l] = total
		total += widths[len(widths)-1-l]
	}
	t.leaves = t.off[len(t.off)-1]
	t.sum = make([]float64, total)
	t.min = make([]float64, total)
	for i := range t.min {
		t.min[i] = math.Inf(1)
	}
	return t
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// leafCount is the number of leaves of a tree for n items: n rounded up to
// a whole group (at least one group).
func leafCount(n int) int { return max(roundUp(n, fanout), fanout) }

// maxLeaf is the largest leaf value whose sum over every leaf of a tree for
// n items cannot overflow.
func maxLeaf(n int) float64 { return math.MaxFloat64 / float64(leafCount(n)) }

// groupSum adds a group pairwise (shorter dependency chains than a loop,
// and the same order everywhere).
func groupSum(g []float64) float64 {
	g = g[:fanout:fanout]
	return ((g[0] + g[1]) + (g[2] + g[3])) + ((g[4] + g[5]) + (g[6] + g[7]))
}

func groupMin(g []float64) float64 {
	g = g[:fanout:fanout]
	return min(min(min(g[0], g[1]), min(g[2], g[3])), min(min(g[4], g[5]), min(g[6], g[7])))
}

// set stores v (finite, >= 0) at leaf i and updates its ancestors:
// O(8·log₈ n).
func (t *sumTree) set(i int, v float64) {
	l := len(t.off) - 1
	t.sum[t.leaves+i] = v
	if v > 0 {
		t.min[t.leaves+i] = v
	} else {
		// A zero leaf is never drawn, so it must not set the largest
		// importance weight either.
		t.min[t.leaves+i] = math.Inf(1)
	}
	for ; l > 0; l-- {
		g := i / fanout
		base := t.off[l] + g*fanout
		s, m := groupSum(t.sum[base:]), groupMin(t.min[base:])
		i = g
		t.sum[t.off[l-1]+i] = s
		t.min[t.off[l-1]+i] = m
	}
	t.root, t.rootMin = groupSum(t.sum), groupMin(t.min)
}

// leaf returns the value at leaf i.
func (t *sumTree) leaf(i int) float64 { return t.sum[t.leaves+i] }

// total is the sum of every leaf.
func (t *sumTree) total() float64 { return t.root }

// minPositive is the smallest positive leaf, +Inf when there is none.
func (t *sumTree) minPositive() float64 { return t.rootMin }

// lanes is the number of descents findLanes runs side by side.
const lanes = 8

// find returns the leaf whose cumulative range [S_{i-1}, S_i) holds u
// (S_i is the sum of leaves 0..i), for u >= 0 and a positive total. See
// findLanes.
func (t *sumTree) find(u float64) int {
	var out [1]int
	t.findLanes([]float64{u}, out[:])
	return out[0]
}

// findLanes sets out[L] to find(us[L]) for up to 8 points, descending for
// all of them level by level. O(8·log₈ n) each.
//
// Why lanes: in a large tree every level below the top few is a cache miss,
// and one descent is a chain of dependent misses. Independent descents
// interleaved level by level keep several misses in flight at once (2x at
// 1M items). Inside a group the child is chosen without branches (a count
// of prefix sums), because a mispredicted branch would discard the other
// lanes' loads.
//
// A zero leaf is never returned: the child chosen is the first whose
// prefix sum exceeds u, which a zero child's never does. When u is at or
// past the end of a group (u >= total from rounding), the last positive
// child is taken and u stays past its end, which leads to the last
// positive leaf below it.
func (t *sumTree) findLanes(us []float64, out []int) {
	var idx [lanes]int
	var u [lanes]float64
	n := copy(u[:], us)
	for _, off := range t.off {
		for L := range n {
			i, v := idx[L], u[L]
			base := off + i*fanout
			g := (*[fanout]float64)(t.sum[base : base+fanout])
			// Prefix sums of the group, in a shallow tree of additions.
			var p [fanout]float64
			p[0] = g[0]
			p[1] = g[0] + g[1]
			p[2] = p[1] + g[2]
			p[3] = p[1] + (g[2] + g[3])
			p[4] = p[3] + g[4]
			p[5] = p[3] + (g[4] + g[5])
			p[6] = p[5] + g[6]
			p[7] = p[5] + (g[6] + g[7])
			c := 0
			for k := range fanout - 1 {
				x := 0 // compiled to a conditional move, not a branch
				if p[k] <= v {
					x = 1
				}
				c += x
			}
			if v >= p[7] { // rare: only from rounding
				c = fanout - 1
				for g[c] == 0 {
					c--
				}
			}
			if c > 0 {
				v -= p[c-1]
			}
			idx[L], u[L] = i*fanout+c, v
		}
	}
	copy(out, idx[:n])
}

// check verifies that every internal node is the sum and minimum of its
// children and that positions past n hold nothing; for tests.
func (t *sumTree) check(n int) error {
	for l := len(t.off) - 1; l > 0; l-- {
		width := len(t.sum) - t.leaves
		if l < len(t.off)-1 {
			width = t.off[l+1] - t.off[l]
		}
		for g := 0; g < width/fanout; g++ {
			base := t.off[l] + g*fanout
			if s, m := groupSum(t.sum[base:]), groupMin(t.min[base:]); t.sum[t.off[l-1]+g] != s || t.min[t.off[l-1]+g] != m {
				return fmt.Errorf("level %d node %d: sum %v, min %v; children give %v, %v",
					l-1, g, t.sum[t.off[l-1]+g], t.min[t.off[l-1]+g], s, m)
			}
		}
	}
	if s, m := groupSum(t.sum), groupMin(t.min); t.root != s || t.rootMin != m {
		return fmt.Errorf("root sum %v, min %v; top group gives %v, %v", t.root, t.rootMin, s, m)
	}
	for i := n; t.leaves+i < len(t.sum); i++ {
		if t.sum[t.leaves+i] != 0 || !math.IsInf(t.min[t.leaves+i], 1) {
			return fmt.Errorf("leaf %d past %d holds %v", i, n, t.sum[t.leaves+i])
		}
	}
	return nil
}
