package nn

import (
	"fmt"
	"math"
	"slices"
	"unsafe"
)

// MatMul returns op(a)·op(b) for 2-D a and b, where op transposes its
// argument when the corresponding flag is set.
func (tp *Tape[T]) MatMul(a, b *Tensor[T], transA, transB bool) *Tensor[T] {
	checkRank("MatMul", a, 2)
	checkRank("MatMul", b, 2)
	m, k := a.Shape[0], a.Shape[1]
	if transA {
		m, k = k, m
	}
	k2, n := b.Shape[0], b.Shape[1]
	if transB {
		k2, n = n, k2
	}
	if k != k2 {
		panic(fmt.Sprintf("nn: MatMul: inner dimensions differ: %v (trans %v) and %v (trans %v)", a.Shape, transA, b.Shape, transB))
	}
	out := tp.allocRaw(a.RequiresGrad || b.RequiresGrad, m, n) // beta 0: gemm writes every element
	tp.scratch.gemm(transA, transB, m, n, k, 1, a.Data, a.Shape[1], b.Data, b.Shape[1], 0, out.Data, n)
	tp.record(node[T]{op: opMatMul, out: out, a: a, b: b, t0: transA, t1: transB, i0: m, i1: n, i2: k})
	return out
}

// Affine returns x·w + bias (bias added to every row), the product of a
// linear layer. It is MatMul and AddBias in one operation: the product's
// kernel adds the bias as it stores its sums, so the result is written
// once, with no bias pass before or after.
func (tp *Tape[T]) Affine(x, w, bias *Tensor[T]) *Tensor[T] {
	checkRank("Affine", x, 2)
	checkRank("Affine", w, 2)
	m, k, n := x.Shape[0], x.Shape[1], w.Shape[1]
	if w.Shape[0] != k {
		panic(fmt.Sprintf("nn: Affine: inner dimensions differ: %v and %v", x.Shape, w.Shape))
	}
	if len(bias.Data) != n {
		panic(fmt.Sprintf("nn: Affine: bias shape %v does not match %d outputs", bias.Shape, n))
	}
	out := tp.allocRaw(x.RequiresGrad || w.RequiresGrad || bias.RequiresGrad, m, n)
	tp.scratch.product(m, n, k, x.Data, w.Data, bias.Data, false, false, out.Data)
	tp.record(node[T]{op: opAffine, out: out, a: x, b: w, c: bias, i0: m, i1: n, i2: k})
	return out
}

// fillRows sets every len(row)-wide row of dst to row, doubling the filled
// part with each copy up to fillChunk elements, then repeating that
// chunk: a few long copies instead of one short one per row, from a
// source that stays in L1 (doubling all the way reads back, from memory,
// as much as it writes: 2x the traffic on 25 MB outputs).
func fillRows[T Float](dst, row []T) {
	if len(dst) == 0 {
		return
	}
	k := copy(dst, row)
	chunk := max(len(row), fillChunk/len(row)*len(row))
	for k < len(dst) {
		k += copy(dst[k:], dst[:min(k, chunk)])
	}
}

// fillChunk is the size, in elements, of the block fillRows repeats.
const fillChunk = 2048

func (tp *Tape[T]) backAffine(n *node[T]) {
	tp.backMatMul(n)
	addRows(gradOf(n.c), n.out.Grad)
}

// A Term is one summand of [Tape.SumTerms] (or block of [Tape.StackTerms]):
// the product X·W when W is not nil, the sparse product [Tape.SpMM](Ptr,
// Idx, Weights, X) when Ptr is not nil (SumTerms only), else X itself.
//
// A sparse term (a graph layer's aggregation) is added to the sum row by
// row as it is computed, and takes its gradient from the sum's in the
// backward pass: neither the aggregated rows nor their gradient are
// stored on their own.
type Term[T Float] struct {
	X, W     *Tensor[T]
	Ptr, Idx []int // a sparse term's matrix, as SpMM's
	Weights  []T   // a sparse term's weights (nil: 1); copied by SumTerms
}

// Value returns the term's value as a tensor of its own (for a caller that
// needs it outside a sum).
func (tp *Tape[T]) Value(tm Term[T]) *Tensor[T] {
	switch {
	case tm.Ptr != nil:
		return tp.SpMM(tm.Ptr, tm.Idx, tm.Weights, tm.X)
	case tm.W != nil:
		return tp.MatMul(tm.X, tm.W, false, false)
	}
	return tm.X
}

// shape returns the term's rows and columns, and panics, naming op and
// term i, unless X (and W) are matrices whose product is defined.
func (tm Term[T]) shape(op string, i int) (rows, cols int) {
	checkRank(op, tm.X, 2)
	rows, cols = tm.X.Shape[0], tm.X.Shape[1]
	if tm.Ptr != nil {
		if tm.W != nil || op != "SumTerms" {
			panic(fmt.Sprintf("nn: %s: term %d: a sparse term with a product, or outside SumTerms", op, i))
		}
		checkCSR(op, tm.Ptr, tm.Idx, tm.Weights)
		return len(tm.Ptr) - 1, cols
	}
	if tm.W != nil {
		checkRank(op, tm.W, 2)
		if tm.W.Shape[0] != cols {
			panic(fmt.Sprintf("nn: %s: term %d: inner dimensions differ: %v and %v", op, i, tm.X.Shape, tm.W.Shape))
		}
		cols = tm.W.Shape[1]
	}
	return rows, cols
}

// requiresGrad reports whether the term's value depends on a tensor that
// requires gradients.
func (tm Term[T]) requiresGrad() bool {
	return tm.X.RequiresGrad || tm.W != nil && tm.W.RequiresGrad
}

// SumTerms returns act(bias + Σ terms), every term [m, n] (a product's X
// [m, k] and W [k, n]; a sparse term's matrix has m rows) and bias, unless
// nil, an n-element row added to every row. It is Affine, AddN and the activation in one operation, for
// sums such as a graph layer's root term plus one term per relation: the
// products accumulate into the result as they are computed, so no term is
// stored on its own and summed later; a ReLU is applied by the last
// addition as it stores (other activations in a pass of their own); and
// in the backward pass every term takes its gradient from the result's,
// with no copy per term. The first product (with the bias) is computed
// first, then the other terms in order.
//
// With a fused ReLU, Backward leaves in the result's Grad the gradient of
// the sum before the activation (it masks the gradient in place).
func (tp *Tape[T]) SumTerms(act Activation, bias *Tensor[T], terms ...Term[T]) *Tensor[T] {
	if act != ActIdentity && act != ActReLU {
		return tp.Activate(tp.SumTerms(ActIdentity, bias, terms...), act)
	}
	if len(terms) == 0 {
		panic("nn: SumTerms of nothing")
	}
	first, m, n := -1, -1, -1
	rg := bias != nil && bias.RequiresGrad
	for i, tm := range terms {
		r, c := tm.shape("SumTerms", i)
		if tm.W != nil && first < 0 {
			first = i
		}
		if m < 0 {
			m, n = r, c
		} else if r != m || c != n {
			panic(fmt.Sprintf("nn: SumTerms: term %d is %d×%d, term 0 %d×%d", i, r, c, m, n))
		}
		rg = rg || tm.requiresGrad()
	}
	if bias != nil && len(bias.Data) != n {
		panic(fmt.Sprintf("nn: SumTerms: bias shape %v does not match %d columns", bias.Shape, n))
	}
	relu := act == ActReLU
	out := tp.allocRaw(rg, m, n)
	o := out.Data
	// start is the term that initialises out (-1: the bias alone), last
	// the term added last, which applies the ReLU.
	start, last := 0, len(terms)-1
	if first >= 0 {
		start = first
	} else if bias != nil {
		start = -1
	}
	if last == start && len(terms) > 1 {
		last = len(terms) - 2 // the start term moved to the front
	}
	var b []T
	if bias != nil {
		b = bias.Data
	}
	switch {
	case start < 0:
		fillRows(o, b)
	case first >= 0:
		x, w := terms[first].X, terms[first].W
		tp.scratch.product(m, n, x.Shape[1], x.Data, w.Data, b, false, relu && last == start, o)
	case terms[0].Ptr != nil:
		t0 := terms[0]
		tp.sparseInto("SumTerms", o, t0.Ptr, t0.Idx, t0.Weights, t0.X, 0)
	default:
		copy(o, terms[0].X.Data)
	}
	for i, tm := range terms {
		r := relu && i == last
		switch {
		case i == start:
			if r && tm.W == nil { // one plain term, no bias: nothing added
				reluVec(o)
			}
		case tm.Ptr != nil:
			mode := 1 // add
			if r {
				mode = 2 // add, then the ReLU
			}
			tp.sparseInto("SumTerms", o, tm.Ptr, tm.Idx, tm.Weights, tm.X, mode)
		case tm.W != nil:
			tp.scratch.product(m, n, tm.X.Shape[1], tm.X.Data, tm.W.Data, nil, true, r, o)
		case r:
			addRelu(o, tm.X.Data)
		default:
			addTo(o, tm.X.Data)
		}
	}
	if out.RequiresGrad {
		for i, tm := range terms {
			nd := node[T]{op: opSumTerm, out: out, a: tm.X, b: tm.W, i0: m, i1: n, i2: tm.X.Shape[1]}
			if tm.Ptr != nil {
				nd.ints, nd.idx, nd.aux = tm.Ptr, tm.Idx, tp.keepWeights(tm.Weights, out)
			}
			if i == 0 {
				nd.c = bias
			}
			if relu && i == len(terms)-1 {
				nd.f1 = 1 // the first record Backward meets: mask the gradient
			}
			tp.record(nd)
		}
	}
	return out
}

// backSumTerm gives one term of SumTerms (and the bias, on the first
// term's record) its gradient. The last term's record of a sum with a
// ReLU first turns the result's gradient into the sum's, in place.
func (tp *Tape[T]) backSumTerm(n *node[T]) {
	g := n.out.Grad
	if n.f1 == 1 {
		reluGradInPlace(g, n.out.Data)
	}
	switch {
	case n.ints != nil: // a sparse term: SpMM's backward pass, from the sum's gradient
		if gx := gradOf(n.a); gx != nil {
			_, stride := n.a.lead()
			spmmBackward(gx, g, n.ints, n.idx, n.sparseWeights(), stride)
		}
	case n.b != nil:
		tp.backProduct(n, g)
	default:
		if gx, fresh := gradFor(n.a); gx != nil {
			accumulate(gx, g, fresh)
		}
	}
	if n.c != nil {
		addRows(gradOf(n.c), g)
	}
}

// sparseInto writes (mode 0) or adds (mode 1; mode 2 then takes
// max(·, 0)) the rows of the sparse product SpMM(ptr, idx, w, x) into o,
// checking the rows' entries as it reaches them (op names the operation
// in a panic). Each row's sum is computed as SpMM computes it (in
// registers, two rows at a time, where the AVX-512 row kernels run), so
// the result has the bits of SpMM followed by addTo or addRelu, without
// the product's rows ever being stored together.
func (tp *Tape[T]) sparseInto(op string, o []T, ptr, idx []int, w []T, x *Tensor[T], mode int) {
	nrow, stride := x.lead()
	pair := zRows(x.Data, stride)
	var s1 []T // a row's sum, before mode 1 or 2 adds it
	if mode != 0 {
		s1 = tp.allocRaw(false, stride).Data
	}
	for i := 0; i+1 < len(ptr); {
		end := min(i+csrChunk, len(ptr)-1)
		checkRows(op, ptr, idx, i, end, nrow)
		if n2 := (end - i) &^ 1; pair && n2 > 0 {
			// The chunk's rows two at a time, in one call.
			_ = o[(i+n2)*stride-1]
			spmmRangeZ(&as32(o)[i*stride], unsafe.SliceData(as32(x.Data)), &ptr[i], unsafe.SliceData(idx), unsafe.SliceData(as32(w)), n2, stride, stride, mode)
			i += n2
		}
		for ; i < end; i++ {
			dst := o[i*stride : (i+1)*stride]
			switch mode {
			case 0:
				spmmRow(dst, ptr[i], ptr[i+1], idx, w, x.Data, stride)
			case 1:
				spmmRow(s1, ptr[i], ptr[i+1], idx, w, x.Data, stride)
				addTo(dst, s1)
			default:
				spmmRow(s1, ptr[i], ptr[i+1], idx, w, x.Data, stride)
				addRelu(dst, s1)
			}
		}
	}
}

// reluGradInPlace zeroes g where y = max(x, 0) says x was not positive,
// as ReLU's backward pass does from x.
func reluGradInPlace[T Float](g, y []T) {
	if unsafe.Sizeof(g[0]) == 4 {
		reluGrad32(as32(g), as32(y), as32(g))
		return
	}
	for i, v := range y {
		if !(v > 0) {
			g[i] = 0
		}
	}
}

// reluVec sets x[i] = max(x[i], 0), eight lanes at a time for float32
// where the AVX2 kernels run.
func reluVec[T Float](x []T) {
	j := 0
	if unsafe.Sizeof(x[0]) == 4 && haveAVX2 && len(x) >= 8 {
		j = len(x) &^ 7
		reluAVX(&as32(x)[0], &as32(x)[0], j)
	}
	for ; j < len(x); j++ {
		x[j] = max(x[j], 0)
	}
}

// addRelu sets dst[i] = max(dst[i] + src[i], 0) (Go's max), eight lanes
// at a time for float32 where the sgemm kernel runs.
func addRelu[T Float](dst, src []T) {
	src = src[:len(dst)]
	j := 0
	if unsafe.Sizeof(dst[0]) == 4 && haveAVX2 && len(dst) >= 8 {
		j = len(dst) &^ 7
		addReluAVX(&as32(dst)[0], &as32(src)[0], j)
	}
	for ; j < len(dst); j++ {
		// A NaN keeps the bits the addition gave it, as in the AVX lanes
		// (Go's max may return another NaN; ReLU's gradient mask reads
		// the sign bit, so a row's tail must agree with the lanes).
		if v := dst[j] + src[j]; v == v {
			dst[j] = max(v, 0)
		} else {
			dst[j] = v
		}
	}
}

// AddN returns the elementwise sum of xs, which must all have the same
// shape, in one pass per two terms: a chain of Adds writes every partial
// sum.
func (tp *Tape[T]) AddN(xs ...*Tensor[T]) *Tensor[T] {
	if len(xs) == 0 {
		panic("nn: AddN of nothing")
	}
	rg := false
	for _, x := range xs {
		checkSame("AddN", xs[0], x)
		rg = rg || x.RequiresGrad
	}
	out := tp.allocRaw(rg, xs[0].Shape...)
	// One pass per two terms, each reading its terms and writing the sum
	// once (a chain of additions writes every partial sum).
	o, rest := out.Data, xs[1:]
	if len(rest)%2 == 1 {
		addVec(o, xs[0].Data, rest[0].Data)
		rest = rest[1:]
	} else {
		copy(o, xs[0].Data)
	}
	for ; len(rest) >= 2; rest = rest[2:] {
		addPair(o, rest[0].Data, rest[1].Data)
	}
	if out.RequiresGrad {
		// The tape keeps the inputs; a record has room for three, so
		// longer sums are recorded as a chain of nodes that share out.
		for i := 0; i < len(xs); i += 3 {
			nd := node[T]{op: opAddN, out: out, a: xs[i]}
			if i+1 < len(xs) {
				nd.b = xs[i+1]
			}
			if i+2 < len(xs) {
				nd.c = xs[i+2]
			}
			tp.record(nd)
		}
	}
	return out
}

func backAddN[T Float](n *node[T]) {
	g := n.out.Grad
	for _, x := range [3]*Tensor[T]{n.a, n.b, n.c} {
		if gx, fresh := gradFor(x); gx != nil {
			accumulate(gx, g, fresh)
		}
	}
}

func (tp *Tape[T]) backMatMul(n *node[T]) { tp.backProduct(n, n.out.Grad) }

// backProduct gives the operands of the product n.a·n.b (transposed as
// n.t0, n.t1 say; m×k times k×n as n.i0, n.i2, n.i1) their gradients
// from g, the product's.
func (tp *Tape[T]) backProduct(n *node[T], g []T) {
	gemm := tp.scratch.gemm
	a, b := n.a, n.b
	m, nn, k := n.i0, n.i1, n.i2
	lda, ldb := a.Shape[1], b.Shape[1]
	if ga, fresh := gradFor(a); ga != nil {
		beta := T(1)
		if fresh {
			beta = 0
		}
		switch {
		case !n.t0 && !n.t1: // dA[m,k] += dC·Bᵀ
			gemm(false, true, m, k, nn, 1, g, nn, b.Data, ldb, beta, ga, lda)
		case !n.t0 && n.t1: // dA[m,k] += dC·B
			gemm(false, false, m, k, nn, 1, g, nn, b.Data, ldb, beta, ga, lda)
		case n.t0 && !n.t1: // dA[k,m] += B·dCᵀ
			gemm(false, true, k, m, nn, 1, b.Data, ldb, g, nn, beta, ga, lda)
		default: // dA[k,m] += Bᵀ·dCᵀ
			gemm(true, true, k, m, nn, 1, b.Data, ldb, g, nn, beta, ga, lda)
		}
	}
	if gb, fresh := gradFor(b); gb != nil {
		beta := T(1)
		if fresh {
			beta = 0
		}
		switch {
		case !n.t0 && !n.t1: // dB[k,n] += Aᵀ·dC
			gemm(true, false, k, nn, m, 1, a.Data, lda, g, nn, beta, gb, ldb)
		case !n.t0 && n.t1: // dB[n,k] += dCᵀ·A
			gemm(true, false, nn, k, m, 1, g, nn, a.Data, lda, beta, gb, ldb)
		case n.t0 && !n.t1: // dB[k,n] += A·dC
			gemm(false, false, k, nn, m, 1, a.Data, lda, g, nn, beta, gb, ldb)
		default: // dB[n,k] += dCᵀ·Aᵀ
			gemm(true, true, nn, k, m, 1, g, nn, a.Data, lda, beta, gb, ldb)
		}
	}
}

// Add returns a+b elementwise; the shapes must match.
func (tp *Tape[T]) Add(a, b *Tensor[T]) *Tensor[T] {
	checkSame("Add", a, b)
	out := tp.allocRaw(a.RequiresGrad || b.RequiresGrad, a.Shape...)
	addVec(out.Data, a.Data, b.Data)
	tp.record(node[T]{op: opAdd, out: out, a: a, b: b, f0: 1})
	return out
}

// Sub returns a-b elementwise; the shapes must match.
func (tp *Tape[T]) Sub(a, b *Tensor[T]) *Tensor[T] {
	checkSame("Sub", a, b)
	out := tp.allocRaw(a.RequiresGrad || b.RequiresGrad, a.Shape...)
	for i, x := range a.Data {
		out.Data[i] = x - b.Data[i]
	}
	tp.record(node[T]{op: opSub, out: out, a: a, b: b, f0: -1})
	return out
}

func backAddSub[T Float](n *node[T]) {
	g := n.out.Grad
	if ga, fresh := gradFor(n.a); ga != nil {
		accumulate(ga, g, fresh)
	}
	if gb, fresh := gradFor(n.b); gb != nil {
		s := T(n.f0)
		if fresh {
			for i, v := range g {
				gb[i] = s * v
			}
			return
		}
		for i, v := range g {
			gb[i] += s * v
		}
	}
}

// Mul returns a*b elementwise; the shapes must match.
func (tp *Tape[T]) Mul(a, b *Tensor[T]) *Tensor[T] {
	checkSame("Mul", a, b)
	out := tp.allocRaw(a.RequiresGrad || b.RequiresGrad, a.Shape...)
	for i, x := range a.Data {
		out.Data[i] = x * b.Data[i]
	}
	tp.record(node[T]{op: opMul, out: out, a: a, b: b})
	return out
}

func backMul[T Float](n *node[T]) {
	g := n.out.Grad
	if ga := gradOf(n.a); ga != nil {
		for i, v := range g {
			ga[i] += v * n.b.Data[i]
		}
	}
	if gb := gradOf(n.b); gb != nil {
		for i, v := range g {
			gb[i] += v * n.a.Data[i]
		}
	}
}

// Minimum returns min(a, b) elementwise; the gradient goes to the smaller
// argument (to a on ties). The shapes must match.
func (tp *Tape[T]) Minimum(a, b *Tensor[T]) *Tensor[T] {
	checkSame("Minimum", a, b)
	out := tp.allocRaw(a.RequiresGrad || b.RequiresGrad, a.Shape...)
	for i, x := range a.Data {
		out.Data[i] = min(x, b.Data[i])
	}
	tp.record(node[T]{op: opMin, out: out, a: a, b: b})
	return out
}

func backMin[T Float](n *node[T]) {
	g := n.out.Grad
	ga, gb := gradOf(n.a), gradOf(n.b)
	for i, v := range g {
		if n.a.Data[i] <= n.b.Data[i] {
			if ga != nil {
				ga[i] += v
			}
		} else if gb != nil {
			gb[i] += v
		}
	}
}

// AddBias returns x with the vector b added to every row (last dimension)
// of x; len(b.Data) must equal the last dimension of x.
func (tp *Tape[T]) AddBias(x, b *Tensor[T]) *Tensor[T] {
	c := x.cols()
	if len(b.Data) != c {
		panic(fmt.Sprintf("nn: AddBias: bias shape %v does not match rows of %v", b.Shape, x.Shape))
	}
	out := tp.allocRaw(x.RequiresGrad || b.RequiresGrad, x.Shape...)
	for r := 0; r < x.rows(); r++ {
		xr, or := x.Data[r*c:(r+1)*c], out.Data[r*c:(r+1)*c]
		for j, v := range xr {
			or[j] = v + b.Data[j]
		}
	}
	tp.record(node[T]{op: opAddBias, out: out, a: x, b: b})
	return out
}

func backAddBias[T Float](n *node[T]) {
	addTo(gradOf(n.a), n.out.Grad)
	addRows(gradOf(n.b), n.out.Grad)
}

// addRows adds every len(dst)-wide row of g to dst (a bias's gradient); a
// nil dst is skipped.
func addRows[T Float](dst, g []T) {
	if dst == nil {
		return
	}
	if unsafe.Sizeof(dst[0]) == 4 && haveAVX512 && len(dst) >= 16 && len(dst)%16 == 0 {
		// A bias's gradient: each column's sum held in a register over the
		// rows (one addTo per row was a call and a load and store per row).
		colSumZ(&as32(dst)[0], unsafe.SliceData(as32(g)), len(g)/len(dst), len(dst))
		return
	}
	for r := 0; r+len(dst) <= len(g); r += len(dst) {
		addTo(dst, g[r:r+len(dst)])
	}
}

// Scale returns s*x.
func (tp *Tape[T]) Scale(x *Tensor[T], s float64) *Tensor[T] {
	out := tp.allocRaw(x.RequiresGrad, x.Shape...)
	st := T(s)
	for i, v := range x.Data {
		out.Data[i] = st * v
	}
	tp.record(node[T]{op: opScale, out: out, a: x, f0: s})
	return out
}

func backScale[T Float](n *node[T]) {
	if ga := gradOf(n.a); ga != nil {
		s := T(n.f0)
		for i, v := range n.out.Grad {
			ga[i] += s * v
		}
	}
}

// Clip returns x clamped to [lo, hi]. Elements outside the interval get no
// gradient, as in PPO's clipped ratio.
func (tp *Tape[T]) Clip(x *Tensor[T], lo, hi float64) *Tensor[T] {
	out := tp.allocRaw(x.RequiresGrad, x.Shape...)
	l, h := T(lo), T(hi)
	for i, v := range x.Data {
		out.Data[i] = min(max(v, l), h)
	}
	tp.record(node[T]{op: opClip, out: out, a: x, f0: lo, f1: hi})
	return out
}

func backClip[T Float](n *node[T]) {
	if ga := gradOf(n.a); ga != nil {
		l, h := T(n.f0), T(n.f1)
		for i, v := range n.out.Grad {
			if x := n.a.Data[i]; x >= l && x <= h {
				ga[i] += v
			}
		}
	}
}

type unaryKind uint8

const (
	unaryReLU unaryKind = iota
	unaryTanh
	unarySigmoid
	unarySiLU
	unaryGELU
	unaryExp
	unaryLog
	unarySquare
	unarySoftplus
)

// ReLU returns max(x, 0) elementwise.
func (tp *Tape[T]) ReLU(x *Tensor[T]) *Tensor[T] { return tp.unary(x, unaryReLU) }

// Tanh returns tanh(x) elementwise.
func (tp *Tape[T]) Tanh(x *Tensor[T]) *Tensor[T] { return tp.unary(x, unaryTanh) }

// Sigmoid returns 1/(1+exp(-x)) elementwise.
func (tp *Tape[T]) Sigmoid(x *Tensor[T]) *Tensor[T] { return tp.unary(x, unarySigmoid) }

// SiLU returns x*sigmoid(x) elementwise.
func (tp *Tape[T]) SiLU(x *Tensor[T]) *Tensor[T] { return tp.unary(x, unarySiLU) }

// GELU returns the tanh approximation of the Gaussian error linear unit,
// 0.5x(1+tanh(√(2/π)(x+0.044715x³))), elementwise.
func (tp *Tape[T]) GELU(x *Tensor[T]) *Tensor[T] { return tp.unary(x, unaryGELU) }

// Exp returns exp(x) elementwise.
func (tp *Tape[T]) Exp(x *Tensor[T]) *Tensor[T] { return tp.unary(x, unaryExp) }

// Log returns the natural logarithm of x elementwise.
func (tp *Tape[T]) Log(x *Tensor[T]) *Tensor[T] { return tp.unary(x, unaryLog) }

// Square returns x² elementwise.
func (tp *Tape[T]) Square(x *Tensor[T]) *Tensor[T] { return tp.unary(x, unarySquare) }

// Softplus returns ln(1+exp(x)) elementwise, computed without overflow; it
// maps a network output to a positive parameter (e.g. Beta's α - 1).
func (tp *Tape[T]) Softplus(x *Tensor[T]) *Tensor[T] { return tp.unary(x, unarySoftplus) }

// softplus is ln(1+eˣ) = max(x, 0) + ln(1+e^-|x|).
func softplus(x float64) float64 { return max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

const (
	geluC = 0.7978845608028654 // √(2/π)
	geluA = 0.044715
)

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func (tp *Tape[T]) unary(x *Tensor[T], k unaryKind) *Tensor[T] {
	out := tp.allocRaw(x.RequiresGrad, x.Shape...)
	y := out.Data
	switch k {
	case unaryReLU:
		i := 0
		if unsafe.Sizeof(x.Data[0]) == 4 && haveAVX2 && len(y) >= 8 {
			i = len(y) &^ 7
			reluAVX(&as32(y)[0], &as32(x.Data)[0], i)
		}
		for ; i < len(y); i++ {
			y[i] = max(x.Data[i], 0)
		}
	case unaryTanh:
		i := 0
		if unsafe.Sizeof(x.Data[0]) == 4 && haveTanhZ && len(y) >= 8 {
			i = len(y) &^ 7
			tanhZ(&as32(y)[0], &as32(x.Data)[0], i, &tanhConsts[0])
		}
		for ; i < len(y); i++ {
			y[i] = T(math.Tanh(f64(x.Data[i])))
		}
	case unarySigmoid:
		for i, v := range x.Data {
			y[i] = T(sigmoid(f64(v)))
		}
	case unarySiLU:
		for i, v := range x.Data {
			y[i] = T(f64(v) * sigmoid(f64(v)))
		}
	case unaryGELU:
		for i, v := range x.Data {
			u := f64(v)
			y[i] = T(0.5 * u * (1 + math.Tanh(geluC*(u+geluA*u*u*u))))
		}
	case unaryExp:
		for i, v := range x.Data {
			y[i] = T(math.Exp(f64(v)))
		}
	case unaryLog:
		for i, v := range x.Data {
			y[i] = T(math.Log(f64(v)))
		}
	case unarySquare:
		for i, v := range x.Data {
			y[i] = v * v
		}
	case unarySoftplus:
		for i, v := range x.Data {
			y[i] = T(softplus(f64(v)))
		}
	default:
		panic(fmt.Sprintf("nn: unknown unary operation %d", k))
	}
	tp.record(node[T]{op: opUnary, out: out, a: x, unary: k})
	return out
}

// reluGrad32 writes g where x > 0 and 0 elsewhere, with a bit mask
// instead of a branch on the sign, which mispredicts on half the
// elements of a layer's pre-activations: the mask is all ones exactly
// when x's bits, read as an int32, are positive (x > 0; NaN with the sign
// clear also passes).
func reluGrad32(dst, x, g []float32) {
	x, dst = x[:len(g)], dst[:len(g)]
	i0 := 0
	if haveAVX2 && len(g) >= 8 {
		i0 = len(g) &^ 7 // the same mask, eight lanes at a time
		reluGradAVX(&dst[0], &x[0], &g[0], i0)
	}
	for i := i0; i < len(g); i++ {
		v := g[i]
		b := int32(math.Float32bits(x[i]))
		m := uint32(((-b) &^ b) >> 31) // -b < 0 and b >= 0: b > 0 (also excludes -0)
		dst[i] = math.Float32frombits(math.Float32bits(v) & m)
	}
}

func backUnary[T Float](n *node[T]) {
	gx, fresh := gradFor(n.a)
	if gx == nil {
		return
	}
	x, y, g := n.a.Data, n.out.Data, n.out.Grad
	if fresh {
		if n.unary == unaryReLU && unsafe.Sizeof(x[0]) == 4 {
			reluGrad32(as32(gx), as32(x), as32(g))
			return
		}
		clear(gx)
	}
	switch n.unary {
	case unaryReLU:
		for i, v := range g {
			if x[i] > 0 {
				gx[i] += v
			}
		}
	case unaryTanh:
		for i, v := range g {
			gx[i] += v * (1 - y[i]*y[i])
		}
	case unarySigmoid:
		for i, v := range g {
			gx[i] += v * y[i] * (1 - y[i])
		}
	case unarySiLU:
		for i, v := range g {
			u := f64(x[i])
			s := sigmoid(u)
			gx[i] += v * T(s*(1+u*(1-s)))
		}
	case unaryGELU:
		for i, v := range g {
			u := f64(x[i])
			th := math.Tanh(geluC * (u + geluA*u*u*u))
			d := 0.5*(1+th) + 0.5*u*(1-th*th)*geluC*(1+3*geluA*u*u)
			gx[i] += v * T(d)
		}
	case unaryExp:
		for i, v := range g {
			gx[i] += v * y[i]
		}
	case unaryLog:
		for i, v := range g {
			gx[i] += v / x[i]
		}
	case unarySquare:
		for i, v := range g {
			gx[i] += 2 * v * x[i]
		}
	case unarySoftplus:
		for i, v := range g {
			gx[i] += v * T(sigmoid(f64(x[i])))
		}
	}
}

// SumAll returns the sum of all elements as a one-element tensor of shape [1].
func (tp *Tape[T]) SumAll(x *Tensor[T]) *Tensor[T] { return tp.sumAll(x, 1) }

// MeanAll returns the mean of all elements as a one-element tensor of shape [1].
func (tp *Tape[T]) MeanAll(x *Tensor[T]) *Tensor[T] {
	if len(x.Data) == 0 {
		panic("nn: MeanAll of empty tensor")
	}
	return tp.sumAll(x, 1/float64(len(x.Data)))
}

func (tp *Tape[T]) sumAll(x *Tensor[T], scale float64) *Tensor[T] {
	out := tp.alloc(x.RequiresGrad, 1)
	// Accumulate in float64 (sums over a batch lose bits in float32), in
	// four interleaved sums: one sum waits on each addition's latency,
	// which made a loss over a graph's embeddings a twentieth of a
	// training pass.
	d := x.Data
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(d); i += 4 {
		q := d[i : i+4 : i+4]
		s0 += f64(q[0])
		s1 += f64(q[1])
		s2 += f64(q[2])
		s3 += f64(q[3])
	}
	for ; i < len(d); i++ {
		s0 += f64(d[i])
	}
	out.Data[0] = T(((s0 + s1) + (s2 + s3)) * scale)
	tp.record(node[T]{op: opSumAll, out: out, a: x, f0: scale})
	return out
}

// fill sets every element of s to v: the first, then copies doubling in
// length (memmove's wide stores, where a loop stores one element at a
// time).
func fill[T Float](s []T, v T) {
	if len(s) == 0 {
		return
	}
	s[0] = v
	for k := 1; k < len(s); k *= 2 {
		copy(s[k:], s[:k])
	}
}

func backSumAll[T Float](n *node[T]) {
	ga, fresh := gradFor(n.a)
	if ga == nil {
		return
	}
	g := n.out.Grad[0] * T(n.f0)
	if fresh { // nothing added yet: the gradient is g everywhere
		fill(ga, g)
		return
	}
	for i := range ga {
		ga[i] += g
	}
}

// Sum sums a 2-D tensor over axis 0 (giving shape [cols]) or axis 1
// (giving shape [rows]).
func (tp *Tape[T]) Sum(x *Tensor[T], axis int) *Tensor[T] { return tp.sumAxis(x, axis, false) }

// Mean averages a 2-D tensor over axis 0 (giving shape [cols]) or axis 1
// (giving shape [rows]).
func (tp *Tape[T]) Mean(x *Tensor[T], axis int) *Tensor[T] { return tp.sumAxis(x, axis, true) }

func (tp *Tape[T]) sumAxis(x *Tensor[T], axis int, mean bool) *Tensor[T] {
	checkRank("Sum", x, 2)
	r, c := x.Shape[0], x.Shape[1]
	if axis != 0 && axis != 1 {
		panic(fmt.Sprintf("nn: Sum: axis %d of a 2-D tensor", axis))
	}
	n := []int{r, c}[axis]
	scale := 1.0
	if mean && n > 0 {
		scale = 1 / float64(n)
	}
	s := T(scale)
	var out *Tensor[T]
	if axis == 0 {
		out = tp.alloc(x.RequiresGrad, c)
		for i := 0; i < r; i++ {
			for j, v := range x.Data[i*c : (i+1)*c] {
				out.Data[j] += v
			}
		}
	} else {
		out = tp.alloc(x.RequiresGrad, r)
		for i := 0; i < r; i++ {
			var acc T
			for _, v := range x.Data[i*c : (i+1)*c] {
				acc += v
			}
			out.Data[i] = acc
		}
	}
	for i := range out.Data {
		out.Data[i] *= s
	}
	tp.record(node[T]{op: opSumAxis, out: out, a: x, i0: axis, f0: scale})
	return out
}

func backSumAxis[T Float](n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil {
		return
	}
	r, c := n.a.Shape[0], n.a.Shape[1]
	s := T(n.f0)
	g := n.out.Grad
	for i := 0; i < r; i++ {
		row := ga[i*c : (i+1)*c]
		if n.i0 == 0 {
			for j := range row {
				row[j] += s * g[j]
			}
		} else {
			v := s * g[i]
			for j := range row {
				row[j] += v
			}
		}
	}
}

// Reshape returns a copy of x with a new shape of the same size.
func (tp *Tape[T]) Reshape(x *Tensor[T], shape ...int) *Tensor[T] {
	if shapeSize(shape) != len(x.Data) {
		// A copy in the message keeps shape from escaping: a Reshape
		// allocates nothing.
		panic(fmt.Sprintf("nn: Reshape: %v to %v changes the size", x.Shape, slices.Clone(shape)))
	}
	out := tp.allocRaw(x.RequiresGrad, shape...)
	copy(out.Data, x.Data)
	tp.record(node[T]{op: opReshape, out: out, a: x})
	return out
}

func backReshape[T Float](n *node[T]) {
	if ga, fresh := gradFor(n.a); ga != nil {
		accumulate(ga, n.out.Grad, fresh)
	}
}

// Concat joins two 2-D tensors along axis 0 (stacking rows; column counts
// must match) or axis 1 (side by side; row counts must match).
func (tp *Tape[T]) Concat(a, b *Tensor[T], axis int) *Tensor[T] {
	checkRank("Concat", a, 2)
	checkRank("Concat", b, 2)
	rg := a.RequiresGrad || b.RequiresGrad
	var out *Tensor[T]
	switch axis {
	case 0:
		if a.Shape[1] != b.Shape[1] {
			panic(fmt.Sprintf("nn: Concat rows: %v and %v", a.Shape, b.Shape))
		}
		out = tp.allocRaw(rg, a.Shape[0]+b.Shape[0], a.Shape[1])
		copy(out.Data, a.Data)
		copy(out.Data[len(a.Data):], b.Data)
	case 1:
		if a.Shape[0] != b.Shape[0] {
			panic(fmt.Sprintf("nn: Concat columns: %v and %v", a.Shape, b.Shape))
		}
		r, ca, cb := a.Shape[0], a.Shape[1], b.Shape[1]
		out = tp.allocRaw(rg, r, ca+cb)
		for i := 0; i < r; i++ {
			copy(out.Data[i*(ca+cb):], a.Data[i*ca:(i+1)*ca])
			copy(out.Data[i*(ca+cb)+ca:], b.Data[i*cb:(i+1)*cb])
		}
	default:
		panic(fmt.Sprintf("nn: Concat: axis %d of 2-D tensors", axis))
	}
	tp.record(node[T]{op: opConcat, out: out, a: a, b: b, i0: axis})
	return out
}

// StackTerms returns the rows of its terms stacked, the first term's rows
// first: a term is X·W when W is not nil, else X, and all have the same
// number of columns. It is Concat of products without the copies: each
// product is computed into its rows of the result, and in the backward
// pass takes its gradient from them.
func (tp *Tape[T]) StackTerms(terms ...Term[T]) *Tensor[T] {
	if len(terms) == 0 {
		panic("nn: StackTerms of nothing")
	}
	rows, n := 0, -1
	rg := false
	for i, tm := range terms {
		r, c := tm.shape("StackTerms", i)
		if n < 0 {
			n = c
		} else if c != n {
			panic(fmt.Sprintf("nn: StackTerms: term %d has %d columns, term 0 %d", i, c, n))
		}
		rows += r
		rg = rg || tm.requiresGrad()
	}
	out := tp.allocRaw(rg, rows, n)
	r0 := 0
	for _, tm := range terms {
		m := tm.X.Shape[0]
		dst := out.Data[r0*n : (r0+m)*n]
		if tm.W != nil {
			tp.scratch.product(m, n, tm.X.Shape[1], tm.X.Data, tm.W.Data, nil, false, false, dst)
		} else {
			copy(dst, tm.X.Data)
		}
		tp.record(node[T]{op: opStackTerm, out: out, a: tm.X, b: tm.W, i0: m, i1: n, i2: tm.X.Shape[1], i3: r0})
		r0 += m
	}
	return out
}

// backStackTerm gives one term of StackTerms its gradient from its rows.
func (tp *Tape[T]) backStackTerm(n *node[T]) {
	g := n.out.Grad[n.i3*n.i1 : (n.i3+n.i0)*n.i1]
	if n.b != nil {
		tp.backProduct(n, g)
	} else if gx, fresh := gradFor(n.a); gx != nil {
		accumulate(gx, g, fresh)
	}
}

func backConcat[T Float](n *node[T]) {
	g := n.out.Grad
	// When a and b are one tensor only the first is fresh, and every
	// element is written through a before b adds to it.
	ga, fa := gradFor(n.a)
	gb, fb := gradFor(n.b)
	if n.i0 == 0 {
		if ga != nil {
			accumulate(ga, g[:len(n.a.Data)], fa)
		}
		if gb != nil {
			accumulate(gb, g[len(n.a.Data):], fb)
		}
		return
	}
	r, ca, cb := n.a.Shape[0], n.a.Shape[1], n.b.Shape[1]
	for i := 0; i < r; i++ {
		row := g[i*(ca+cb) : (i+1)*(ca+cb)]
		if ga != nil {
			accumulate(ga[i*ca:(i+1)*ca], row[:ca], fa)
		}
		if gb != nil {
			accumulate(gb[i*cb:(i+1)*cb], row[ca:], fb)
		}
	}
}

// addTo adds src to dst elementwise; a nil dst is skipped.
func addTo[T Float](dst, src []T) {
	if dst == nil {
		return
	}
	addVec(dst, dst, src)
}

// addVec sets dst[i] = a[i] + b[i] for i < len(dst); dst may be a or b.
// float32 slices go eight lanes at a time through AVX where the sgemm
// kernel runs (the same additions, so the same bits).
func addVec[T Float](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	j := 0
	if unsafe.Sizeof(dst[0]) == 4 && haveAVX2 && len(dst) >= 8 {
		j = len(dst) &^ 7
		addAVX(&as32(dst)[0], &as32(a)[0], &as32(b)[0], j)
	}
	for ; j < len(dst); j++ {
		dst[j] = a[j] + b[j]
	}
}

// addPair sets dst[i] += b[i] + c[i], the pair summed first, like addVec.
func addPair[T Float](dst, b, c []T) {
	b, c = b[:len(dst)], c[:len(dst)]
	j := 0
	if unsafe.Sizeof(dst[0]) == 4 && haveAVX2 && len(dst) >= 8 {
		j = len(dst) &^ 7
		addPairAVX(&as32(dst)[0], &as32(b)[0], &as32(c)[0], j)
	}
	for ; j < len(dst); j++ {
		dst[j] += b[j] + c[j]
	}
}

// Slice returns rows (axis 0) or columns (axis 1) [from, to) of a 2-D tensor.
func (tp *Tape[T]) Slice(x *Tensor[T], axis, from, to int) *Tensor[T] {
	checkRank("Slice", x, 2)
	r, c := x.Shape[0], x.Shape[1]
	lim := r
	if axis == 1 {
		lim = c
	} else if axis != 0 {
		panic(fmt.Sprintf("nn: Slice: axis %d of a 2-D tensor", axis))
	}
	if from < 0 || to < from || to > lim {
		panic(fmt.Sprintf("nn: Slice: [%d, %d) out of range for axis %d of %v", from, to, axis, x.Shape))
	}
	var out *Tensor[T]
	if axis == 0 {
		out = tp.allocRaw(x.RequiresGrad, to-from, c)
		copy(out.Data, x.Data[from*c:to*c])
	} else {
		w := to - from
		out = tp.allocRaw(x.RequiresGrad, r, w)
		for i := 0; i < r; i++ {
			copy(out.Data[i*w:(i+1)*w], x.Data[i*c+from:i*c+to])
		}
	}
	tp.record(node[T]{op: opSlice, out: out, a: x, i0: axis, i1: from, i2: to})
	return out
}

func backSlice[T Float](n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil {
		return
	}
	c := n.a.Shape[1]
	g := n.out.Grad
	if n.i0 == 0 {
		addTo(ga[n.i1*c:n.i2*c], g)
		return
	}
	w := n.i2 - n.i1
	for i := 0; i < n.a.Shape[0]; i++ {
		addTo(ga[i*c+n.i1:i*c+n.i2], g[i*w:(i+1)*w])
	}
}
