package nn

import (
	"fmt"
	"math"
)

// Tape records operations for reverse-mode differentiation and owns the
// tensors it returns. See the package documentation for the reuse scheme.
// A Tape is not safe for concurrent use.
type Tape[T Float] struct {
	nodes []node[T]

	pool []*Tensor[T] // arena of tensors; pool[:used] are live
	used int

	ints     [][]int // arena of index buffers (argmax, counts)
	usedInts int

	int32s     [][]int32 // arena of narrow index buffers (SpMMSegmentMax's argmax)
	usedInt32s int

	scratch gemmScratch[T] // transposed matmul operands

	// gradFree holds the gradient buffers BackwardLeaves lends to
	// intermediate results; each returns here once its tensor's producing
	// operation has been differentiated.
	gradFree [][]T
}

// NewTape returns an empty tape.
func NewTape[T Float]() *Tape[T] { return &Tape[T]{} }

// Reset forgets all records and makes every tensor the tape returned
// available for reuse. Tensors obtained before Reset must not be used after.
func (tp *Tape[T]) Reset() {
	clear(tp.nodes) // drop references to caller tensors so they can be collected
	tp.nodes = tp.nodes[:0]
	tp.used = 0
	tp.usedInts = 0
	tp.usedInt32s = 0
	tp.scratch.mulAdds = 0
}

// MulAdds returns the multiply-adds of the matrix products (MatMul,
// SumTerms, Conv1D and their gradients) run since the last Reset: twice
// it is the products' FLOPs, which over a core's peak FLOP rate is the
// least time they can take (BenchmarkFMAPeak).
func (tp *Tape[T]) MulAdds() int64 { return tp.scratch.mulAdds }

// Len returns the number of recorded operations.
func (tp *Tape[T]) Len() int { return len(tp.nodes) }

// alloc returns a zeroed tape-owned tensor of the given shape.
func (tp *Tape[T]) alloc(requiresGrad bool, shape ...int) *Tensor[T] {
	t := tp.allocRaw(requiresGrad, shape...)
	clear(t.Data)
	return t
}

// poisonRaw makes allocRaw fill its tensors with NaN, so that the tests
// (TestMain sets it) catch an operation that leaves an element unwritten;
// Backward then also fills the not-yet-zeroed gradients with NaN.
var poisonRaw bool

// allocRaw is [Tape.alloc] without the zeroing, for operations that write
// every element of their result: on large graphs the clearing was a
// quarter of a forward pass, a whole extra sweep over memory per tensor.
func (tp *Tape[T]) allocRaw(requiresGrad bool, shape ...int) *Tensor[T] {
	var t *Tensor[T]
	if tp.used < len(tp.pool) {
		t = tp.pool[tp.used]
	} else {
		t = new(Tensor[T])
		tp.pool = append(tp.pool, t)
	}
	tp.used++
	n := shapeSize(shape)
	if cap(t.Data) < n {
		t.Data = make([]T, n)
	} else {
		t.Data = t.Data[:n]
	}
	if poisonRaw {
		for i := range t.Data {
			t.Data[i] = T(math.NaN())
		}
	}
	t.setShape(shape)
	t.RequiresGrad = requiresGrad
	t.Grad = t.Grad[:0]
	t.gradStale = false
	t.recycled = gradOwn
	return t
}

// allocInts returns a tape-owned int buffer of length n (contents undefined).
func (tp *Tape[T]) allocInts(n int) []int { return arenaGet(&tp.ints, &tp.usedInts, n) }

// allocInt32s returns a tape-owned int32 buffer of length n (contents
// undefined).
func (tp *Tape[T]) allocInt32s(n int) []int32 { return arenaGet(&tp.int32s, &tp.usedInt32s, n) }

// arenaGet hands out the next of the buffers in arena (*used of them are
// live), grown to n elements if needed.
func arenaGet[E any](arena *[][]E, used *int, n int) []E {
	if *used == len(*arena) {
		*arena = append(*arena, nil)
	}
	b := (*arena)[*used]
	if cap(b) < n {
		b = make([]E, n)
		(*arena)[*used] = b
	}
	*used++
	return b[:n]
}

func (tp *Tape[T]) record(n node[T]) {
	if n.out.RequiresGrad {
		tp.nodes = append(tp.nodes, n)
	}
}

// Backward computes the gradient of loss, which must have one element, with
// respect to every tensor that requires gradients. Gradients of tensors the
// tape owns are overwritten; gradients of parameters (tensors not owned by
// the tape) are added to, so callers zero them between steps (see
// [Params.ZeroGrad]).
func (tp *Tape[T]) Backward(loss *Tensor[T]) { tp.backwardPass("Backward", loss, false) }

// BackwardLeaves is [Tape.Backward] for a caller that needs only the
// gradients of leaves: parameters, and tape tensors that no recorded
// operation produced. An intermediate result gets a gradient buffer when
// the first operation that consumes it is differentiated, and gives it
// back to the tape once its own producing operation has been, so a buffer
// serves several results in one pass. On the 1,200-machine GNN encoder
// the gradients take 20 buffers and 4.7 MB instead of Backward's 87 and
// 11.6 MB, which with the forward pass's 13.2 MB of results keeps more of
// a training step in cache. Afterwards intermediate results have no Grad.
// Gradients and their bits are those of Backward.
func (tp *Tape[T]) BackwardLeaves(loss *Tensor[T]) { tp.backwardPass("BackwardLeaves", loss, true) }

// backwardPass is Backward, and with leaves BackwardLeaves (op names the
// caller in a panic). Without leaves every tensor keeps its own buffer
// (gradOwn throughout), so the lending below does nothing.
func (tp *Tape[T]) backwardPass(op string, loss *Tensor[T], leaves bool) {
	if len(loss.Data) != 1 {
		panic(fmt.Sprintf("nn: %s: loss has shape %v, want one element", op, loss.Shape))
	}
	if !loss.RequiresGrad {
		return
	}
	if leaves {
		// Intermediates wait for a lent buffer; every other tape tensor
		// keeps its own. An intermediate's last use is its first
		// recording in tape order (sums of terms record one node per term).
		for i := range tp.nodes {
			n := &tp.nodes[i]
			n.release = n.out.recycled == gradOwn
			if n.release {
				n.out.recycled = gradRecycle
				n.out.gradStale = true
			}
		}
	}
	for _, t := range tp.pool[:tp.used] {
		if t.RequiresGrad && t.recycled == gradOwn {
			if cap(t.Grad) < len(t.Data) {
				t.Grad = make([]T, len(t.Data))
			}
			t.Grad = t.Grad[:len(t.Data)]
			t.gradStale = true
			tp.poisonGrad(t)
		}
	}
	for i := range tp.nodes {
		n := &tp.nodes[i]
		for _, x := range [3]*Tensor[T]{n.a, n.b, n.c} {
			if x != nil && x.recycled == gradOwn {
				ensureGrad(x)
			}
		}
	}
	if loss.recycled == gradOwn {
		ensureGrad(loss) // a leaf as the loss
	}
	tp.lendGrad(loss)
	gradOf(loss)[0]++
	for i := len(tp.nodes) - 1; i >= 0; i-- {
		n := &tp.nodes[i]
		// An output nothing reached has a zero gradient: skip its record.
		if n.out.recycled != gradRecycle && !n.out.gradStale {
			tp.lendGrad(n.a)
			tp.lendGrad(n.b)
			tp.lendGrad(n.c)
			tp.backward(n)
		}
		if leaves && n.release {
			tp.returnGrad(n.out)
		}
	}
	for _, t := range tp.pool[:tp.used] {
		if t.recycled == gradOwn {
			gradOf(t) // tensors nothing reached still get their zero gradient
		}
	}
}

// lendGrad gives an intermediate result that has none a stale (not yet
// zeroed) buffer from the free list: the smallest that is large enough, or
// a new one.
func (tp *Tape[T]) lendGrad(t *Tensor[T]) {
	if t == nil || t.recycled != gradRecycle {
		return
	}
	n, best := len(t.Data), -1
	for i, b := range tp.gradFree {
		if cap(b) >= n && (best < 0 || cap(b) < cap(tp.gradFree[best])) {
			best = i
		}
	}
	var buf []T
	if best < 0 {
		buf = make([]T, n)
	} else {
		buf = tp.gradFree[best]
		last := len(tp.gradFree) - 1
		tp.gradFree[best] = tp.gradFree[last]
		tp.gradFree[last] = nil
		tp.gradFree = tp.gradFree[:last]
	}
	t.Grad = buf[:n]
	t.gradStale = true
	t.recycled = gradLent
	tp.poisonGrad(t)
}

// returnGrad puts an intermediate's buffer back on the free list.
func (tp *Tape[T]) returnGrad(t *Tensor[T]) {
	if t.recycled == gradLent {
		tp.gradFree = append(tp.gradFree, t.Grad[:cap(t.Grad)])
	}
	t.Grad = nil
	t.recycled = gradOwn
}

// poisonGrad fills a not yet zeroed gradient with NaN in the tests (see
// poisonRaw).
func (tp *Tape[T]) poisonGrad(t *Tensor[T]) {
	if poisonRaw {
		for i := range t.Grad {
			t.Grad[i] = T(math.NaN())
		}
	}
}

// ensureGrad gives a leaf that requires gradients a gradient buffer.
func ensureGrad[T Float](t *Tensor[T]) {
	if t != nil && t.RequiresGrad && len(t.Grad) != len(t.Data) {
		t.Grad = make([]T, len(t.Data))
	}
}

type opKind uint8

const (
	opMatMul opKind = iota
	opAdd
	opSub
	opMul
	opMin
	opAddBias
	opAffine
	opAddN
	opSumTerm
	opStackTerm
	opScale
	opClip
	opUnary
	opSumAll
	opSumAxis
	opReshape
	opConcat
	opSlice
	opGather
	opSegSum
	opSegMax
	opSoftmax
	opLogSoftmax
	opMSE
	opCrossEntropy
	opCatLogProb
	opCatEntropy
	opBetaLogProb
	opBetaEntropy
	opGaussLogProb
	opGaussEntropy
	opConv1D
	opLayerNorm
	opSpMM // ops_gnn.go
	opSpMMSegMax
	opEdgeMax
)

// node is one recorded operation. It is a plain struct (not a closure) so
// that recording into a reused slice does not allocate; the fields' meaning
// depends on op.
type node[T Float] struct {
	op      opKind
	out     *Tensor[T]
	a, b, c *Tensor[T]
	aux     *Tensor[T] // saved intermediate (log-probabilities, im2col, x-hat)
	aux2    *Tensor[T]
	idx     []int   // caller's indices (gather, segments, targets)
	seg     []int   // caller's segment ids, where idx holds other indices
	ints    []int   // tape-owned indices (argmax, counts)
	arg     []int32 // tape-owned argmax of SpMMSegmentMax
	mask    []bool
	i0, i1  int
	i2, i3  int
	f0, f1  float64
	t0, t1  bool
	unary   unaryKind
	release bool // BackwardLeaves: out's buffer goes back after this node
}

func (tp *Tape[T]) backward(n *node[T]) {
	switch n.op {
	case opMatMul:
		tp.backMatMul(n)
	case opAdd, opSub:
		backAddSub(n)
	case opMul:
		backMul(n)
	case opMin:
		backMin(n)
	case opAddBias:
		backAddBias(n)
	case opAffine:
		tp.backAffine(n)
	case opAddN:
		backAddN(n)
	case opSumTerm:
		tp.backSumTerm(n)
	case opStackTerm:
		tp.backStackTerm(n)
	case opScale:
		backScale(n)
	case opClip:
		backClip(n)
	case opUnary:
		backUnary(n)
	case opSumAll:
		backSumAll(n)
	case opSumAxis:
		backSumAxis(n)
	case opReshape:
		backReshape(n)
	case opConcat:
		backConcat(n)
	case opSlice:
		backSlice(n)
	case opGather:
		backGather(n)
	case opSegSum:
		backSegSum(n)
	case opSegMax:
		tp.backSegMax(n)
	case opSoftmax:
		backSoftmax(n)
	case opLogSoftmax:
		backLogSoftmax(n)
	case opMSE:
		backMSE(n)
	case opCrossEntropy:
		backCrossEntropy(n)
	case opCatLogProb:
		backCatLogProb(n)
	case opCatEntropy:
		backCatEntropy(n)
	case opBetaLogProb:
		backBetaLogProb(n)
	case opBetaEntropy:
		backBetaEntropy(n)
	case opGaussLogProb:
		backGaussLogProb(n)
	case opGaussEntropy:
		backGaussEntropy(n)
	case opConv1D:
		tp.backConv1D(n)
	case opLayerNorm:
		backLayerNorm(n)
	case opSpMM:
		backSpMM(n)
	case opSpMMSegMax:
		tp.backSpMMSegMax(n)
	case opEdgeMax:
		tp.backEdgeMax(n)
	default:
		panic(fmt.Sprintf("nn: unknown op %d", n.op))
	}
}
