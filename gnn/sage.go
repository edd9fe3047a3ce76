package gnn

import (
	"fmt"
	"math/rand/v2"

	"github.com/tegrl/tegrl/nn"
)

// SAGE is a GraphSAGE convolution with mean aggregation and a root weight:
//
//	h_i' = W_root·h_i + W_neigh·mean_{j→i} h_j + b
//
// where j runs over the sources of the edges into i (a node without
// in-edges aggregates to zero; a repeated edge counts as often as it
// appears). Weights are stored as [in, out] and applied to row vectors,
// as in [nn.Linear].
//
// Inside a [HeteroConv] a SAGE has no root weight and no bias (Root and
// Bias are nil): the convolution supplies one root term per destination
// type instead (see HeteroConv for why that is the same model).
type SAGE[T nn.Float] struct {
	Neigh *nn.Tensor[T] // [in_src, out]
	Root  *nn.Tensor[T] // [in_dst, out], or nil
	Bias  *nn.Tensor[T] // [out], or nil
}

// NewSAGE registers name+".neigh", name+".root" (Xavier-uniform) and
// name+".bias" (zero) in ps and returns a SAGE layer from inSrc-wide
// source rows and inDst-wide destination rows to out-wide rows.
func NewSAGE[T nn.Float](ps *nn.Params[T], name string, inSrc, inDst, out int, rng *rand.Rand) *SAGE[T] {
	l := NewSAGEMessages(ps, name, inSrc, out, rng)
	l.Root = ps.New(name+".root", inDst, out)
	nn.XavierUniform(l.Root, inDst, out, 1, rng)
	l.Bias = ps.New(name+".bias", out)
	return l
}

// NewSAGEMessages registers name+".neigh" (Xavier-uniform) in ps and
// returns a SAGE layer without root weight or bias: its Messages are one
// relation's term of a heterogeneous sum (see [HeteroConv]).
func NewSAGEMessages[T nn.Float](ps *nn.Params[T], name string, inSrc, out int, rng *rand.Rand) *SAGE[T] {
	l := &SAGE[T]{Neigh: ps.New(name+".neigh", inSrc, out)}
	nn.XavierUniform(l.Neigh, inSrc, out, 1, rng)
	return l
}

// Forward returns h' for every destination node of e, shape
// [e.NumDst(), out]. xSrc and xDst are the source and destination node
// features ([nodes, in]); for a relation within one node type they are the
// same tensor.
func (l *SAGE[T]) Forward(tp *nn.Tape[T], xSrc, xDst *nn.Tensor[T], e *Edges[T]) *nn.Tensor[T] {
	h := l.Messages(tp, xSrc, xDst, e)
	if l.Root != nil {
		h = tp.Add(h, tp.MatMul(xDst, l.Root, false, false))
	}
	if l.Bias != nil {
		h = tp.AddBias(h, l.Bias)
	}
	return h
}

// Messages returns the neighbour term W_neigh·mean_{j→i} h_j alone.
//
// Mean aggregation and the product are both linear, so they commute; the
// product is done on whichever side has fewer rows to multiply: sources
// (project, then average projected rows) or destinations (average, then
// project). The result is the same up to rounding.
func (l *SAGE[T]) Messages(tp *nn.Tape[T], xSrc, xDst *nn.Tensor[T], e *Edges[T]) *nn.Tensor[T] {
	t, _ := l.Terms(tp, xSrc, xDst, e)
	return tp.Value(t)
}

// order returns the order of product and mean Terms takes for e: 0 to
// project every source, 1 to project every destination (in the sum), 2
// to project the sources with an edge, 3 the destinations with one.
func (l *SAGE[T]) order(e *Edges[T]) int {
	if sageOrder >= 0 {
		return sageOrder
	}
	in, out := l.Neigh.Shape[0], l.Neigh.Shape[1]
	ns, nd, ne := e.NumSrc, e.NumDst(), e.Adj.Len()
	u := e.used()
	nsu, ndu := len(u.src), len(u.dst)
	costs := [...]int{ // multiply-adds, and the additions of a spread term
		ns*in*out + ne*out,
		nd*in*out + ne*in,
		nsu*in + nsu*in*out + ne*out,
		ne*in + ndu*in*out + nd*out + nd*out,
	}
	best := 1 // on a tie, the product in the sum
	for k, c := range costs {
		if c < costs[best] {
			best = k
		}
	}
	return best
}

// sageOrder, when not −1, makes Terms take that order (the tests compare
// them).
var sageOrder = -1

// Terms returns Messages as one term for a [HeteroConv]: the product of
// the averaged source rows and W_neigh when the product is on the
// destination side, so that the sum computes it in place.
//
// The mean is linear, so W_neigh can be applied before or after it, and
// only to the rows the edges touch; Terms takes whichever of four orders
// costs the fewest multiply-adds:
//   - project every source row, then average (when sources are fewer);
//   - average into every destination row, then project (in the sum);
//   - project only the sources with an edge (jobs on GPUs among all jobs,
//     machines with GPUs among all machines), then average;
//   - average into the destinations with an edge, project those, and
//     spread them over all destination rows (zeros for the others).
//
// Every order gives the same values up to rounding.
func (l *SAGE[T]) Terms(tp *nn.Tape[T], xSrc, xDst *nn.Tensor[T], e *Edges[T]) (t1, t2 nn.Term[T]) {
	checkEdges("SAGE", xSrc, xDst, e)
	in := l.Neigh.Shape[0]
	if xSrc.Shape[1] != in {
		panic(fmt.Sprintf("gnn: SAGE: source rows have %d features, weights expect %d", xSrc.Shape[1], in))
	}
	adj, u := e.Adj, e.used()
	// The aggregation after a projection is a sparse term: the sum adds its
	// rows as they are computed.
	switch l.order(e) {
	case 0:
		p := tp.MatMul(xSrc, l.Neigh, false, false)
		return nn.Term[T]{X: p, Ptr: adj.Ptr, Idx: adj.Src, Weights: e.InvDeg}, t2
	case 2:
		p := tp.MatMul(tp.GatherRows(xSrc, u.src), l.Neigh, false, false)
		return nn.Term[T]{X: p, Ptr: adj.Ptr, Idx: u.srcPos, Weights: e.InvDeg}, t2
	case 3:
		p := tp.MatMul(tp.SpMM(u.dstPtr, adj.Src, e.InvDeg, xSrc), l.Neigh, false, false)
		return nn.Term[T]{X: p, Ptr: u.expandPtr, Idx: u.expandIdx}, t2
	}
	return nn.Term[T]{X: tp.SpMM(adj.Ptr, adj.Src, e.InvDeg, xSrc), W: l.Neigh}, t2
}

// checkEdges panics unless x's row counts match e's node counts.
func checkEdges[T nn.Float](op string, xSrc, xDst *nn.Tensor[T], e *Edges[T]) {
	if len(xSrc.Shape) != 2 || len(xDst.Shape) != 2 {
		panic(fmt.Sprintf("gnn: %s: features must be 2-D, have %v and %v", op, xSrc.Shape, xDst.Shape))
	}
	if xSrc.Shape[0] != e.NumSrc || xDst.Shape[0] != e.NumDst() {
		panic(fmt.Sprintf("gnn: %s: %d source and %d destination rows for a relation between %d and %d nodes",
			op, xSrc.Shape[0], xDst.Shape[0], e.NumSrc, e.NumDst()))
	}
}
