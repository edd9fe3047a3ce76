package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Params is a registry of named trainable tensors. It is what optimisers
// update and what safetensors files store; names are unique and keep their
// registration order, so iteration (and the bytes written) is deterministic.
type Params[T Float] struct {
	names  []string
	list   []*Tensor[T]
	byName map[string]int
}

// NewParams returns an empty registry.
func NewParams[T Float]() *Params[T] { return &Params[T]{byName: map[string]int{}} }

// Add registers t under name, marks it trainable and gives it a gradient
// buffer. It panics if the name is taken or empty: names are fixed by code.
func (p *Params[T]) Add(name string, t *Tensor[T]) *Tensor[T] {
	if name == "" || name == metadataKey {
		panic(fmt.Sprintf("nn: Params.Add: invalid name %q", name))
	}
	if _, ok := p.byName[name]; ok {
		panic(fmt.Sprintf("nn: Params.Add: duplicate name %q", name))
	}
	t.RequiresGrad = true
	if len(t.Grad) != len(t.Data) {
		t.Grad = make([]T, len(t.Data))
	}
	p.byName[name] = len(p.list)
	p.names = append(p.names, name)
	p.list = append(p.list, t)
	return t
}

// New creates a zero tensor of the given shape and registers it under name.
func (p *Params[T]) New(name string, shape ...int) *Tensor[T] {
	return p.Add(name, Zeros[T](shape...))
}

// Get returns the tensor registered under name, or nil.
func (p *Params[T]) Get(name string) *Tensor[T] {
	i, ok := p.byName[name]
	if !ok {
		return nil
	}
	return p.list[i]
}

// Len returns the number of registered tensors.
func (p *Params[T]) Len() int { return len(p.list) }

// Name returns the name of the i-th registered tensor.
func (p *Params[T]) Name(i int) string { return p.names[i] }

// At returns the i-th registered tensor.
func (p *Params[T]) At(i int) *Tensor[T] { return p.list[i] }

// Count returns the total number of scalar parameters.
func (p *Params[T]) Count() int {
	n := 0
	for _, t := range p.list {
		n += len(t.Data)
	}
	return n
}

// ZeroGrad sets all gradients to zero; call it before each backward pass.
func (p *Params[T]) ZeroGrad() {
	for _, t := range p.list {
		clear(t.Grad)
	}
}

// GradNorm returns the Euclidean norm of all gradients taken together.
func (p *Params[T]) GradNorm() float64 {
	var s float64
	for _, t := range p.list {
		for _, g := range t.Grad {
			s += f64(g) * f64(g)
		}
	}
	return math.Sqrt(s)
}

// ClipGradNorm scales all gradients together so that their global norm is
// at most maxNorm, and returns the norm before clipping. A non-finite norm
// is returned without touching the gradients so the caller can skip the step.
func (p *Params[T]) ClipGradNorm(maxNorm float64) float64 {
	n := p.GradNorm()
	if !isFinite(n) || n <= maxNorm {
		return n
	}
	s := T(maxNorm / (n + 1e-12))
	for _, t := range p.list {
		for i := range t.Grad {
			t.Grad[i] *= s
		}
	}
	return n
}

// Initialisers fill a tensor in place from an explicit generator, so the
// same seed gives the same bytes.

// XavierUniform fills t from U(-a, a) with a = gain·√(6/(fanIn+fanOut))
// (Glorot & Bengio), suited to tanh and sigmoid layers.
func XavierUniform[T Float](t *Tensor[T], fanIn, fanOut int, gain float64, rng *rand.Rand) {
	a := gain * math.Sqrt(6/float64(fanIn+fanOut))
	for i := range t.Data {
		t.Data[i] = T(a * (2*rng.Float64() - 1))
	}
}

// KaimingUniform fills t from U(-a, a) with a = √(6/fanIn) (He et al.),
// suited to ReLU-like layers.
func KaimingUniform[T Float](t *Tensor[T], fanIn int, rng *rand.Rand) {
	a := math.Sqrt(6 / float64(fanIn))
	for i := range t.Data {
		t.Data[i] = T(a * (2*rng.Float64() - 1))
	}
}

// KaimingNormal fills t from N(0, 2/fanIn) (He et al.).
func KaimingNormal[T Float](t *Tensor[T], fanIn int, rng *rand.Rand) {
	s := math.Sqrt(2 / float64(fanIn))
	for i := range t.Data {
		t.Data[i] = T(s * rng.NormFloat64())
	}
}

// Orthogonal fills a 2-D tensor with a (semi-)orthogonal matrix scaled by
// gain: rows are orthonormal if there are fewer rows than columns, columns
// otherwise. It is the usual initialiser for policy and value heads in PPO.
func Orthogonal[T Float](t *Tensor[T], gain float64, rng *rand.Rand) {
	checkRank("Orthogonal", t, 2)
	r, c := t.Shape[0], t.Shape[1]
	// Orthonormalise the shorter side's vectors of a Gaussian matrix with
	// modified Gram-Schmidt: vectors are rows of m (n vectors of length l).
	n, l := r, c
	if r > c {
		n, l = c, r
	}
	m := make([]float64, n*l)
	for i := range m {
		m[i] = rng.NormFloat64()
	}
	for i := 0; i < n; i++ {
		vi := m[i*l : (i+1)*l]
		for j := 0; j < i; j++ {
			vj := m[j*l : (j+1)*l]
			var d float64
			for k := range vi {
				d += vi[k] * vj[k]
			}
			for k := range vi {
				vi[k] -= d * vj[k]
			}
		}
		var s float64
		for _, v := range vi {
			s += v * v
		}
		s = 1 / math.Sqrt(s)
		for k := range vi {
			vi[k] *= s
		}
	}
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			v := m[i*c+j] // rows are the vectors
			if r > c {
				v = m[j*r+i] // columns are the vectors
			}
			t.Data[i*c+j] = T(gain * v)
		}
	}
}
