package nn

import (
	"fmt"
	"math"
	"unsafe"
)

// GatherRows returns the rows x[idx[0]], x[idx[1]], ... where a row is
// everything below the first dimension of x; the result has shape
// [len(idx), x.Shape[1:]...]. Indices may repeat; their gradients add up.
func (tp *Tape[T]) GatherRows(x *Tensor[T], idx []int) *Tensor[T] {
	nrow, stride := x.lead()
	out := tp.allocLeadRaw(x, len(idx))
	for i, r := range idx {
		if r < 0 || r >= nrow {
			panic(fmt.Sprintf("nn: GatherRows: index %d at position %d out of range [0, %d)", r, i, nrow))
		}
		copy(out.Data[i*stride:(i+1)*stride], x.Data[r*stride:(r+1)*stride])
	}
	tp.record(node[T]{op: opGather, out: out, a: x, idx: idx})
	return out
}

func backGather[T Float](n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil {
		return
	}
	_, stride := n.a.lead()
	g := n.out.Grad
	for i, r := range n.idx {
		addTo(ga[r*stride:(r+1)*stride], g[i*stride:(i+1)*stride])
	}
}

// allocLead allocates a tensor shaped like x but with first dimension n.
func (tp *Tape[T]) allocLead(x *Tensor[T], n int) *Tensor[T] {
	t := tp.allocLeadRaw(x, n)
	clear(t.Data)
	return t
}

// allocLeadRaw is allocLead without the zeroing (see [Tape.allocRaw]).
func (tp *Tape[T]) allocLeadRaw(x *Tensor[T], n int) *Tensor[T] {
	var buf [4]int
	shape := append(buf[:0], x.Shape...)
	if len(shape) == 0 {
		shape = append(shape, n)
	} else {
		shape[0] = n
	}
	return tp.allocRaw(x.RequiresGrad, shape...)
}

func checkSegments[T Float](op string, x *Tensor[T], seg []int, nseg int) {
	nrow, _ := x.lead()
	if len(seg) != nrow {
		panic(fmt.Sprintf("nn: %s: %d segment ids for %d rows", op, len(seg), nrow))
	}
	for i, s := range seg {
		if s < 0 || s >= nseg {
			panic(fmt.Sprintf("nn: %s: segment id %d of row %d out of range [0, %d)", op, s, i, nseg))
		}
	}
}

// SegmentSum adds row i of x into row seg[i] of the result, which has shape
// [nseg, x.Shape[1:]...]. Segments that receive no rows are zero. Segment
// ids need not be sorted.
func (tp *Tape[T]) SegmentSum(x *Tensor[T], seg []int, nseg int) *Tensor[T] {
	return tp.segSum(x, seg, nseg, false)
}

// SegmentMean averages the rows of x by segment (see [Tape.SegmentSum]);
// empty segments are zero.
func (tp *Tape[T]) SegmentMean(x *Tensor[T], seg []int, nseg int) *Tensor[T] {
	return tp.segSum(x, seg, nseg, true)
}

func (tp *Tape[T]) segSum(x *Tensor[T], seg []int, nseg int, mean bool) *Tensor[T] {
	checkSegments("SegmentSum", x, seg, nseg)
	_, stride := x.lead()
	out := tp.allocLead(x, nseg)
	for i, s := range seg {
		addTo(out.Data[s*stride:(s+1)*stride], x.Data[i*stride:(i+1)*stride])
	}
	var counts []int
	if mean {
		counts = tp.allocInts(nseg)
		clear(counts)
		for _, s := range seg {
			counts[s]++
		}
		for s, c := range counts {
			if c > 1 {
				inv := 1 / T(c)
				row := out.Data[s*stride : (s+1)*stride]
				for j := range row {
					row[j] *= inv
				}
			}
		}
	}
	tp.record(node[T]{op: opSegSum, out: out, a: x, idx: seg, ints: counts})
	return out
}

func backSegSum[T Float](n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil {
		return
	}
	_, stride := n.a.lead()
	g := n.out.Grad
	for i, s := range n.idx {
		dst, src := ga[i*stride:(i+1)*stride], g[s*stride:(s+1)*stride]
		if n.ints == nil {
			addTo(dst, src)
			continue
		}
		inv := 1 / T(n.ints[s])
		for j, v := range src {
			dst[j] += v * inv
		}
	}
}

// SegmentMax takes the elementwise maximum of the rows of x by segment (see
// [Tape.SegmentSum]); empty segments are zero. The gradient of each output
// element goes to the row that attained the maximum (the first, on ties).
//
// The forward pass uses the branch-free max and leaves finding the arg-max
// to the backward pass, where the comparison is almost always false and so
// predictable: with random data a running arg-max mispredicts about every
// other branch and is several times slower.
func (tp *Tape[T]) SegmentMax(x *Tensor[T], seg []int, nseg int) *Tensor[T] {
	checkSegments("SegmentMax", x, seg, nseg)
	_, stride := x.lead()
	out := tp.allocLeadRaw(x, nseg)
	m := tp.segmentMaxer(out.Data, nseg, stride, false)
	if !out.RequiresGrad {
		for i, s := range seg {
			m.add(s, x.Data[i*stride:(i+1)*stride])
		}
		m.finish()
		tp.record(node[T]{op: opSegMax, out: out, a: x, idx: seg})
		return out
	}
	// Each output's argmax, the row its gradient goes to: the backward pass
	// then routes one value per output instead of comparing every input
	// with its segment's maximum (a graph readout's max over all its
	// nodes' rows).
	arg := tp.allocInt32s(len(out.Data))
	for i, s := range seg {
		m.addArg(s, x.Data[i*stride:(i+1)*stride], arg, i)
	}
	m.finish()
	for s, c := range m.counts {
		if c == 0 { // no row: no gradient
			for j := range arg[s*stride : (s+1)*stride] {
				arg[s*stride+j] = -1
			}
		}
	}
	tp.record(node[T]{op: opSegMax, out: out, a: x, idx: seg, arg: arg})
	return out
}

// segMax accumulates rows into their segments' elementwise maxima, for
// SegmentMax and SpMMSegmentMax; empty segments end as zeros.
type segMax[T Float] struct {
	out    []T
	counts []int
	stride int
}

// segmentMaxer starts the maxima of nseg segments of stride-wide rows in
// out at −∞, unless lazy: then every row is taken by spmmRun, which starts
// a segment at its first row, so out is not written in a pass of its own.
func (tp *Tape[T]) segmentMaxer(out []T, nseg, stride int, lazy bool) segMax[T] {
	counts := tp.allocInts(nseg)
	clear(counts)
	if !lazy {
		negInf := T(math.Inf(-1))
		for i := range out {
			out[i] = negInf
		}
	}
	return segMax[T]{out: out, counts: counts, stride: stride}
}

// addArg is add that also records in arg, for each column, the first row
// (numbered e by the caller) that attains the segment's maximum: a
// segment's first row sets every column, a later one the columns where it
// is strictly larger. (So a column's row is the first whose value equals
// the final maximum; with a NaN the maximum is NaN and equals no row.)
func (m *segMax[T]) addArg(s int, row []T, arg []int32, e int) {
	or := m.out[s*m.stride : (s+1)*m.stride]
	ar := arg[s*m.stride : (s+1)*m.stride]
	or, ar = or[:len(row)], ar[:len(row)]
	if m.counts[s] == 0 {
		for j := range ar {
			ar[j] = int32(e)
		}
	}
	m.counts[s]++
	j := 0
	if unsafe.Sizeof(row[0]) == 4 && haveAVX512 && len(row) >= 16 {
		j = len(row) &^ 15
		maxArgZ(&as32(or)[0], &ar[0], &as32(row)[0], j, int32(e))
	}
	if unsafe.Sizeof(row[0]) == 4 && haveAVX2 && len(row)-j >= 8 {
		n := (len(row) - j) &^ 7
		maxArgAVX(&as32(or)[j], &ar[j], &as32(row)[j], n, int32(e))
		j += n
	}
	for ; j < len(row); j++ {
		if row[j] > or[j] {
			ar[j] = int32(e)
		}
		or[j] = max(or[j], row[j])
	}
}

// spmmRun takes the messages of rows [e0, e1) of a sparse product, all in
// segment s, into its maximum, and their argmax into arg unless it is nil,
// without storing them: spmmMaxArgZ, with addArg's rules. Only where
// zRows says so, on rows checkRows has checked.
func (m *segMax[T]) spmmRun(s, e0, e1 int, ptr, idx []int, w, x []T, arg []int32) {
	or := m.out[s*m.stride : (s+1)*m.stride]
	var ap *int32
	if arg != nil {
		ap = &arg[s*m.stride : (s+1)*m.stride][0]
	}
	fresh := m.counts[s] == 0
	m.counts[s] += e1 - e0
	spmmMaxArgZ(&as32(or)[0], ap, unsafe.SliceData(as32(x)), &ptr[e0], unsafe.SliceData(idx), unsafe.SliceData(as32(w)), e1-e0, int32(e0), fresh, m.stride, m.stride)
}

// add takes row into segment s's maximum, branch-free.
func (m *segMax[T]) add(s int, row []T) {
	m.counts[s]++
	or := m.out[s*m.stride : (s+1)*m.stride]
	or = or[:len(row)]
	j := 0
	if unsafe.Sizeof(row[0]) == 4 && haveAVX2 && len(row) >= 8 {
		// Eight lanes per step, with max's NaN and signed-zero rules.
		j = len(row) &^ 7
		maxAVX(&as32(or)[0], &as32(row)[0], j)
	}
	for ; j < len(row); j++ {
		or[j] = max(or[j], row[j])
	}
}

// finish zeroes the segments no row reached.
func (m *segMax[T]) finish() {
	for s, c := range m.counts {
		if c == 0 {
			clear(m.out[s*m.stride : (s+1)*m.stride])
		}
	}
}

func (tp *Tape[T]) backSegMax(n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil {
		return
	}
	_, stride := n.a.lead()
	// Each output's gradient goes to the first row that attained its
	// maximum (addArg's argmax); a NaN maximum equals no row, and an
	// empty segment has none.
	for k, o := range n.out.Data {
		if o != o || n.arg[k] < 0 {
			continue
		}
		ga[int(n.arg[k])*stride+k%stride] += n.out.Grad[k]
	}
}
