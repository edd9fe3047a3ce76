package gnn

import (
	"fmt"

	"github.com/tegrl/tegrl/nn"
)

// Edges is one relation of a [Batch]: the adjacency together with the
// per-edge tensors layers use.
type Edges[T nn.Float] struct {
	Adj    *CSR
	NumSrc int           // source nodes
	Feat   *nn.Tensor[T] // [edges × Adj.FeatDim] edge features
	// InvDeg[e] is 1/deg of edge e's destination: the SpMM weights of
	// mean aggregation, computed once per batch and shared by all layers.
	InvDeg []T

	// The sparse matrix of EdgeConv's first layer (see EdgeConv.Forward),
	// built on first use after Load.
	msgOK  bool
	msgPtr []int
	msgIdx []int
	msgW   []T
}

// NumDst returns the number of destination nodes.
func (e *Edges[T]) NumDst() int { return e.Adj.NumDst() }

// Load points e at adj and computes its tensors, reusing e's buffers.
func (e *Edges[T]) Load(adj *CSR, numSrc int) {
	e.Adj, e.NumSrc, e.msgOK = adj, numSrc, false
	e.Feat = setTensor(e.Feat, adj.Feat, adj.Len(), adj.FeatDim, -1)
	e.InvDeg = grow(e.InvDeg, adj.Len())
	for i := 0; i < adj.NumDst(); i++ {
		lo, hi := adj.Ptr[i], adj.Ptr[i+1]
		w := 1 / T(max(hi-lo, 1))
		for k := lo; k < hi; k++ {
			e.InvDeg[k] = w
		}
	}
}

// messageRows returns the CSR matrix whose product with the stacked rows
// [p (destinations); q (sources); W_3 (edge features); b] gives EdgeConv's
// first-layer output per edge: row e has weight 1 at Dst[e], NumDst+Src[e]
// and the bias row, and the edge's features at the W_3 rows.
func (e *Edges[T]) messageRows() (ptr, idx []int, w []T) {
	if e.msgOK {
		return e.msgPtr, e.msgIdx, e.msgW
	}
	adj := e.Adj
	nd, ns, fd, ne := adj.NumDst(), e.NumSrc, adj.FeatDim, adj.Len()
	stride := 3 + fd
	e.msgPtr, e.msgIdx, e.msgW = grow(e.msgPtr, ne+1), grow(e.msgIdx, ne*stride), grow(e.msgW, ne*stride)
	for k := 0; k <= ne; k++ {
		e.msgPtr[k] = k * stride
	}
	for k := 0; k < ne; k++ {
		idx, w := e.msgIdx[k*stride:(k+1)*stride], e.msgW[k*stride:(k+1)*stride]
		idx[0], w[0] = adj.Dst[k], 1
		idx[1], w[1] = nd+adj.Src[k], 1
		for f := 0; f < fd; f++ {
			idx[2+f], w[2+f] = nd+ns+f, T(adj.Feat[k*fd+f])
		}
		idx[2+fd], w[2+fd] = nd+ns+fd, 1
	}
	e.msgOK = true
	return e.msgPtr, e.msgIdx, e.msgW
}

// Batch is a [Graph] converted to the tensors a model reads, in the
// model's float type. Its tensors are ordinary (not tape-owned) and are
// reused by the next Load, which allocates only when the graph grew.
type Batch[T nn.Float] struct {
	Graph   *Graph
	X       [NumNodeTypes]*nn.Tensor[T] // [nodes × features] per type
	History *nn.Tensor[T]               // [machines × steps × channels]
	Global  *nn.Tensor[T]               // [1 × global features]
	Rel     [NumRelations]Edges[T]
}

// Load converts g. The batch refers to g's adjacency (not a copy), so g
// must not change while the batch is in use.
func (b *Batch[T]) Load(g *Graph) {
	b.Graph = g
	for t := range b.X {
		b.X[t] = setTensor(b.X[t], g.Feat[t], g.Nodes[t], g.FeatDim[t], -1)
	}
	b.History = setTensor(b.History, g.History, g.Nodes[Machine], g.HistoryLen, g.HistoryChannels)
	b.Global = setTensor(b.Global, g.Global, 1, len(g.Global), -1)
	for r := Relation(0); r < NumRelations; r++ {
		b.Rel[r].Load(&g.Adj[r], g.Nodes[r.Src()])
	}
}

// NewBatch converts g into a new batch.
func NewBatch[T nn.Float](g *Graph) *Batch[T] {
	b := new(Batch[T])
	b.Load(g)
	return b
}

// setTensor fills t (allocated when nil) with src converted to T and the
// shape [d0, d1] (d2 < 0) or [d0, d1, d2], reusing t's storage. The
// dimensions are not variadic so that reusing a tensor does not allocate.
func setTensor[T nn.Float](t *nn.Tensor[T], src []float32, d0, d1, d2 int) *nn.Tensor[T] {
	if t == nil {
		t = new(nn.Tensor[T])
	}
	t.Data = convert(t.Data, src)
	t.Shape = append(t.Shape[:0], d0, d1)
	if d2 >= 0 {
		t.Shape = append(t.Shape, d2)
	}
	if len(t.Data) != d0*d1*max(d2, 1) {
		panic(fmt.Sprintf("gnn: %d values for shape %v", len(t.Data), t.Shape))
	}
	return t
}

func convert[T nn.Float](dst []T, src []float32) []T {
	dst = grow(dst, len(src))
	for i, v := range src {
		dst[i] = T(v)
	}
	return dst
}
