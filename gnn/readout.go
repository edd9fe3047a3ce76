package gnn

import "github.com/tegrl/tegrl/nn"

// Pool is a per-graph readout: it pools a node set's rows [n, d] into one
// row [1, 2d], the mean of the rows followed by their elementwise maximum.
// An empty node set pools to zeros. Mean and max complement each other:
// the mean says how loaded the cluster is on the whole, the max whether
// any node is in trouble.
//
// Per-node readouts are the node embeddings themselves (one row per node,
// see [Embeddings]); a head on top of them (a policy scoring machines) is
// the caller's.
//
// The index slices it hands to the tape are kept until Backward, so a
// Pool serves one call per tape pass: use one Pool per node set.
type Pool[T nn.Float] struct {
	zeros []int // segment ids of SegmentMax: every row to segment 0
	iota  []int // 0, 1, …: the SpMM row of the mean
	ptr   [2]int
	w     []T // 1/n
}

// Forward pools x.
func (p *Pool[T]) Forward(tp *nn.Tape[T], x *nn.Tensor[T]) *nn.Tensor[T] {
	n := x.Shape[0]
	if len(p.zeros) < n {
		p.zeros = make([]int, n+n/4) // zeros, never written
		p.iota = make([]int, len(p.zeros))
		for i := range p.iota {
			p.iota[i] = i
		}
	}
	if len(p.w) != n {
		p.w = grow(p.w, n)
		for i := range p.w {
			p.w[i] = 1 / T(n)
		}
	}
	p.ptr = [2]int{0, n}
	mean := tp.SpMM(p.ptr[:], p.iota[:n], p.w, x) // [1, d]: no reshape of a [d] mean
	mx := tp.SegmentMax(x, p.zeros[:n], 1)
	return tp.Concat(mean, mx, 1)
}
