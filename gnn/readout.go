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
type Pool[T nn.Float] struct {
	zeros []int // segment ids of SegmentMax: every row to segment 0
}

// Forward pools x.
func (p *Pool[T]) Forward(tp *nn.Tape[T], x *nn.Tensor[T]) *nn.Tensor[T] {
	n, d := x.Shape[0], x.Shape[1]
	if len(p.zeros) < n {
		p.zeros = make([]int, n+n/4) // zeros, never written: shared by every call
	}
	mean := tp.Reshape(tp.Mean(x, 0), 1, d)
	mx := tp.SegmentMax(x, p.zeros[:n], 1)
	return tp.Concat(mean, mx, 1)
}
