package gnn

import (
	"math/rand/v2"
)

// DefaultFanout is the number of neighbours a [Sampler] keeps per
// destination node and relation unless told otherwise.
const DefaultFanout = 10

// Sampler draws, for every destination node and relation, at most a fixed
// number of its in-edges (GraphSAGE's neighbour sampling), so that the
// cost of a layer is bounded per node whatever the degree distribution.
// Nodes with at most Fanout in-edges keep them all; others keep Fanout of
// them drawn uniformly without replacement, in their original order.
//
// Sampling is deterministic: a sampler created with the same seed and
// given the same sequence of graphs returns the same samples. It uses
// math/rand/v2's PCG. A Sampler is not safe for concurrent use.
type Sampler struct {
	// Fanout is the per-relation bound; a value ≤ 0 keeps every edge.
	Fanout [NumRelations]int

	rng  *rand.Rand
	pcg  *rand.PCG
	perm []int
	// own are the buffers of the relations Sample samples; a relation it
	// need not sample is shared with the input instead.
	own [NumRelations]CSR
}

// NewSampler returns a sampler with the same fanout for every relation.
func NewSampler(fanout int, seed uint64) *Sampler {
	s := &Sampler{pcg: rand.NewPCG(seed, samplerStream)}
	s.rng = rand.New(s.pcg)
	for r := range s.Fanout {
		s.Fanout[r] = fanout
	}
	return s
}

// samplerStream is the PCG stream constant ("gnn-samp"), so a sampler and
// another generator seeded with the same number draw different sequences.
const samplerStream = 0x676e6e2d73616d70

// Seed restarts the sampler's random sequence from seed.
func (s *Sampler) Seed(seed uint64) { s.pcg.Seed(seed, samplerStream) }

// Sample writes into out g's structure with every relation's edges
// sampled. Node features, history and global features are shared with g
// (out's slices alias g's), not copied, and so is a relation in which no
// destination has more edges than the fanout (there is nothing to drop):
// out must be read only, and only while g is unchanged. The sampled
// relations' buffers belong to the sampler and are reused from call to
// call.
func (s *Sampler) Sample(g, out *Graph) {
	*out = *g
	for r := Relation(0); r < NumRelations; r++ {
		if in := &g.Adj[r]; maxDegree(in) > s.Fanout[r] && s.Fanout[r] > 0 {
			s.SampleCSR(in, &s.own[r], s.Fanout[r])
			out.Adj[r] = s.own[r]
		}
	}
}

// maxDegree returns the largest in-degree of c's destinations (0 for none).
func maxDegree(c *CSR) int {
	m := 0
	for i := 0; i+1 < len(c.Ptr); i++ {
		m = max(m, c.Ptr[i+1]-c.Ptr[i])
	}
	return m
}

// SampleCSR writes into out the edges of in with at most fanout edges per
// destination (all of them when fanout ≤ 0).
func (s *Sampler) SampleCSR(in, out *CSR, fanout int) {
	nd, fd := in.NumDst(), in.FeatDim
	out.Reset(nd, fd)
	if fanout <= 0 {
		fanout = int(^uint(0) >> 1)
	}
	n := 0
	for i := 0; i < nd; i++ {
		n += min(in.Degree(i), fanout)
	}
	out.Src, out.Dst, out.Feat = grow(out.Src, n), grow(out.Dst, n), grow(out.Feat, n*fd)
	k := 0
	for i := 0; i < nd; i++ {
		lo, deg := in.Ptr[i], in.Degree(i)
		if deg <= fanout {
			copy(out.Src[k:], in.Src[lo:lo+deg])
			copy(out.Feat[k*fd:], in.Feat[lo*fd:(lo+deg)*fd])
			for e := k; e < k+deg; e++ {
				out.Dst[e] = i
			}
			k += deg
			out.Ptr[i+1] = k
			continue
		}
		pick := s.choose(deg, fanout)
		for _, p := range pick {
			e := lo + p
			out.Src[k], out.Dst[k] = in.Src[e], i
			copy(out.Feat[k*fd:(k+1)*fd], in.Feat[e*fd:(e+1)*fd])
			k++
		}
		out.Ptr[i+1] = k
	}
}

// choose returns k distinct positions in [0, n), sorted, by a partial
// Fisher-Yates shuffle; the result aliases s.perm.
func (s *Sampler) choose(n, k int) []int {
	s.perm = grow(s.perm, n)
	p := s.perm
	for i := range p {
		p[i] = i
	}
	for j := 0; j < k; j++ {
		m := j + s.rng.IntN(n-j)
		p[j], p[m] = p[m], p[j]
	}
	p = p[:k]
	// Insertion sort: k is small, and sorted positions keep the sampled
	// edges in source order (and their feature rows in memory order).
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && p[j] < p[j-1]; j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
	return p
}
