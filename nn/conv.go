package nn

import (
	"fmt"
	"math"
	"unsafe"
)

// Conv1D convolves x of shape [N, T, Cin] over time with a kernel of size k
// and weights w of shape [k*Cin, Cout], where row kk*Cin+c of w weights input
// channel c at kernel offset kk. With same=false the convolution is 'valid'
// (output length T-k+1); with same=true the input is zero-padded by (k-1)/2
// steps before and k-1-(k-1)/2 after, so the output length is T. The result
// has shape [N, Tout, Cout]; for a bias and an activation, see
// [Tape.Conv1DAct].
//
// It is computed as one matrix product over im2col's rows, so the work is
// done by the BLAS. With same padding, an odd k and the float32 kernels,
// the rows are read in place (a step's k·Cin inputs lie next to each other
// in x, so the rows of all sequences are one matrix with row stride Cin),
// and only the rows that reach into the padding are copied; otherwise the
// rows are copied into a column buffer. The backward pass builds the
// column buffer if the forward pass did not.
func (tp *Tape[T]) Conv1D(x, w *Tensor[T], k int, same bool) *Tensor[T] {
	return tp.Conv1DAct(x, w, nil, k, same, ActIdentity)
}

// Conv1DAct is act(Conv1D(x, w, k, same) + bias), bias (nil for none) of
// length Cout added at every step. The product adds the bias and applies a
// ReLU as it stores (as [Tape.SumTerms] does), with the bits of AddBias
// and ReLU after it; other activations take a pass of their own.
func (tp *Tape[T]) Conv1DAct(x, w, bias *Tensor[T], k int, same bool, act Activation) *Tensor[T] {
	return tp.conv1D(x, w, bias, k, same, act, false)
}

// Conv1DRows is Conv1DAct with the result as rows, shape [N·Tout, Cout]:
// a step per row, for an operation that takes rows (a pooling over time
// steps as a sparse product), without a Reshape's copy.
func (tp *Tape[T]) Conv1DRows(x, w, bias *Tensor[T], k int, same bool, act Activation) *Tensor[T] {
	return tp.conv1D(x, w, bias, k, same, act, true)
}

// conv1D is Conv1DAct, its result [N·Tout, Cout] if rows.
func (tp *Tape[T]) conv1D(x, w, bias *Tensor[T], k int, same bool, act Activation, rows bool) *Tensor[T] {
	if act != ActIdentity && act != ActReLU {
		return tp.Activate(tp.conv1D(x, w, bias, k, same, ActIdentity, rows), act)
	}
	checkRank("Conv1D", x, 3)
	checkRank("Conv1D", w, 2)
	n, tin, cin := x.Shape[0], x.Shape[1], x.Shape[2]
	cout := w.Shape[1]
	if k < 1 || w.Shape[0] != k*cin {
		panic(fmt.Sprintf("nn: Conv1D: weights %v do not match kernel %d and input %v", w.Shape, k, x.Shape))
	}
	pad, tout := 0, tin-k+1
	if same {
		pad, tout = (k-1)/2, tin
	}
	if tout < 0 {
		tout = 0
	}
	kc := k * cin
	var b []T
	if bias != nil {
		if len(bias.Data) != cout {
			panic(fmt.Sprintf("nn: Conv1D: bias %v does not match %d output channels", bias.Shape, cout))
		}
		b = bias.Data
	}
	relu := act == ActReLU
	rg := x.RequiresGrad || w.RequiresGrad || bias != nil && bias.RequiresGrad
	var out *Tensor[T]
	if rows {
		out = tp.allocRaw(rg, n*tout, cout)
	} else {
		out = tp.allocRaw(rg, n, tout, cout)
	}
	var col *Tensor[T] // nil when the rows were read in place
	if inner := n*tin - 2*pad; convInPlace && same && 2*pad == k-1 && tin >= k && unsafe.Sizeof(x.Data[0]) == 4 && useSgemm(inner, cout, kc) {
		// Output row p = b·tin + t reads x[(p−pad)·cin : (p−pad+k)·cin]:
		// the rows p in [pad, n·tin − pad) are a matrix with row stride
		// cin, read in place. Those whose window crosses a sequence's end
		// (t < pad or t ≥ tin − pad) read a neighbour's steps there, so
		// they are computed again from copied, zero-padded rows, and
		// overwritten.
		tp.scratch.mulAdds += int64(inner) * int64(cout) * int64(kc)
		tp.scratch.sg.sgemmBias(false, false, inner, cout, kc, as32(x.Data), cin, as32(w.Data), cout, 0, as32(b), relu, as32(out.Data[pad*cout:]), cout)
		if pad > 0 {
			// Edge row i is step t of sequence bb: the first pad steps and
			// the last pad ones of each sequence.
			at := func(i int) (bb, t int) {
				bb, t = i/(2*pad), i%(2*pad)
				if t >= pad {
					t += tin - 2*pad
				}
				return bb, t
			}
			edge := tp.alloc(false, n*2*pad, kc) // zeros where the window is outside
			for i := range n * 2 * pad {
				bb, t := at(i)
				im2colRow(edge.Data[i*kc:(i+1)*kc], x.Data[bb*tin*cin:(bb+1)*tin*cin], t, pad, k, cin, tin)
			}
			res := tp.allocRaw(false, n*2*pad, cout)
			tp.scratch.product(n*2*pad, cout, kc, edge.Data, w.Data, b, false, relu, res.Data)
			for i := range n * 2 * pad {
				bb, t := at(i)
				copy(out.Data[(bb*tin+t)*cout:(bb*tin+t+1)*cout], res.Data[i*cout:(i+1)*cout])
			}
		}
	} else {
		col = tp.allocRaw(false, n*tout, kc) // im2col writes every element
		im2col(col.Data, x.Data, n, tin, cin, k, pad, tout)
		tp.scratch.product(n*tout, cout, kc, col.Data, w.Data, b, false, relu, out.Data)
	}
	nd := node[T]{op: opConv1D, out: out, a: x, b: w, c: bias, aux: col, i0: k, i1: pad, i2: tout}
	if relu {
		nd.f1 = 1
	}
	tp.record(nd)
	return out
}

// convInPlace lets Conv1DAct read its rows in place where it can (a
// switch for the tests, which compare both paths).
var convInPlace = true

// im2col writes the rows of a convolution's product: row b·tout + t is
// sequence b's steps [t−pad, t−pad+k) (each cin wide) of x, zeros outside
// the sequence.
func im2col[T Float](col, x []T, n, tin, cin, k, pad, tout int) {
	kc := k * cin
	for b := 0; b < n; b++ {
		xb := x[b*tin*cin : (b+1)*tin*cin]
		for t := 0; t < tout; t++ {
			row := col[(b*tout+t)*kc : (b*tout+t+1)*kc]
			if s0 := t - pad; s0 >= 0 && s0+k <= tin {
				copy(row, xb[s0*cin:(s0+k)*cin]) // inside the sequence
				continue
			}
			// Zeros where the window leaves the sequence (only these
			// rows are cleared: a clear of the whole buffer was a fifth
			// of the convolution's backward pass).
			clear(row)
			im2colRow(row, xb, t, pad, k, cin, tin)
		}
	}
}

// im2colRow copies the steps [t−pad, t−pad+k) of one sequence xb that lie
// inside it into row (which holds zeros) at their offsets: they lie next
// to each other in xb, so it is one copy.
func im2colRow[T Float](row, xb []T, t, pad, k, cin, tin int) {
	s0 := t - pad
	if lo, hi := max(s0, 0), min(s0+k, tin); hi > lo {
		copy(row[(lo-s0)*cin:], xb[lo*cin:hi*cin])
	}
}

func (tp *Tape[T]) backConv1D(n *node[T]) {
	x, w, col, g := n.a, n.b, n.aux, n.out.Grad
	nb, tin, cin := x.Shape[0], x.Shape[1], x.Shape[2]
	cout := w.Shape[1]
	k, pad, tout := n.i0, n.i1, n.i2
	kc := k * cin
	rows := nb * tout
	if col == nil { // the forward pass read its rows in place
		col = tp.allocRaw(false, rows, kc)
		im2col(col.Data, x.Data, nb, tin, cin, k, pad, tout)
	}
	if n.f1 == 1 { // a fused ReLU: the gradient of the pre-activation, in place
		reluGradInPlace(g, n.out.Data)
	}
	if n.c != nil {
		addRows(gradOf(n.c), g)
	}
	if gw := gradOf(w); gw != nil {
		tp.scratch.gemm(true, false, kc, cout, rows, 1, col.Data, kc, g, cout, 1, gw, cout)
	}
	gx := gradOf(x)
	if gx == nil {
		return
	}
	// Reuse the column buffer for dcol: the forward values are no longer needed.
	dcol := col.Data
	tp.scratch.gemm(false, true, rows, kc, cout, 1, g, cout, w.Data, cout, 0, dcol, kc)
	for b := 0; b < nb; b++ {
		for t := 0; t < tout; t++ {
			src := dcol[(b*tout+t)*kc : (b*tout+t+1)*kc]
			for kk := 0; kk < k; kk++ {
				if s := t + kk - pad; s >= 0 && s < tin {
					addTo(gx[(b*tin+s)*cin:(b*tin+s+1)*cin], src[kk*cin:(kk+1)*cin])
				}
			}
		}
	}
}

// LayerNorm normalises each row (last dimension, size D) of x to zero mean
// and unit variance, then scales by gain and shifts by bias (both of
// length D): y = (x-μ)/√(σ²+eps)·gain + bias.
func (tp *Tape[T]) LayerNorm(x, gain, bias *Tensor[T], eps float64) *Tensor[T] {
	d := x.cols()
	if len(gain.Data) != d || len(bias.Data) != d {
		panic(fmt.Sprintf("nn: LayerNorm: gain %v and bias %v do not match rows of %v", gain.Shape, bias.Shape, x.Shape))
	}
	nr := x.rows()
	out := tp.alloc(x.RequiresGrad || gain.RequiresGrad || bias.RequiresGrad, x.Shape...)
	xhat := tp.alloc(false, nr, d)
	rstd := tp.alloc(false, nr)
	for r := 0; r < nr; r++ {
		xr := x.Data[r*d : (r+1)*d]
		var mu, v float64
		for _, e := range xr {
			mu += f64(e)
		}
		mu /= float64(d)
		for _, e := range xr {
			t := f64(e) - mu
			v += t * t
		}
		v /= float64(d)
		rs := 1 / math.Sqrt(v+eps)
		rstd.Data[r] = T(rs)
		hr, or := xhat.Data[r*d:(r+1)*d], out.Data[r*d:(r+1)*d]
		for j, e := range xr {
			h := T((f64(e) - mu) * rs)
			hr[j] = h
			or[j] = h*gain.Data[j] + bias.Data[j]
		}
	}
	tp.record(node[T]{op: opLayerNorm, out: out, a: x, b: gain, c: bias, aux: xhat, aux2: rstd})
	return out
}

func backLayerNorm[T Float](n *node[T]) {
	gx, gg, gbias := gradOf(n.a), gradOf(n.b), gradOf(n.c)
	d := n.a.cols()
	g := n.out.Grad
	gain := n.b.Data
	for r := 0; r < n.a.rows(); r++ {
		gr, hr := g[r*d:(r+1)*d], n.aux.Data[r*d:(r+1)*d]
		if gg != nil {
			for j, v := range gr {
				gg[j] += v * hr[j]
			}
		}
		addTo(gbias, gr)
		if gx == nil {
			continue
		}
		// dx = rstd·(dxhat - mean(dxhat) - xhat·mean(dxhat·xhat)), dxhat = g·gain.
		var m1, m2 float64
		for j, v := range gr {
			dh := f64(v * gain[j])
			m1 += dh
			m2 += dh * f64(hr[j])
		}
		m1 /= float64(d)
		m2 /= float64(d)
		rs := f64(n.aux2.Data[r])
		dr := gx[r*d : (r+1)*d]
		for j, v := range gr {
			dr[j] += T(rs * (f64(v*gain[j]) - m1 - f64(hr[j])*m2))
		}
	}
}
