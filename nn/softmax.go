package nn

import (
	"fmt"
	"math"
)

func checkMask[T Float](op string, x *Tensor[T], mask []bool) {
	if mask != nil && len(mask) != len(x.Data) {
		panic(fmt.Sprintf("nn: %s: mask has %d entries for shape %v", op, len(mask), x.Shape))
	}
}

// logSoftmaxRow writes the masked log-softmax of x into y.
func logSoftmaxRow[T Float](x []T, mask []bool, y []T) {
	m := math.Inf(-1)
	for j, v := range x {
		if mask == nil || mask[j] {
			m = max(m, f64(v))
		}
	}
	if math.IsInf(m, -1) { // every entry masked (or -Inf): no distribution
		clear(y)
		return
	}
	var s float64
	for j, v := range x {
		if mask == nil || mask[j] {
			s += math.Exp(f64(v) - m)
		}
	}
	lse := m + math.Log(s)
	for j, v := range x {
		if mask == nil || mask[j] {
			y[j] = T(f64(v) - lse)
		} else {
			y[j] = 0
		}
	}
}

func rowMask(mask []bool, r, c int) []bool {
	if mask == nil {
		return nil
	}
	return mask[r*c : (r+1)*c]
}

// Softmax returns the softmax over the last dimension of x, with masked
// entries at probability 0.
func (tp *Tape[T]) Softmax(x *Tensor[T], mask []bool) *Tensor[T] {
	checkMask("Softmax", x, mask)
	out := tp.alloc(x.RequiresGrad, x.Shape...)
	c := x.cols()
	for r := 0; r < x.rows(); r++ {
		y := out.Data[r*c : (r+1)*c]
		mr := rowMask(mask, r, c)
		logSoftmaxRow(x.Data[r*c:(r+1)*c], mr, y)
		for j, v := range y {
			if mr == nil || mr[j] {
				y[j] = T(math.Exp(f64(v)))
			}
		}
		if mr != nil && allMasked(mr) {
			clear(y)
		}
	}
	tp.record(node[T]{op: opSoftmax, out: out, a: x, mask: mask})
	return out
}

func allMasked(m []bool) bool {
	for _, b := range m {
		if b {
			return false
		}
	}
	return true
}

func backSoftmax[T Float](n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil {
		return
	}
	c := n.a.cols()
	g, p := n.out.Grad, n.out.Data
	for r := 0; r < n.a.rows(); r++ {
		gr, pr, dr := g[r*c:(r+1)*c], p[r*c:(r+1)*c], ga[r*c:(r+1)*c]
		var dot T
		for j, v := range gr {
			dot += v * pr[j]
		}
		for j, v := range gr {
			dr[j] += pr[j] * (v - dot) // masked: p = 0
		}
	}
}

// LogSoftmax returns the log-softmax over the last dimension of x; masked
// entries are 0 (see Masks in the package documentation).
func (tp *Tape[T]) LogSoftmax(x *Tensor[T], mask []bool) *Tensor[T] {
	checkMask("LogSoftmax", x, mask)
	out := tp.alloc(x.RequiresGrad, x.Shape...)
	c := x.cols()
	for r := 0; r < x.rows(); r++ {
		logSoftmaxRow(x.Data[r*c:(r+1)*c], rowMask(mask, r, c), out.Data[r*c:(r+1)*c])
	}
	tp.record(node[T]{op: opLogSoftmax, out: out, a: x, mask: mask})
	return out
}

func backLogSoftmax[T Float](n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil {
		return
	}
	c := n.a.cols()
	g, y := n.out.Grad, n.out.Data
	for r := 0; r < n.a.rows(); r++ {
		mr := rowMask(n.mask, r, c)
		if mr != nil && allMasked(mr) {
			continue
		}
		gr, yr, dr := g[r*c:(r+1)*c], y[r*c:(r+1)*c], ga[r*c:(r+1)*c]
		var s T
		for j, v := range gr {
			if mr == nil || mr[j] {
				s += v
			}
		}
		for j, v := range gr {
			if mr == nil || mr[j] {
				dr[j] += v - T(math.Exp(f64(yr[j])))*s
			}
		}
	}
}

// CrossEntropy returns the mean over rows of -log softmax(logits)[target],
// with logits of shape [N, C], an optional mask and N integer targets. A
// target that is out of range or masked panics.
func (tp *Tape[T]) CrossEntropy(logits *Tensor[T], mask []bool, targets []int) *Tensor[T] {
	lp := tp.catLogProbs("CrossEntropy", logits, mask, targets)
	out := tp.alloc(logits.RequiresGrad, 1)
	c := logits.cols()
	var s float64
	for r, t := range targets {
		s -= f64(lp.Data[r*c+t])
	}
	if len(targets) > 0 {
		s /= float64(len(targets))
	}
	out.Data[0] = T(s)
	tp.record(node[T]{op: opCrossEntropy, out: out, a: logits, aux: lp, idx: targets, mask: mask})
	return out
}

// catLogProbs validates categorical arguments and returns the masked
// log-softmax of logits as a tape-owned buffer (no gradient).
func (tp *Tape[T]) catLogProbs(op string, logits *Tensor[T], mask []bool, targets []int) *Tensor[T] {
	checkRank(op, logits, 2)
	checkMask(op, logits, mask)
	nr, c := logits.Shape[0], logits.Shape[1]
	if targets != nil && len(targets) != nr {
		panic(fmt.Sprintf("nn: %s: %d targets for %d rows", op, len(targets), nr))
	}
	for r, t := range targets {
		if t < 0 || t >= c {
			panic(fmt.Sprintf("nn: %s: target %d of row %d out of range [0, %d)", op, t, r, c))
		}
		if mask != nil && !mask[r*c+t] {
			panic(fmt.Sprintf("nn: %s: target %d of row %d is masked", op, t, r))
		}
	}
	lp := tp.alloc(false, nr, c)
	for r := 0; r < nr; r++ {
		logSoftmaxRow(logits.Data[r*c:(r+1)*c], rowMask(mask, r, c), lp.Data[r*c:(r+1)*c])
	}
	return lp
}

func backCrossEntropy[T Float](n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil || len(n.idx) == 0 {
		return
	}
	g := n.out.Grad[0] / T(len(n.idx))
	c := n.a.cols()
	for r, t := range n.idx {
		mr := rowMask(n.mask, r, c)
		lr, dr := n.aux.Data[r*c:(r+1)*c], ga[r*c:(r+1)*c]
		for j, l := range lr {
			if mr == nil || mr[j] {
				dr[j] += g * T(math.Exp(f64(l)))
			}
		}
		dr[t] -= g
	}
}

// CategoricalLogProb returns, for each row r of logits [N, C], the
// log-probability of category actions[r] under the masked softmax; the
// result has shape [N].
func (tp *Tape[T]) CategoricalLogProb(logits *Tensor[T], mask []bool, actions []int) *Tensor[T] {
	lp := tp.catLogProbs("CategoricalLogProb", logits, mask, actions)
	out := tp.alloc(logits.RequiresGrad, len(actions))
	c := logits.cols()
	for r, t := range actions {
		out.Data[r] = lp.Data[r*c+t]
	}
	tp.record(node[T]{op: opCatLogProb, out: out, a: logits, aux: lp, idx: actions, mask: mask})
	return out
}

func backCatLogProb[T Float](n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil {
		return
	}
	c := n.a.cols()
	for r, t := range n.idx {
		g := n.out.Grad[r]
		mr := rowMask(n.mask, r, c)
		lr, dr := n.aux.Data[r*c:(r+1)*c], ga[r*c:(r+1)*c]
		for j, l := range lr {
			if mr == nil || mr[j] {
				dr[j] -= g * T(math.Exp(f64(l)))
			}
		}
		dr[t] += g
	}
}

// CategoricalEntropy returns the entropy of the masked softmax of each row
// of logits [N, C], with shape [N]. Masked categories contribute nothing.
func (tp *Tape[T]) CategoricalEntropy(logits *Tensor[T], mask []bool) *Tensor[T] {
	lp := tp.catLogProbs("CategoricalEntropy", logits, mask, nil)
	nr, c := logits.Shape[0], logits.Shape[1]
	out := tp.alloc(logits.RequiresGrad, nr)
	for r := 0; r < nr; r++ {
		var h float64
		for _, l := range lp.Data[r*c : (r+1)*c] {
			lf := f64(l)
			h -= math.Exp(lf) * lf // masked: l = 0, contributes 0
		}
		out.Data[r] = T(h)
	}
	tp.record(node[T]{op: opCatEntropy, out: out, a: logits, aux: lp, mask: mask})
	return out
}

func backCatEntropy[T Float](n *node[T]) {
	ga := gradOf(n.a)
	if ga == nil {
		return
	}
	c := n.a.cols()
	for r := 0; r < n.a.Shape[0]; r++ {
		g, h := n.out.Grad[r], n.out.Data[r]
		mr := rowMask(n.mask, r, c)
		lr, dr := n.aux.Data[r*c:(r+1)*c], ga[r*c:(r+1)*c]
		for j, l := range lr {
			if mr == nil || mr[j] {
				// dH/dz_j = -p_j (log p_j + H)
				dr[j] -= g * T(math.Exp(f64(l))) * (l + h)
			}
		}
	}
}

// MSE returns the mean of (pred-target)² over all elements; shapes must
// match. Gradients flow to both arguments if they require them.
func (tp *Tape[T]) MSE(pred, target *Tensor[T]) *Tensor[T] {
	checkSame("MSE", pred, target)
	out := tp.alloc(pred.RequiresGrad || target.RequiresGrad, 1)
	var s float64
	for i, p := range pred.Data {
		d := f64(p - target.Data[i])
		s += d * d
	}
	if len(pred.Data) > 0 {
		s /= float64(len(pred.Data))
	}
	out.Data[0] = T(s)
	tp.record(node[T]{op: opMSE, out: out, a: pred, b: target})
	return out
}

func backMSE[T Float](n *node[T]) {
	if len(n.a.Data) == 0 {
		return
	}
	g := 2 * n.out.Grad[0] / T(len(n.a.Data))
	ga, gb := gradOf(n.a), gradOf(n.b)
	for i, p := range n.a.Data {
		d := g * (p - n.b.Data[i])
		if ga != nil {
			ga[i] += d
		}
		if gb != nil {
			gb[i] -= d
		}
	}
}
