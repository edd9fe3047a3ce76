package nn

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Activation selects a nonlinearity for [MLP] and [Tape.Activate].
type Activation int

// Activations.
const (
	ActIdentity Activation = iota
	ActReLU
	ActTanh
	ActSigmoid
	ActSiLU
	ActGELU
)

// Activate applies the activation a to x.
func (tp *Tape[T]) Activate(x *Tensor[T], a Activation) *Tensor[T] {
	switch a {
	case ActIdentity:
		return x
	case ActReLU:
		return tp.ReLU(x)
	case ActTanh:
		return tp.Tanh(x)
	case ActSigmoid:
		return tp.Sigmoid(x)
	case ActSiLU:
		return tp.SiLU(x)
	case ActGELU:
		return tp.GELU(x)
	}
	panic(fmt.Sprintf("nn: unknown activation %d", a))
}

// Linear is an affine layer y = x·W + b with W of shape [In, Out]; x may
// must be 2-D with In columns.
type Linear[T Float] struct {
	W, B *Tensor[T]
}

// NewLinear registers name+".weight" ([in, out], Xavier-uniform) and
// name+".bias" ([out], zero) in ps and returns the layer.
func NewLinear[T Float](ps *Params[T], name string, in, out int, rng *rand.Rand) *Linear[T] {
	l := &Linear[T]{W: ps.New(name+".weight", in, out), B: ps.New(name+".bias", out)}
	XavierUniform(l.W, in, out, 1, rng)
	return l
}

// Forward returns x·W + b for x of shape [N, In].
func (l *Linear[T]) Forward(tp *Tape[T], x *Tensor[T]) *Tensor[T] {
	return tp.Affine(x, l.W, l.B)
}

// MLP is a stack of Linear layers with an activation between them (none
// after the last).
type MLP[T Float] struct {
	Layers []*Linear[T]
	Act    Activation
}

// NewMLP builds an MLP with layer widths sizes (input first, output last),
// registering its layers as name+".0", name+".1", ... in ps.
func NewMLP[T Float](ps *Params[T], name string, sizes []int, act Activation, rng *rand.Rand) *MLP[T] {
	if len(sizes) < 2 {
		panic(fmt.Sprintf("nn: NewMLP: need at least two sizes, have %v", sizes))
	}
	m := &MLP[T]{Act: act}
	for i := 0; i+1 < len(sizes); i++ {
		m.Layers = append(m.Layers, NewLinear(ps, name+"."+strconv.Itoa(i), sizes[i], sizes[i+1], rng))
	}
	return m
}

// Forward applies the MLP to x of shape [N, sizes[0]].
func (m *MLP[T]) Forward(tp *Tape[T], x *Tensor[T]) *Tensor[T] {
	for i, l := range m.Layers {
		x = l.Forward(tp, x)
		if i+1 < len(m.Layers) {
			x = tp.Activate(x, m.Act)
		}
	}
	return x
}

// LayerNorm is a layer-normalisation layer with learned gain and bias.
type LayerNorm[T Float] struct {
	Gain, Bias *Tensor[T]
	Eps        float64
}

// NewLayerNorm registers name+".gain" (ones) and name+".bias" (zeros), both
// of length dim, and returns the layer with Eps = 1e-5.
func NewLayerNorm[T Float](ps *Params[T], name string, dim int) *LayerNorm[T] {
	l := &LayerNorm[T]{Gain: ps.New(name+".gain", dim), Bias: ps.New(name+".bias", dim), Eps: 1e-5}
	for i := range l.Gain.Data {
		l.Gain.Data[i] = 1
	}
	return l
}

// Forward normalises the last dimension of x.
func (l *LayerNorm[T]) Forward(tp *Tape[T], x *Tensor[T]) *Tensor[T] {
	return tp.LayerNorm(x, l.Gain, l.Bias, l.Eps)
}
