package nn

import (
	"math"
	"unsafe"
)

// Adam implements Adam (Kingma & Ba) and, with WeightDecay > 0, AdamW
// (decoupled weight decay, Loshchilov & Hutter): each step first shrinks
// every parameter by LR·WeightDecay, then applies the Adam update. Its
// moment buffers are allocated once, so Step does not allocate.
type Adam[T Float] struct {
	LR           float64 // learning rate; set it each step from a [Schedule]
	Beta1, Beta2 float64
	Eps          float64
	WeightDecay  float64

	params *Params[T]
	m, v   [][]T
	steps  int
}

// NewAdam returns Adam over ps with the usual defaults (β1 = 0.9,
// β2 = 0.999, ε = 1e-8) and no weight decay.
func NewAdam[T Float](ps *Params[T], lr float64) *Adam[T] {
	o := &Adam[T]{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, params: ps}
	for _, t := range ps.list {
		o.m = append(o.m, make([]T, len(t.Data)))
		o.v = append(o.v, make([]T, len(t.Data)))
	}
	return o
}

// NewAdamW returns [NewAdam] with decoupled weight decay wd.
func NewAdamW[T Float](ps *Params[T], lr, wd float64) *Adam[T] {
	o := NewAdam(ps, lr)
	o.WeightDecay = wd
	return o
}

// Steps returns the number of steps taken.
func (o *Adam[T]) Steps() int { return o.steps }

// State returns the first and second moment buffers, one per parameter in
// registration order, and the step count: what a checkpoint must keep for
// a resumed run to continue exactly. The buffers are the optimiser's own.
func (o *Adam[T]) State() (m, v [][]T, steps int) { return o.m, o.v, o.steps }

// SetSteps sets the step count (the bias corrections depend on it) when a
// checkpoint is restored into the buffers State returned.
func (o *Adam[T]) SetSteps(n int) { o.steps = n }

// Step updates every parameter from its gradient. Parameters registered
// after the optimiser was created are not updated.
func (o *Adam[T]) Step() {
	o.steps++
	bc1 := 1 - math.Pow(o.Beta1, float64(o.steps))
	bc2 := 1 - math.Pow(o.Beta2, float64(o.steps))
	// p -= lr·m̂/(√v̂+ε) rewritten as p -= a·m/(√v+ε') with the bias
	// corrections folded into the scalars a and ε'.
	a := T(o.LR * math.Sqrt(bc2) / bc1)
	eps := o.Eps * math.Sqrt(bc2)
	b1, b2 := T(o.Beta1), T(o.Beta2)
	c1, c2 := 1-b1, 1-b2
	decay := T(1 - o.LR*o.WeightDecay)
	wd := o.WeightDecay != 0
	for k, m := range o.m {
		p := o.params.list[k]
		v := o.v[k]
		d, g := p.Data[:len(m)], p.Grad[:len(m)]
		v = v[:len(m)]
		i := 0
		if unsafe.Sizeof(b1) == 4 && haveAVX512 && len(m) >= 16 {
			// The loop below, 16 elements at a time, with its bits.
			i = len(m) &^ 15
			adamZ(&as32(d)[0], &as32(m)[0], &as32(v)[0], &as32(g)[0], i,
				float32(b1), float32(c1), float32(b2), float32(c2), float32(a), float32(decay), eps, wd)
		}
		// The conversions round each product, so that no build (GOAMD64=v3
		// fuses x·y + z otherwise) gives other bits than adamZ.
		for ; i < len(m); i++ {
			gi := g[i]
			mi := T(b1*m[i]) + T(c1*gi)
			vi := T(b2*v[i]) + T(T(c2*gi)*gi)
			m[i], v[i] = mi, vi
			x := d[i]
			if wd {
				x = T(x * decay)
			}
			d[i] = x - T(a*mi)/T(math.Sqrt(f64(vi))+eps)
		}
	}
}

// Schedule maps a step number (from 0) to a learning rate.
type Schedule func(step int) float64

// ConstantLR returns a schedule that is always lr.
func ConstantLR(lr float64) Schedule { return func(int) float64 { return lr } }

// LinearLR anneals linearly from start to end over steps, then stays at end.
func LinearLR(start, end float64, steps int) Schedule {
	return func(s int) float64 {
		if s >= steps {
			return end
		}
		return start + (end-start)*float64(s)/float64(steps)
	}
}

// CosineLR follows half a cosine from start down to end over steps, then
// stays at end.
func CosineLR(start, end float64, steps int) Schedule {
	return func(s int) float64 {
		if s >= steps {
			return end
		}
		return end + (start-end)*0.5*(1+math.Cos(math.Pi*float64(s)/float64(steps)))
	}
}
