package gnn

import (
	"fmt"
	"math/rand/v2"

	"github.com/tegrl/tegrl/nn"
)

// Aggregation selects how a convolution combines the messages into a node.
type Aggregation int

// Aggregations. Nodes without in-edges aggregate to zero under both.
const (
	AggMax Aggregation = iota
	AggMean
)

func (a Aggregation) String() string {
	switch a {
	case AggMax:
		return "max"
	case AggMean:
		return "mean"
	}
	return fmt.Sprintf("aggregation(%d)", int(a))
}

// EdgeConv is the edge convolution of DGCNN (Wang et al., 2019) with edge
// features: every edge j → i carries the message
//
//	m_ij = MLP([x_i, x_j − x_i, e_ij])
//
// and node i receives the maximum or the mean of its messages. Source and
// destination rows must have the same width.
//
// The MLP's first layer is linear in its input, so
// W·[x_i, x_j−x_i, e] = (W_1 − W_2)·x_i + W_2·x_j + W_3·e with W split
// by rows into W_1, W_2, W_3. The layer multiplies node rows once per node
// and gathers the products per edge, instead of multiplying a
// (2·in + edge)-wide row per edge: the same function for a fraction of the
// work on graphs with several edges per node.
type EdgeConv[T nn.Float] struct {
	MLP     *nn.MLP[T] // input width 2·In + EdgeDim
	In      int        // node feature width
	EdgeDim int        // edge feature width
	Agg     Aggregation

	// bias is the first layer's bias as a [1, out] row (for the stacked
	// SpMM operand): a view sharing Data and Grad with MLP.Layers[0].B,
	// so gradients land in the registered parameter. It is re-made if the
	// parameter's buffers are replaced.
	bias *nn.Tensor[T]
}

// NewEdgeConv registers an MLP with layer widths
// [2·in + edgeDim, sizes...] under name+".mlp" in ps (activation act
// between layers, none after the last) and returns the layer.
func NewEdgeConv[T nn.Float](ps *nn.Params[T], name string, in, edgeDim int, sizes []int, act nn.Activation, agg Aggregation, rng *rand.Rand) *EdgeConv[T] {
	if len(sizes) == 0 {
		panic("gnn: NewEdgeConv: no MLP layer sizes")
	}
	widths := append([]int{2*in + edgeDim}, sizes...)
	return &EdgeConv[T]{MLP: nn.NewMLP(ps, name+".mlp", widths, act, rng), In: in, EdgeDim: edgeDim, Agg: agg}
}

// Forward returns the aggregated messages for every destination node of
// e, shape [e.NumDst(), out].
func (l *EdgeConv[T]) Forward(tp *nn.Tape[T], xSrc, xDst *nn.Tensor[T], e *Edges[T]) *nn.Tensor[T] {
	t1, t2 := l.Terms(tp, xSrc, xDst, e)
	if t2.X != nil {
		return tp.Add(tp.Value(t1), tp.Value(t2))
	}
	return tp.Value(t1)
}

// Terms returns Forward's result as one or two terms for a [HeteroConv]:
// with a one-layer max aggregation, the maximum over the messages and the
// part common to all of a node's messages, which the sum adds without
// storing their sum first.
func (l *EdgeConv[T]) Terms(tp *nn.Tape[T], xSrc, xDst *nn.Tensor[T], e *Edges[T]) (t1, t2 nn.Term[T]) {
	l.check(xSrc, xDst, e)
	adj := e.Adj
	first := l.MLP.Layers[0]
	in, hid := l.In, first.W.Shape[1]
	w1 := tp.Slice(first.W, 0, 0, in)
	w2 := tp.Slice(first.W, 0, in, 2*in)
	// Every edge's first-layer output p_i + q_j + W_3·e_ij + b, with
	// p = (W_1 − W_2)·x_i per destination and q = W_2·x_j per source, is
	// one row of a sparse product with the stacked rows z = [p; q; W_3; b]:
	// an edge's row has weight 1 on p_i, q_j and b and the edge's features
	// on W_3's rows. One SpMM pass gathers and adds it all, without
	// edge-sized intermediates for the two gathers, the edge-feature
	// product (whose inner dimension of a few features the BLAS handles
	// poorly) and the bias. p and q are computed into z's rows.
	terms := [4]nn.Term[T]{
		{X: xDst, W: tp.Sub(w1, w2)},
		{X: xSrc, W: w2},
	}
	nt := 2
	if l.EdgeDim > 0 {
		terms[nt] = nn.Term[T]{X: tp.Slice(first.W, 0, 2*in, 2*in+l.EdgeDim)}
		nt++
	}
	terms[nt] = nn.Term[T]{X: l.biasRow(first.B, hid)}
	z := tp.StackTerms(terms[:nt+1]...)
	if len(l.MLP.Layers) == 1 {
		// With one linear layer, p_i + b is the same in all of node i's
		// messages, so it leaves the aggregation: max_j(p_i + b + u_ij) =
		// p_i + b + max_j u_ij with u_ij = q_j + W_3·e_ij, and likewise for
		// the mean. The mean is then linear in z: one SpMM whose row i
		// holds p_i, b and every edge's terms divided by the degree. The
		// max needs the u_ij per edge, but two rows fewer of each.
		if l.Agg == AggMean {
			ptr, idx, w := e.sparse(rowsMean)
			return nn.Term[T]{X: z, Ptr: ptr, Idx: idx, Weights: w}, t2
		}
		ptr, idx, w := e.sparse(rowsEdgeTail)
		u := tp.SpMMSegmentMax(ptr, idx, w, z, adj.Dst, adj.NumDst())
		ptr, idx, w = e.sparse(rowsHead)
		return nn.Term[T]{X: u}, nn.Term[T]{X: z, Ptr: ptr, Idx: idx, Weights: w}
	}
	ptr, idx, w := e.sparse(rowsEdge)
	m := tp.SpMM(ptr, idx, w, z)
	for _, layer := range l.MLP.Layers[1:] {
		m = layer.Forward(tp, tp.Activate(m, l.MLP.Act))
	}
	if l.Agg == AggMean {
		return nn.Term[T]{X: tp.SegmentMean(m, adj.Dst, adj.NumDst())}, t2
	}
	return nn.Term[T]{X: tp.SegmentMax(m, adj.Dst, adj.NumDst())}, t2
}

// FoldTerms is Terms for a layer whose caller adds a linear term of the
// destinations' own rows (a [HeteroConv]'s root term). With one linear
// layer, the part p_i + b = (W_1 − W_2)·x_i + b common to all of node i's
// messages leaves the aggregation (see Terms), and is linear in x_i: it
// joins the caller's term, w = W_1 − W_2 added to its weight and b to its
// bias, so that the destinations' rows are multiplied once instead of
// twice. The layer returns the rest: t1 aggregates u_ij = q_j + W_3·e_ij;
// and t2, when some destinations have no in-edges (their aggregation is
// zero, so the joined p_i + b must not reach them), subtracts p_i + b from
// those rows. ok is false, and nothing is recorded, for a deeper MLP.
func (l *EdgeConv[T]) FoldTerms(tp *nn.Tape[T], xSrc, xDst *nn.Tensor[T], e *Edges[T]) (w, b *nn.Tensor[T], t1, t2 nn.Term[T], ok bool) {
	if len(l.MLP.Layers) != 1 {
		return nil, nil, t1, t2, false
	}
	l.check(xSrc, xDst, e)
	first, in := l.MLP.Layers[0], l.In
	w2, w3 := tp.Slice(first.W, 0, in, 2*in), tp.Slice(first.W, 0, 2*in, 2*in+l.EdgeDim)
	w = tp.Sub(tp.Slice(first.W, 0, 0, in), w2)
	b = first.B
	if l.Agg == AggMean {
		// z = [q; W_3]: q = W_2·x_j per source, then the edge features'
		// weights; each destination's row of the sparse term averages its
		// edges' q_j + W_3·e_ij.
		terms := [2]nn.Term[T]{{X: xSrc, W: w2}, {X: w3}}
		z := tp.StackTerms(terms[:1+min(l.EdgeDim, 1)]...)
		ptr, idx, wt := e.sparse(rowsTailMean)
		t1 = nn.Term[T]{X: z, Ptr: ptr, Idx: idx, Weights: wt}
	} else {
		// The messages q_j + W_3·e_ij, their maximum taken as they are
		// computed, with W_3 in registers.
		var feat *nn.Tensor[T]
		if l.EdgeDim > 0 {
			feat = e.Feat
		}
		q := tp.MatMul(xSrc, w2, false, false)
		t1 = nn.Term[T]{X: tp.EdgeMax(q, e.Adj.Src, feat, w3, e.Adj.Dst, e.Adj.NumDst())}
	}
	if lone := e.lone(); len(lone.dst) > 0 {
		p := tp.SumTerms(nn.ActIdentity, b, nn.Term[T]{X: tp.GatherRows(xDst, lone.dst), W: w})
		t2 = nn.Term[T]{X: p, Ptr: lone.ptr, Idx: lone.idx, Weights: e.negOnesFor(len(lone.dst))}
	}
	return w, b, t1, t2, true
}

// check panics unless the rows and edges have the layer's widths.
func (l *EdgeConv[T]) check(xSrc, xDst *nn.Tensor[T], e *Edges[T]) {
	checkEdges("EdgeConv", xSrc, xDst, e)
	if xSrc.Shape[1] != l.In || xDst.Shape[1] != l.In {
		panic(fmt.Sprintf("gnn: EdgeConv: node rows have %d and %d features, layer expects %d", xSrc.Shape[1], xDst.Shape[1], l.In))
	}
	if e.Adj.FeatDim != l.EdgeDim {
		panic(fmt.Sprintf("gnn: EdgeConv: edges have %d features, layer expects %d", e.Adj.FeatDim, l.EdgeDim))
	}
}

func (l *EdgeConv[T]) biasRow(b *nn.Tensor[T], n int) *nn.Tensor[T] {
	v := l.bias
	if v == nil || len(v.Data) != n || &v.Data[0] != &b.Data[0] || len(b.Grad) != n || &v.Grad[0] != &b.Grad[0] {
		v = &nn.Tensor[T]{Data: b.Data, Grad: b.Grad, Shape: []int{1, n}}
		l.bias = v
	}
	v.RequiresGrad = b.RequiresGrad
	return v
}

// Messages is Forward: an edge convolution has no separate root term.
func (l *EdgeConv[T]) Messages(tp *nn.Tape[T], xSrc, xDst *nn.Tensor[T], e *Edges[T]) *nn.Tensor[T] {
	return l.Forward(tp, xSrc, xDst, e)
}
