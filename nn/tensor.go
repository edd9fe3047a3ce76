package nn

import (
	"fmt"
	"math"
	"slices"
)

// Float is the element type of tensors: float32 for models, float64 for
// exact gradient checks.
type Float interface {
	~float32 | ~float64
}

// Tensor is a dense, row-major, contiguous array.
//
// Data holds the elements and Shape the extent of each dimension; their
// product equals len(Data). Grad, when non-nil, has the length of Data and
// receives gradients during [Tape.Backward]. Only tensors with RequiresGrad
// set (parameters, and tape results computed from them) get gradients.
type Tensor[T Float] struct {
	Data         []T
	Shape        []int
	Grad         []T
	RequiresGrad bool

	shapeBuf [4]int // backing store for Shape, to avoid an allocation per tensor

	// gradStale marks a tape tensor's Grad as not yet zeroed in the
	// current backward pass: gradOf zeroes it on first use, right before
	// the first accumulation, instead of in one sweep over every buffer.
	gradStale bool

	// recycled marks an intermediate tape result during
	// [Tape.BackwardLeaves]: gradRecycle while it waits for a gradient
	// buffer from the tape's free list, gradLent while it holds one.
	recycled gradState
}

// gradState is a tape result's gradient buffer's state during
// [Tape.BackwardLeaves].
type gradState uint8

const (
	gradOwn     gradState = iota // the tensor's own buffer (leaves, parameters, Backward)
	gradRecycle                  // an intermediate that has not got a buffer yet
	gradLent                     // an intermediate that holds a buffer of the free list
)

// NewTensor returns a tensor that uses data (not a copy) with the given
// shape. It panics if the shape does not match len(data).
func NewTensor[T Float](data []T, shape ...int) *Tensor[T] {
	t := &Tensor[T]{Data: data}
	t.setShape(shape)
	if n := t.Size(); n != len(data) {
		panic(fmt.Sprintf("nn: NewTensor: shape %v needs %d elements, have %d", shape, n, len(data)))
	}
	return t
}

// Resize gives t the shape, reusing its data's memory when it is large
// enough (the contents are then whatever was there) and allocating only
// when it is not: a reused input buffer of changing batch size costs no
// allocation. It returns t.
func (t *Tensor[T]) Resize(shape ...int) *Tensor[T] {
	n := shapeSize(shape)
	if cap(t.Data) < n {
		t.Data = make([]T, n)
	} else {
		t.Data = t.Data[:n]
	}
	t.setShape(shape)
	return t
}

// Zeros returns a new zero-filled tensor of the given shape.
func Zeros[T Float](shape ...int) *Tensor[T] {
	return NewTensor(make([]T, shapeSize(shape)), shape...)
}

// NewParam returns a zero-filled trainable tensor: RequiresGrad is set and
// Grad is allocated.
func NewParam[T Float](shape ...int) *Tensor[T] {
	t := Zeros[T](shape...)
	t.RequiresGrad = true
	t.Grad = make([]T, len(t.Data))
	return t
}

// Size returns the number of elements.
func (t *Tensor[T]) Size() int { return shapeSize(t.Shape) }

// ZeroGrad sets the gradient to zero.
func (t *Tensor[T]) ZeroGrad() { clear(t.Grad) }

// Item returns the only element of a one-element tensor as float64.
func (t *Tensor[T]) Item() float64 {
	if len(t.Data) != 1 {
		panic(fmt.Sprintf("nn: Item of tensor with shape %v", t.Shape))
	}
	return float64(t.Data[0])
}

func (t *Tensor[T]) setShape(shape []int) {
	if len(shape) <= len(t.shapeBuf) {
		t.Shape = t.shapeBuf[:0]
	} else {
		t.Shape = make([]int, 0, len(shape))
	}
	for _, s := range shape {
		if s < 0 {
			panic(fmt.Sprintf("nn: negative dimension %d", s)) // not shape: keeps it from escaping
		}
	}
	t.Shape = append(t.Shape, shape...)
}

// cols is the size of the last dimension (1 for a scalar); rows is the
// number of such rows. Row-wise operations (softmax, layer norm, bias) use
// this view so they work for any rank.
func (t *Tensor[T]) cols() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[len(t.Shape)-1]
}

func (t *Tensor[T]) rows() int {
	c := t.cols()
	if c == 0 {
		return 0
	}
	return len(t.Data) / c
}

// lead is the size of the first dimension and stride the number of elements
// per index of it; row-indexing operations (gather, segment) use this view.
func (t *Tensor[T]) lead() (n, stride int) {
	if len(t.Shape) == 0 {
		return 1, 1
	}
	n = t.Shape[0]
	stride = 1
	for _, s := range t.Shape[1:] {
		stride *= s
	}
	return n, stride
}

func shapeSize(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

func checkSame[T Float](op string, a, b *Tensor[T]) {
	if !slices.Equal(a.Shape, b.Shape) {
		panic(fmt.Sprintf("nn: %s: shapes %v and %v differ", op, a.Shape, b.Shape))
	}
}

func checkRank[T Float](op string, a *Tensor[T], rank int) {
	if len(a.Shape) != rank {
		panic(fmt.Sprintf("nn: %s: want rank %d, have shape %v", op, rank, a.Shape))
	}
}

// gradOf returns t's gradient buffer if t takes part in differentiation.
func gradOf[T Float](t *Tensor[T]) []T {
	if t == nil || !t.RequiresGrad {
		return nil
	}
	if t.gradStale {
		clear(t.Grad)
		t.gradStale = false
	}
	return t.Grad
}

// gradFor is gradOf for a caller that writes every element of the
// gradient: fresh reports a buffer not yet zeroed in this backward pass,
// which the caller overwrites instead of adding to (saving the zeroing).
func gradFor[T Float](t *Tensor[T]) (g []T, fresh bool) {
	if t == nil || !t.RequiresGrad {
		return nil, false
	}
	fresh = t.gradStale
	t.gradStale = false
	return t.Grad, fresh
}

// accumulate adds src to dst, or copies it when dst is fresh (see
// [gradFor]); a nil dst is skipped.
func accumulate[T Float](dst, src []T, fresh bool) {
	if fresh {
		copy(dst[:len(src)], src)
		return
	}
	addTo(dst, src)
}

// f64 is a shorthand for float64 conversion in math-heavy code.
func f64[T Float](x T) float64 { return float64(x) }

// isFinite reports whether x is neither NaN nor infinite.
func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
