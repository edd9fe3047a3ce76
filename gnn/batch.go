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

	// The sparse matrices of EdgeConv (see sparseRows), built on first
	// use after Load.
	rows [numRowKinds]sparseRows[T]
	// The rows the edges touch (see used), built on first use after Load.
	touched used
	// The destinations without an edge (see lone), built on first use
	// after Load.
	isolated lone
	// negOnes holds -1s, the weights of lone's matrix.
	negOnes []T
}

// used lists the rows a relation's edges touch, for layers that multiply
// only those: a relation often reaches few of its node types' rows (jobs
// on GPUs among all jobs, machines with GPUs among all machines).
type used struct {
	ok bool
	// src are the sources with an edge, ascending; srcPos[e] is edge e's
	// source's position in src.
	src, srcPos []int
	// dst are the destinations with an edge, ascending; dstPtr is the
	// adjacency's row pointer over those rows only (the same edges, in
	// the same order), and expandPtr, expandIdx a sparse matrix with a
	// row per destination: one entry of weight 1, its position in dst,
	// where it has edges, none where it has not.
	dst, dstPtr, expandPtr, expandIdx []int
	pos                               []int // scratch: a source's position in src + 1
}

// lone lists the destinations without an edge (see Edges.lone).
type lone struct {
	ok bool
	// dst are those destinations, ascending, and ptr, idx a sparse matrix
	// with a row per destination: one entry, its position in dst, where it
	// has no edge, none where it has. Both are empty when every
	// destination has an edge.
	dst, ptr, idx []int
}

// lone returns the destinations without an edge, computing them on first
// use.
func (e *Edges[T]) lone() *lone {
	l := &e.isolated
	if l.ok {
		return l
	}
	adj := e.Adj
	l.dst, l.ptr, l.idx = l.dst[:0], l.ptr[:0], l.idx[:0]
	nd := adj.NumDst()
	for i := 0; i < nd; i++ {
		if adj.Ptr[i+1] == adj.Ptr[i] {
			l.dst = append(l.dst, i)
		}
	}
	if len(l.dst) > 0 {
		l.ptr = append(l.ptr, 0)
		for i := 0; i < nd; i++ {
			if adj.Ptr[i+1] == adj.Ptr[i] {
				l.idx = append(l.idx, len(l.idx))
			}
			l.ptr = append(l.ptr, len(l.idx))
		}
	}
	l.ok = true
	return l
}

// used returns the rows e's edges touch, computing them on first use.
func (e *Edges[T]) used() *used {
	u := &e.touched
	if u.ok {
		return u
	}
	adj := e.Adj
	u.pos = grow(u.pos, e.NumSrc) // source → its position in src + 1; 0: none
	clear(u.pos)
	for _, j := range adj.Src {
		u.pos[j] = 1
	}
	u.src = u.src[:0]
	for j, f := range u.pos {
		if f != 0 {
			u.src = append(u.src, j)
			u.pos[j] = len(u.src)
		}
	}
	u.srcPos = grow(u.srcPos, adj.Len())
	for k, j := range adj.Src {
		u.srcPos[k] = u.pos[j] - 1
	}
	nd := adj.NumDst()
	u.dst, u.dstPtr = u.dst[:0], append(u.dstPtr[:0], 0)
	u.expandPtr, u.expandIdx = append(u.expandPtr[:0], 0), u.expandIdx[:0]
	for i := 0; i < nd; i++ {
		if hi := adj.Ptr[i+1]; hi > adj.Ptr[i] {
			u.expandIdx = append(u.expandIdx, len(u.dst))
			u.dst = append(u.dst, i)
			u.dstPtr = append(u.dstPtr, hi)
		}
		u.expandPtr = append(u.expandPtr, len(u.expandIdx))
	}
	u.ok = true
	return u
}

// NumDst returns the number of destination nodes.
func (e *Edges[T]) NumDst() int { return e.Adj.NumDst() }

// Load points e at adj and computes its tensors, reusing e's buffers.
func (e *Edges[T]) Load(adj *CSR, numSrc int) {
	e.Adj, e.NumSrc = adj, numSrc
	for k := range e.rows {
		e.rows[k].ok = false
	}
	e.touched.ok, e.isolated.ok = false, false
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

// negOnesFor returns n weights of -1.
func (e *Edges[T]) negOnesFor(n int) []T {
	if len(e.negOnes) < n {
		e.negOnes = make([]T, n)
		for i := range e.negOnes {
			e.negOnes[i] = -1
		}
	}
	return e.negOnes[:n]
}

// rowKind names a sparse matrix that EdgeConv multiplies with the stacked
// rows z = [p (destinations); q (sources); W_3 (edge features); b], or,
// for rowsTailMean, z = [q; W_3] (see EdgeConv.FoldTerms).
type rowKind int

const (
	// rowsEdge: one row per edge: p_i + q_j + W_3·e_ij + b.
	rowsEdge rowKind = iota
	// rowsEdgeTail: one row per edge: q_j + W_3·e_ij.
	rowsEdgeTail
	// rowsHead: one row per destination: p_i + b if it has in-edges, else
	// nothing.
	rowsHead
	// rowsMean: one row per destination: p_i + b + the mean over its
	// in-edges of q_j + W_3·e_ij, or nothing without in-edges.
	rowsMean
	// rowsTailMean: one row per destination of z = [q; W_3]: the mean over
	// its in-edges of q_j + W_3·e_ij, or nothing without in-edges.
	rowsTailMean
	numRowKinds
)

// sparseRows is a CSR matrix (row pointer, column indices, weights).
type sparseRows[T nn.Float] struct {
	ok  bool
	ptr []int
	idx []int
	w   []T
}

func (s *sparseRows[T]) add(col int, w T) {
	s.idx = append(s.idx, col)
	s.w = append(s.w, w)
}

// sparse returns the matrix of kind k for e, building it on first use.
func (e *Edges[T]) sparse(k rowKind) (ptr, idx []int, w []T) {
	s := &e.rows[k]
	if s.ok {
		return s.ptr, s.idx, s.w
	}
	adj := e.Adj
	nd, ns, fd := adj.NumDst(), e.NumSrc, adj.FeatDim
	q0 := nd // z's row of q_0
	if k == rowsTailMean {
		q0 = 0
	}
	bias := q0 + ns + fd // z's row of b
	s.ptr, s.idx, s.w = append(s.ptr[:0], 0), s.idx[:0], s.w[:0]
	edge := func(k int, scale T, head bool) {
		if head {
			s.add(adj.Dst[k], 1)
		}
		s.add(q0+adj.Src[k], scale)
		for f := 0; f < fd; f++ {
			s.add(q0+ns+f, scale*T(adj.Feat[k*fd+f]))
		}
		if head {
			s.add(bias, 1)
		}
	}
	switch k {
	case rowsEdge, rowsEdgeTail:
		for k2 := range adj.Src {
			edge(k2, 1, k == rowsEdge)
			s.ptr = append(s.ptr, len(s.idx))
		}
	case rowsTailMean:
		for i := 0; i < nd; i++ {
			for k2 := adj.Ptr[i]; k2 < adj.Ptr[i+1]; k2++ {
				edge(k2, e.InvDeg[k2], false)
			}
			s.ptr = append(s.ptr, len(s.idx))
		}
	case rowsHead, rowsMean:
		for i := 0; i < nd; i++ {
			if lo, hi := adj.Ptr[i], adj.Ptr[i+1]; hi > lo {
				s.add(i, 1)
				if k == rowsMean {
					for k2 := lo; k2 < hi; k2++ {
						edge(k2, e.InvDeg[k2], false)
					}
				}
				s.add(bias, 1)
			}
			s.ptr = append(s.ptr, len(s.idx))
		}
	}
	s.ok = true
	return s.ptr, s.idx, s.w
}

// Batch is a [Graph] converted to the tensors a model reads, in the
// model's float type. Its tensors are ordinary (not tape-owned) and are
// reused by the next Load, which allocates only when the graph grew (in
// float32 they are views of the graph's slices).
type Batch[T nn.Float] struct {
	Graph   *Graph
	X       [NumNodeTypes]*nn.Tensor[T] // [nodes × features] per type
	History *nn.Tensor[T]               // [machines × steps × channels]
	Global  *nn.Tensor[T]               // [1 × global features]
	Rel     [NumRelations]Edges[T]
}

// Load converts g. The batch refers to g's adjacency, and in float32 to
// its features (not copies), so g must not change while the batch is in
// use.
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
// shape [d0, d1] (d2 < 0) or [d0, d1, d2], reusing t's storage; for
// float32, t's data is src itself (the batch already requires its graph
// unchanged while in use, and no operation writes to its inputs). The
// dimensions are not variadic so that reusing a tensor does not allocate.
func setTensor[T nn.Float](t *nn.Tensor[T], src []float32, d0, d1, d2 int) *nn.Tensor[T] {
	if t == nil {
		t = new(nn.Tensor[T])
	}
	if s, ok := any(src).([]T); ok {
		t.Data = s
	} else {
		t.Data = convert(t.Data, src)
	}
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
