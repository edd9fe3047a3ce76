package nn

import (
	"fmt"
	"unsafe"
)

// This file holds the operations that graph neural networks need beyond
// gather and segment reductions. They live here, not in the gnn package,
// because nn is the project's only home of numeric kernels.

// SpMM returns the product of a sparse matrix A in compressed sparse row
// form with x: row i of the result is Σ w[e]·x[idx[e]] over e in
// [ptr[i], ptr[i+1]), where a row of x is everything below its first
// dimension (as in [Tape.GatherRows]). The result has shape
// [len(ptr)-1, x.Shape[1:]...]; rows with no entries are zero. A nil w
// means every weight is 1. Indices may repeat within and across rows.
//
// It is GatherRows followed by a weighted SegmentSum, fused: message
// passing over E edges then reads E rows of x and writes one row per
// destination instead of materialising an E-row intermediate, which for
// graphs with a few neighbours per node is most of the memory traffic.
// With w[e] = 1/deg(i) it is mean aggregation; with time-decay weights it
// is a weighted pooling over time steps.
//
// The weights are constants: they receive no gradient. ptr and idx are kept by
// reference until Backward; w is copied.
func (tp *Tape[T]) SpMM(ptr, idx []int, w []T, x *Tensor[T]) *Tensor[T] {
	checkCSR("SpMM", ptr, idx, w)
	out := tp.allocLeadRaw(x, len(ptr)-1)
	tp.sparseInto("SpMM", out.Data, ptr, idx, w, x, 0)
	tp.record(node[T]{op: opSpMM, out: out, a: x, idx: idx, ints: ptr, aux: tp.keepWeights(w, out)})
	return out
}

// keepWeights returns a tape-owned copy of a sparse product's weights for
// the backward pass (nil when there are none or out needs no gradient):
// a record has no field for a caller slice, and the copy allocates nothing.
func (tp *Tape[T]) keepWeights(w []T, out *Tensor[T]) *Tensor[T] {
	if w == nil || !out.RequiresGrad {
		return nil
	}
	wt := tp.alloc(false, len(w))
	copy(wt.Data, w)
	return wt
}

// checkCSR panics unless ptr, idx and w describe a sparse matrix, as far
// as that costs nothing per entry; checkRows checks the entries of each
// block of rows just before the operation reaches them, while they are in
// cache (a pass of its own over the indices was 5% of a forward pass over
// a 100k-machine graph, and a check per row 5% over a 1.2k one).
func checkCSR[T Float](op string, ptr, idx []int, w []T) {
	if len(ptr) == 0 {
		panic(fmt.Sprintf("nn: %s: empty row pointer (want len(ptr) = rows+1)", op))
	}
	if w != nil && len(w) != len(idx) {
		panic(fmt.Sprintf("nn: %s: %d weights for %d indices", op, len(w), len(idx)))
	}
	if ptr[0] != 0 || ptr[len(ptr)-1] != len(idx) {
		panic(fmt.Sprintf("nn: %s: row pointer spans [%d, %d), want [0, %d)", op, ptr[0], ptr[len(ptr)-1], len(idx)))
	}
}

// csrChunk is the number of rows checkRows checks at a time.
const csrChunk = 256

// checkRows panics unless the row pointer does not decrease over rows
// [i0, i1) and their indices are rows of x, which has nrow of them; rows
// before i0 have been checked.
func checkRows(op string, ptr, idx []int, i0, i1, nrow int) {
	if haveAVX512 && i1 > i0 {
		// The same tests as the loops below, eight lanes at a time (the
		// loops were 10% of a forward pass over a 1,200-machine graph);
		// the loops run only to name a failure.
		_ = ptr[i1]
		if minStepZ(&ptr[i0], i1-i0) >= 0 && maxUintZ(&ptr[i0+1], i1-i0) <= uint(len(idx)) {
			e0, e1 := ptr[i0], ptr[i1]
			if e1 == e0 || maxUintZ(&idx[e0], e1-e0) < uint(nrow) {
				return
			}
		}
	}
	for i := i0; i < i1; i++ {
		if ptr[i+1] < ptr[i] || ptr[i+1] > len(idx) {
			panic(fmt.Sprintf("nn: %s: row pointer decreases at row %d (%d, then %d, with %d indices)", op, i, ptr[i], ptr[i+1], len(idx)))
		}
	}
	for e := ptr[i0]; e < ptr[i1]; e++ {
		if uint(idx[e]) >= uint(nrow) {
			panic(fmt.Sprintf("nn: %s: index %d at position %d out of range [0, %d)", op, idx[e], e, nrow))
		}
	}
}

// SpMMSegmentMax returns SegmentMax(SpMM(ptr, idx, w, x), seg, nseg): the
// rows of the sparse product (messages, one per edge) are reduced by an
// elementwise maximum per segment (destination) as they are computed, so
// the message matrix, one row per edge and the largest tensor of a
// max-aggregating graph layer, is never stored; nor is its gradient. The
// forward pass records, for each output element, the first row that
// attained the maximum, and the backward pass routes the gradient there.
// Ties, empty segments and the weights are as in [Tape.SegmentMax] and
// [Tape.SpMM].
func (tp *Tape[T]) SpMMSegmentMax(ptr, idx []int, w []T, x *Tensor[T], seg []int, nseg int) *Tensor[T] {
	checkCSR("SpMMSegmentMax", ptr, idx, w)
	if len(seg) != len(ptr)-1 {
		panic(fmt.Sprintf("nn: SpMMSegmentMax: %d segment ids for %d rows", len(seg), len(ptr)-1))
	}
	for i, s := range seg {
		if s < 0 || s >= nseg {
			panic(fmt.Sprintf("nn: SpMMSegmentMax: segment id %d at row %d out of range [0, %d)", s, i, nseg))
		}
	}
	nrow, stride := x.lead()
	out := tp.allocLeadRaw(x, nseg)
	fused := zRows(x.Data, stride)
	m := tp.segmentMaxer(out.Data, nseg, stride, fused)
	var msg []T // a row's message, where they are not fused
	if !fused {
		msg = tp.allocRaw(false, stride).Data
	}
	var arg []int32
	if out.RequiresGrad {
		arg = tp.allocInt32s(len(out.Data))
	}
	for e := 0; e < len(seg); {
		end := min(e+csrChunk, len(seg))
		checkRows("SpMMSegmentMax", ptr, idx, e, end, nrow)
		for fused && e < end {
			// A run of rows in one segment (a destination's edges, in a
			// graph layer), their messages computed and taken in registers.
			r := e + 1
			for r < end && seg[r] == seg[e] {
				r++
			}
			m.spmmRun(seg[e], e, r, ptr, idx, w, x.Data, arg)
			e = r
		}
		for ; e < end; e++ {
			spmmRow(msg, ptr[e], ptr[e+1], idx, w, x.Data, stride)
			if arg != nil {
				m.addArg(seg[e], msg, arg, e)
			} else {
				m.add(seg[e], msg)
			}
		}
	}
	m.finish()
	tp.record(node[T]{op: opSpMMSegMax, out: out, a: x, idx: idx, ints: ptr, seg: seg, aux: tp.keepWeights(w, out), arg: arg})
	return out
}

// zRows reports whether sparse products over rows of x, stride wide, run
// the AVX-512 row kernels: two destination rows at a time (spmmRangeZ), a
// segment's run of rows in registers (spmmRun, spmmRouteZ) and a whole
// backward scatter in one call (spmmScatterRowsZ). They need float32 rows
// of whole 64-column blocks.
func zRows[T Float](x []T, stride int) bool {
	var z T
	return unsafe.Sizeof(z) == 4 && haveAVX512 && stride > 0 && stride%64 == 0
}

// spmmRow writes Σ w[e]·x[idx[e]] over e in [from, to) into dst (w nil:
// weights 1). With AVX2, whole rows of eight-column groups are summed in
// registers (spmmRowAVX, bitwise what axpy would give); the other columns,
// and every column without AVX2 or in float64, by axpy.
func spmmRow[T Float](dst []T, from, to int, idx []int, w []T, x []T, stride int) {
	dst = dst[:stride]
	j := 0
	if unsafe.Sizeof(dst[0]) == 4 && haveAVX2 && stride >= 8 {
		j = stride &^ 7
		ip, wp := csrRange(idx, w, from, to)
		spmmRowAVX(&as32(dst)[0], unsafe.SliceData(as32(x)), ip, wp, to-from, stride, j)
		if j == stride {
			return
		}
	}
	tail := dst[j:]
	clear(tail)
	for e := from; e < to; e++ {
		axpy(tail, weightAt(w, e), x[idx[e]*stride+j:(idx[e]+1)*stride])
	}
}

// weightAt is entry e's weight in a sparse product: w[e], or 1 when the
// product has none.
func weightAt[T Float](w []T, e int) T {
	if w == nil {
		return 1
	}
	return w[e]
}

// sparseWeights returns the weights a sparse product's record kept (see
// keepWeights), nil for none.
func (n *node[T]) sparseWeights() []T {
	if n.aux == nil {
		return nil
	}
	return n.aux.Data
}

// csrRange returns pointers to the first index and weight of the entries
// [from, to) of a sparse row, for the assembly kernels (nil where there
// are none, or no weights).
func csrRange[T Float](idx []int, w []T, from, to int) (*int, *float32) {
	if to <= from {
		return nil, nil
	}
	if w == nil {
		return &idx[from], nil
	}
	return &idx[from], &as32(w)[from]
}

func (tp *Tape[T]) backSpMMSegMax(n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil {
		return
	}
	_, stride := n.a.lead()
	ptr, idx, w := n.ints, n.idx, n.sparseWeights()
	// Each output column's gradient goes to the row (edge) the forward pass
	// recorded as the first to attain the maximum, edges in order, so a
	// shared source element sums its gradients in the order it always
	// has. With AVX2 the columns go eight at a time, under a mask of the
	// argmax, with Go's rounding (a product, then a sum).
	if zRows(n.a.Data, stride) {
		// As the forward pass went: runs of rows in one segment, each
		// run's gradient, argmax and maximum held in registers.
		seg := n.seg
		for e := 0; e < len(seg); {
			s, r := seg[e], e+1
			for r < len(seg) && seg[r] == s {
				r++
			}
			rows := s * stride
			spmmRouteZ(unsafe.SliceData(as32(ga)), &as32(n.out.Grad)[rows], &n.arg[rows], &as32(n.out.Data)[rows],
				&ptr[e], unsafe.SliceData(idx), unsafe.SliceData(as32(w)), r-e, int32(e), stride, stride)
			e = r
		}
		return
	}
	match := tp.allocInts(stride)
	lanes := 0 // columns routed eight at a time, under a mask
	var mask []float32
	if unsafe.Sizeof(ga[0]) == 4 && haveAVX2 {
		lanes = stride &^ 7
		mask = as32(tp.allocRaw(false, lanes).Data)
	}
	for e, s := range n.seg {
		or, g := n.out.Data[s*stride:(s+1)*stride], n.out.Grad[s*stride:(s+1)*stride]
		ar := n.arg[s*stride : (s+1)*stride]
		if lanes > 0 && routeMaskAVX(&mask[0], &ar[0], int32(e), &as32(or)[0], lanes) > 0 {
			for k := ptr[e]; k < ptr[e+1]; k++ {
				routeAVX(&as32(ga)[idx[k]*stride], float32(weightAt(w, k)), &as32(g)[0], &mask[0], lanes)
			}
		}
		m := argCols(match, ar[lanes:], int32(e))
		for _, j := range match[:m] {
			j += lanes
			if or[j] != or[j] {
				continue // a NaN maximum equals no message
			}
			for k := ptr[e]; k < ptr[e+1]; k++ {
				ga[idx[k]*stride+j] += weightAt(w, k) * g[j]
			}
		}
	}
}

// argCols writes to match, in increasing order, the columns j where
// arg[j] == e, and returns how many there are (without a branch on the
// comparison, which would mispredict: about one column in a segment's
// degree matches).
func argCols(match []int, arg []int32, e int32) int {
	m := 0
	for j, a := range arg {
		eq := 0
		if a == e {
			eq = 1
		}
		match[m] = j
		m += eq
	}
	return m
}

func backSpMM[T Float](n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil {
		return
	}
	_, stride := n.a.lead()
	spmmBackward(ga, n.out.Grad, n.ints, n.idx, n.sparseWeights(), stride)
}

// spmmBackward adds the gradient of SpMM(ptr, idx, w, x) for the rows' gradient g
// to x's gradient ga (rows stride wide): each row's gradient, times each
// entry's weight, scattered to the entry's row of x, rows and entries in
// order.
func spmmBackward[T Float](ga, g []T, ptr, idx []int, w []T, stride int) {
	if zRows(ga, stride) {
		spmmScatterRowsZ(unsafe.SliceData(as32(ga)), unsafe.SliceData(as32(g)), &ptr[0], unsafe.SliceData(idx), unsafe.SliceData(as32(w)), len(ptr)-1, stride, stride)
		return
	}
	lanes := 0 // columns scattered by spmmScatterAVX, a row of g in registers
	if unsafe.Sizeof(g[0]) == 4 && haveAVX2 && stride >= 8 {
		lanes = stride &^ 7
	}
	for i := 0; i+1 < len(ptr); i++ {
		gr := g[i*stride : (i+1)*stride]
		if lanes > 0 {
			ip, wp := csrRange(idx, w, ptr[i], ptr[i+1])
			spmmScatterAVX(unsafe.SliceData(as32(ga)), &as32(gr)[0], ip, wp, ptr[i+1]-ptr[i], stride, lanes)
			if lanes == stride {
				continue
			}
		}
		for e := ptr[i]; e < ptr[i+1]; e++ {
			axpy(ga[idx[e]*stride+lanes:(idx[e]+1)*stride], weightAt(w, e), gr[lanes:])
		}
	}
}

// axpy adds a·x to y elementwise. It is unrolled by four: the rows of
// message passing are short (tens of elements), and the unrolled loop
// keeps four independent multiply-adds in flight instead of paying the
// loop's bookkeeping per element (about 1.5x on 64-element rows).
func axpy[T Float](y []T, a T, x []T) {
	y = y[:len(x)]
	j := 0
	if unsafe.Sizeof(a) == 4 && haveAVX2 && len(x) >= 8 {
		// Eight lanes per AVX multiply-add: 64-element rows in 2 steps.
		j = len(x) &^ 7
		axpyAVX(&as32(y)[0], float32(a), &as32(x)[0], j)
	}
	for ; j+4 <= len(x); j += 4 {
		xs, ys := x[j:j+4:j+4], y[j:j+4:j+4]
		ys[0] += a * xs[0]
		ys[1] += a * xs[1]
		ys[2] += a * xs[2]
		ys[3] += a * xs[3]
	}
	for ; j < len(x); j++ {
		y[j] += a * x[j]
	}
}

// EdgeMax returns, for each of nseg destinations s, the elementwise
// maximum of the messages
//
//	m_e = x[src[e]] + Σ_f feat[e, f]·w[f]
//
// of the edges e with dst[e] = s, for x [n, c], w [F, c] and feat [E, F]
// (nil when F is 0). It is SpMMSegmentMax over the stacked rows [x; w] of
// the sparse matrix whose row e holds 1 at x's row src[e] and feat[e, f]
// at w's row f, without that matrix: EdgeConv's max aggregation with edge
// features (x the sources' projections, w the features' weights), where
// building those rows for every pass and reading w's rows for every edge
// cost as much as the messages themselves. Ties, empty destinations and
// the argmax are SpMMSegmentMax's, and in float32 so are the bits. The
// features are constants and take no gradient. src, dst and feat are kept
// by reference until Backward.
func (tp *Tape[T]) EdgeMax(x *Tensor[T], src []int, feat, w *Tensor[T], dst []int, nseg int) *Tensor[T] {
	checkRank("EdgeMax", x, 2)
	checkRank("EdgeMax", w, 2)
	n, c := x.Shape[0], x.Shape[1]
	nf := w.Shape[0]
	if w.Shape[1] != c {
		panic(fmt.Sprintf("nn: EdgeMax: rows %v and feature weights %v differ in width", x.Shape, w.Shape))
	}
	if len(dst) != len(src) {
		panic(fmt.Sprintf("nn: EdgeMax: %d destinations for %d sources", len(dst), len(src)))
	}
	var fd []T
	if nf > 0 {
		if feat == nil || len(feat.Shape) != 2 || feat.Shape[0] != len(src) || feat.Shape[1] != nf {
			var shape []int
			if feat != nil {
				shape = feat.Shape
			}
			panic(fmt.Sprintf("nn: EdgeMax: features %v for %d edges and %d feature weights", shape, len(src), nf))
		}
		if feat.RequiresGrad {
			panic("nn: EdgeMax: edge features take no gradient")
		}
		fd = feat.Data
	}
	checkIndices("EdgeMax", "source", src, n)
	checkIndices("EdgeMax", "destination", dst, nseg)
	out := tp.allocRaw(x.RequiresGrad || w.RequiresGrad, nseg, c)
	fast := edgeMaxFast(x.Data, c, nf)
	m := tp.segmentMaxer(out.Data, nseg, c, fast)
	var arg []int32
	if out.RequiresGrad {
		arg = tp.allocInt32s(len(out.Data))
	}
	if fast {
		xp, wp := unsafe.SliceData(as32(x.Data)), unsafe.SliceData(as32(w.Data))
		for e := 0; e < len(dst); {
			// A destination's run of edges, their messages computed and
			// taken in registers.
			s, r := dst[e], e+1
			for r < len(dst) && dst[r] == s {
				r++
			}
			var ap *int32
			if arg != nil {
				ap = &arg[s*c]
			}
			var fp *float32
			if nf > 0 {
				fp = &as32(fd)[e*nf]
			}
			edgeMaxZ(&as32(out.Data)[s*c], ap, xp, &src[e], fp, wp, r-e, int32(e), m.counts[s] == 0, nf, c, c)
			m.counts[s] += r - e
			e = r
		}
	} else {
		msg := tp.allocRaw(false, c).Data
		for e, j := range src {
			// +0 + x_j, then the features' terms in order: the sparse
			// product's sum.
			for k, v := range x.Data[j*c : (j+1)*c] {
				msg[k] = 0 + v
			}
			for f := 0; f < nf; f++ {
				axpy(msg, fd[e*nf+f], w.Data[f*c:(f+1)*c])
			}
			if arg != nil {
				m.addArg(dst[e], msg, arg, e)
			} else {
				m.add(dst[e], msg)
			}
		}
	}
	m.finish()
	tp.record(node[T]{op: opEdgeMax, out: out, a: x, b: w, c: feat, idx: src, seg: dst, arg: arg})
	return out
}

// edgeMaxFast reports whether EdgeMax runs its AVX-512 kernels (edgeMaxZ,
// edgeRouteZ): float32 rows of whole 64-column blocks, and at most three
// features, whose weights they hold in registers.
func edgeMaxFast[T Float](x []T, c, nf int) bool { return zRows(x, c) && nf <= 3 }

// checkIndices panics unless every index is in [0, n), naming the first
// that is not.
func checkIndices(op, what string, idx []int, n int) {
	if haveAVX512 && len(idx) > 0 && maxUintZ(&idx[0], len(idx)) < uint(n) {
		return
	}
	for i, v := range idx {
		if uint(v) >= uint(n) {
			panic(fmt.Sprintf("nn: %s: %s %d at position %d out of range [0, %d)", op, what, v, i, n))
		}
	}
}

func (tp *Tape[T]) backEdgeMax(n *node[T]) {
	x, w := n.a, n.b
	gx, gw := gradOf(x), gradOf(w)
	if gx == nil && gw == nil {
		return
	}
	c, nf := x.Shape[1], w.Shape[0]
	src, dst, arg := n.idx, n.seg, n.arg
	var fd []T
	if nf > 0 {
		fd = n.c.Data
	}
	out, g := n.out.Data, n.out.Grad
	// Each output column's gradient goes to the edge the forward pass
	// recorded as the first to attain the maximum, edges in order, so that
	// a source row or a feature weight sums its gradients in the order
	// SpMMSegmentMax's backward pass would.
	if edgeMaxFast(x.Data, c, nf) && gx != nil && (gw != nil || nf == 0) {
		gwp := unsafe.SliceData(as32(gw))
		for e := 0; e < len(dst); {
			s, r := dst[e], e+1
			for r < len(dst) && dst[r] == s {
				r++
			}
			var fp *float32
			if nf > 0 {
				fp = &as32(fd)[e*nf]
			}
			edgeRouteZ(unsafe.SliceData(as32(gx)), gwp, &as32(g)[s*c], &arg[s*c], &as32(out)[s*c], &src[e], fp, r-e, int32(e), nf, c, c)
			e = r
		}
		return
	}
	for e, s := range dst {
		or, gr, ar := out[s*c:(s+1)*c], g[s*c:(s+1)*c], arg[s*c:(s+1)*c]
		for j, a := range ar {
			if a != int32(e) || or[j] != or[j] {
				continue // not this edge's column, or a NaN maximum, which equals no message
			}
			if gx != nil {
				gx[src[e]*c+j] += gr[j]
			}
			if gw != nil {
				for f := 0; f < nf; f++ {
					gw[f*c+j] += fd[e*nf+f] * gr[j]
				}
			}
		}
	}
}
