package nn

import (
	"fmt"
	"math"
)

const halfLog2Pi = 0.9189385332046727 // log(2π)/2

// BetaLogProb returns the elementwise log-density of x under Beta(alpha,
// beta); the three tensors have the same shape, alpha, beta > 0 and
// 0 < x < 1. Gradients flow to all three.
func (tp *Tape[T]) BetaLogProb(alpha, beta, x *Tensor[T]) *Tensor[T] {
	checkSame("BetaLogProb", alpha, beta)
	checkSame("BetaLogProb", alpha, x)
	out := tp.alloc(alpha.RequiresGrad || beta.RequiresGrad || x.RequiresGrad, x.Shape...)
	for i := range out.Data {
		a, b, v := f64(alpha.Data[i]), f64(beta.Data[i]), f64(x.Data[i])
		lbeta := Lgamma(a) + Lgamma(b) - Lgamma(a+b)
		out.Data[i] = T((a-1)*math.Log(v) + (b-1)*math.Log1p(-v) - lbeta)
	}
	tp.record(node[T]{op: opBetaLogProb, out: out, a: alpha, b: beta, c: x})
	return out
}

func backBetaLogProb[T Float](n *node[T]) {
	ga, gb, gx := gradOf(n.a), gradOf(n.b), gradOf(n.c)
	for i, g := range n.out.Grad {
		a, b, v := f64(n.a.Data[i]), f64(n.b.Data[i]), f64(n.c.Data[i])
		gf := f64(g)
		dab := Digamma(a + b)
		if ga != nil {
			ga[i] += T(gf * (math.Log(v) - Digamma(a) + dab))
		}
		if gb != nil {
			gb[i] += T(gf * (math.Log1p(-v) - Digamma(b) + dab))
		}
		if gx != nil {
			gx[i] += T(gf * ((a-1)/v - (b-1)/(1-v)))
		}
	}
}

// BetaEntropy returns the elementwise entropy of Beta(alpha, beta).
func (tp *Tape[T]) BetaEntropy(alpha, beta *Tensor[T]) *Tensor[T] {
	checkSame("BetaEntropy", alpha, beta)
	out := tp.alloc(alpha.RequiresGrad || beta.RequiresGrad, alpha.Shape...)
	for i := range out.Data {
		a, b := f64(alpha.Data[i]), f64(beta.Data[i])
		lbeta := Lgamma(a) + Lgamma(b) - Lgamma(a+b)
		out.Data[i] = T(lbeta - (a-1)*Digamma(a) - (b-1)*Digamma(b) + (a+b-2)*Digamma(a+b))
	}
	tp.record(node[T]{op: opBetaEntropy, out: out, a: alpha, b: beta})
	return out
}

func backBetaEntropy[T Float](n *node[T]) {
	ga, gb := gradOf(n.a), gradOf(n.b)
	for i, g := range n.out.Grad {
		a, b := f64(n.a.Data[i]), f64(n.b.Data[i])
		gf := f64(g)
		t := (a + b - 2) * Trigamma(a+b)
		if ga != nil {
			ga[i] += T(gf * (t - (a-1)*Trigamma(a)))
		}
		if gb != nil {
			gb[i] += T(gf * (t - (b-1)*Trigamma(b)))
		}
	}
}

// GaussianLogProb returns the elementwise log-density of x under a normal
// distribution with the given mean and log standard deviation. mean and x
// have the same shape; logStd has that shape too or is one vector shared by
// all rows (length = last dimension), as for a state-independent std.
func (tp *Tape[T]) GaussianLogProb(mean, logStd, x *Tensor[T]) *Tensor[T] {
	checkSame("GaussianLogProb", mean, x)
	checkStd("GaussianLogProb", mean, logStd)
	out := tp.alloc(mean.RequiresGrad || logStd.RequiresGrad || x.RequiresGrad, x.Shape...)
	ns := len(logStd.Data)
	for i := range out.Data {
		ls := f64(logStd.Data[i%ns])
		z := (f64(x.Data[i]) - f64(mean.Data[i])) * math.Exp(-ls)
		out.Data[i] = T(-0.5*z*z - ls - halfLog2Pi)
	}
	tp.record(node[T]{op: opGaussLogProb, out: out, a: mean, b: logStd, c: x})
	return out
}

func checkStd[T Float](op string, mean, logStd *Tensor[T]) {
	if len(logStd.Data) != len(mean.Data) && (len(logStd.Data) != mean.cols() || len(logStd.Data) == 0) {
		panic(fmt.Sprintf("nn: %s: log-std shape %v does not fit %v", op, logStd.Shape, mean.Shape))
	}
}

func backGaussLogProb[T Float](n *node[T]) {
	gm, gs, gx := gradOf(n.a), gradOf(n.b), gradOf(n.c)
	ns := len(n.b.Data)
	for i, g := range n.out.Grad {
		ls := f64(n.b.Data[i%ns])
		inv := math.Exp(-ls)
		z := (f64(n.c.Data[i]) - f64(n.a.Data[i])) * inv
		gf := f64(g)
		if gm != nil {
			gm[i] += T(gf * z * inv)
		}
		if gx != nil {
			gx[i] -= T(gf * z * inv)
		}
		if gs != nil {
			gs[i%ns] += T(gf * (z*z - 1))
		}
	}
}

// GaussianEntropy returns the elementwise entropy of a normal distribution
// with the given log standard deviation: 1/2 + log(2π)/2 + logStd.
func (tp *Tape[T]) GaussianEntropy(logStd *Tensor[T]) *Tensor[T] {
	out := tp.alloc(logStd.RequiresGrad, logStd.Shape...)
	for i, v := range logStd.Data {
		out.Data[i] = T(0.5 + halfLog2Pi + f64(v))
	}
	tp.record(node[T]{op: opGaussEntropy, out: out, a: logStd})
	return out
}

func backGaussEntropy[T Float](n *node[T]) {
	addTo(gradOf(n.a), n.out.Grad)
}
