package gnn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tegrl/tegrl/nn"
)

// DefaultTau is the time-decay rate of the temporal pooling, per step.
const DefaultTau = 0.1

// TemporalKernel is the temporal encoder's convolution width in steps.
const TemporalKernel = 3

// Temporal encodes each machine's load history [steps × channels] into one
// row: a 1-D convolution over time (kernel 3, zero-padded so that every
// step has an output, bias, activation), then a weighted mean over time
// with weights ∝ exp(−τ·Δt), Δt the number of steps before now (0 for
// the last step), normalised to sum to 1. Recent load counts most; with
// τ = 0.1 the oldest of 12 steps still weighs a third of the newest.
type Temporal[T nn.Float] struct {
	Kernel *nn.Tensor[T] // [TemporalKernel·channels, out], see nn.Tape.Conv1D
	Bias   *nn.Tensor[T] // [out]
	Act    nn.Activation
	Tau    float64

	// The pooling is an SpMM whose sparse matrix (one row per machine,
	// one weight per step) is cached for the last shape seen.
	nodes, steps int
	ptr, idx     []int
	w            []T
}

// NewTemporal registers name+".kernel" (Kaiming-uniform) and name+".bias"
// (zero) in ps and returns a temporal encoder from channels-wide history
// steps to out-wide rows.
func NewTemporal[T nn.Float](ps *nn.Params[T], name string, channels, out int, tau float64, act nn.Activation, rng *rand.Rand) *Temporal[T] {
	l := &Temporal[T]{
		Kernel: ps.New(name+".kernel", TemporalKernel*channels, out),
		Bias:   ps.New(name+".bias", out),
		Act:    act,
		Tau:    tau,
	}
	nn.KaimingUniform(l.Kernel, TemporalKernel*channels, rng)
	return l
}

// DecayWeights returns the pooling weights of a steps-long history, oldest
// first: w_t = exp(−τ·(steps−1−t)) / Σ_s exp(−τ·(steps−1−s)).
func DecayWeights(steps int, tau float64) []float64 {
	w := make([]float64, steps)
	var s float64
	for t := range w {
		w[t] = math.Exp(-tau * float64(steps-1-t))
		s += w[t]
	}
	for t := range w {
		w[t] /= s
	}
	return w
}

// Forward encodes h of shape [nodes, steps, channels] into [nodes, out].
func (l *Temporal[T]) Forward(tp *nn.Tape[T], h *nn.Tensor[T]) *nn.Tensor[T] {
	if len(h.Shape) != 3 {
		panic(fmt.Sprintf("gnn: Temporal: history must be [nodes, steps, channels], have %v", h.Shape))
	}
	n, steps := h.Shape[0], h.Shape[1]
	y := tp.Conv1DRows(h, l.Kernel, l.Bias, TemporalKernel, true, l.Act) // [n·steps, out]
	l.pooling(n, steps)
	return tp.SpMM(l.ptr, l.idx, l.w, y)
}

// pooling sizes the cached pooling matrix: row i averages rows
// i·steps … i·steps+steps−1 of the convolution output with DecayWeights.
func (l *Temporal[T]) pooling(n, steps int) {
	if n == l.nodes && steps == l.steps && l.ptr != nil {
		return
	}
	dw := DecayWeights(steps, l.Tau)
	l.ptr, l.idx, l.w = grow(l.ptr, n+1), grow(l.idx, n*steps), grow(l.w, n*steps)
	for i := 0; i <= n; i++ {
		l.ptr[i] = i * steps
	}
	for k := range l.idx {
		l.idx[k] = k
		l.w[k] = T(dw[k%steps])
	}
	l.nodes, l.steps = n, steps
}
