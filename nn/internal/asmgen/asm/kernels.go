package asm

import "fmt"

// kernels writes the file, kernel by kernel in its order.
func kernels(e *emitter) {
	e.t(`//go:build amd64 && !purego

#include "textflag.h"

// func sgemmKernel6x16(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool)
//
// c[0:6, 0:16] (row stride ldc) = Σ_p a[r*lda+p*step]·b[p*16+j] + add[r*ldadd+j]
// (nothing added where add is nil; the add is after the sum, so it can be
// c itself, ldadd = ldc, or one bias row for all, ldadd = 0), then, if
// relu, max(·, 0) with Go's semantics (RELU below):
// a is six rows of A read in place (row stride lda, step between
// consecutive elements of a row: 1 for a row-major A, the leading
// dimension for a transposed one, whose six rows are then six adjacent
// columns), b a packed 16-column panel of B, k deep. Y0-Y11 hold the 6×16
// tile, Y12-Y13 a row of b, Y14-Y15 the broadcast elements of a. k must
// be at least 1.
TEXT ·sgemmKernel6x16(SB), NOSPLIT, $0-73
`)
	gemmArgs(e, 6)
	cArgs(e, false)
	avx2Gemm().emit(e)

	e.t(`
// The kernels' ReLU, x → max(x, 0) as Go's max computes it, is VMAXPS x,
// zero, x (Intel's src1 = zero, src2 = x: zero where 0 > x, else x, so a
// NaN x stays itself) then x + 0, which turns −0 into +0 and leaves every
// other value as it is.

// func axpyAVX(y *float32, a float32, x *float32, n int)
//
// y[0:n] += a·x[0:n] for n a multiple of 8.
TEXT ·axpyAVX(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	VBROADCASTSS a+8(FP), Y0
`)
	e.args("x+16 SI", "n+24 CX")
	stream(e, "loop32", "loop8", "done", []string{"SI", "DI"}, func(n int, a addr) {
		e.ld2("VMOVUPS", n, a, "(SI)", ys(1))
		for j := range n {
			e.i("VFMADD213PS", a(32*j, "(DI)"), "Y0", y(1+j))
		}
		e.st2("VMOVUPS", n, a, ys(1), "(DI)")
	})
	e.t(`
// GOMAX computes, in Y2, max(Y0, Y1) as Go's built-in max does: the larger
// value, +0 for a +0 and a −0, and NaN when either is NaN. VMAXPS alone
// returns its second operand on ties and when either is NaN, so ties take
// Y0 AND Y1 (the same value, or +0 for mixed zeros) and a NaN in Y0 is put
// back. Clobbers Y3-Y5.
#define GOMAX \
	VMAXPS Y1, Y0, Y2; \
	VCMPPS $0, Y1, Y0, Y3; \
	VANDPS Y1, Y0, Y4; \
	VBLENDVPS Y3, Y4, Y2, Y2; \
	VCMPPS $3, Y0, Y0, Y5; \
	VBLENDVPS Y5, Y0, Y2, Y2

// func maxAVX(y, x *float32, n int)
//
// y[i] = max(y[i], x[i]) for n a multiple of 8.
TEXT ·maxAVX(SB), NOSPLIT, $0-24
`)
	e.args("y+0 DI", "x+8 SI", "n+16 CX")
	e.lanes8("maxloop", "maxdone", `	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	GOMAX
	VMOVUPS Y2, (DI)
`, "SI", "DI")
	e.t(`
// func reluAVX(y, x *float32, n int)
//
// y[i] = max(x[i], 0) for n a multiple of 8.
TEXT ·reluAVX(SB), NOSPLIT, $0-24
`)
	e.args("y+0 DI", "x+8 SI", "n+16 CX")
	e.t(`	VXORPS Y1, Y1, Y1
`)
	e.lanes8("reluloop", "reludone", `	VMOVUPS (SI), Y0
	GOMAX
	VMOVUPS Y2, (DI)
`, "SI", "DI")
	e.t(`
// func reluGradAVX(dst, x, grad *float32, n int)
//
// dst[i] = grad[i] where x[i]'s bits, read as an int32, are positive (x > 0),
// else 0, as reluGrad32, for n a multiple of 8.
TEXT ·reluGradAVX(SB), NOSPLIT, $0-32
`)
	e.args("dst+0 DI", "x+8 SI", "grad+16 DX", "n+24 CX")
	e.t(`	VPXOR Y2, Y2, Y2
`)
	e.lanes8("rgloop", "rgdone", `	VMOVDQU (SI), Y0
	VPCMPGTD Y2, Y0, Y1 // x > 0 as int32
	VPAND (DX), Y1, Y1
	VMOVDQU Y1, (DI)
`, "SI", "DX", "DI")
	e.t(`
// func maxArgAVX(out *float32, arg *int32, row *float32, n int, e int32)
//
// For n a multiple of 8: arg[j] = e where row[j] > out[j] (ordered, so a
// NaN never wins), then out[j] = max(out[j], row[j]) as maxAVX.
TEXT ·maxArgAVX(SB), NOSPLIT, $0-36
`)
	e.args("out+0 DI", "arg+8 R9", "row+16 SI", "n+24 CX")
	e.t(`	MOVL e+32(FP), AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8
`)
	e.lanes8("maloop", "madone", `	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	VCMPPS $30, Y0, Y1, Y6 // row > out (GT_OQ)
	VMOVDQU (R9), Y7
	VBLENDVPS Y6, Y8, Y7, Y7
	VMOVDQU Y7, (R9)
	GOMAX
	VMOVUPS Y2, (DI)
`, "DI", "SI", "R9")
	e.t(`
// func routeMaskAVX(mask *float32, arg *int32, e int32, out *float32, n int) int
//
// For n a multiple of 8: mask[j] = all ones where arg[j] == e and out[j]
// is not NaN, else 0; returns how many lanes are set.
TEXT ·routeMaskAVX(SB), NOSPLIT, $0-48
`)
	e.args("mask+0 DI", "arg+8 SI")
	e.t(`	MOVL e+16(FP), AX
	VMOVD AX, X8
	VPBROADCASTD X8, Y8
`)
	e.args("out+24 DX", "n+32 CX")
	e.t(`	XORQ AX, AX
`)
	e.loop("rmloop", 8, "rmdone")
	e.t(`	VPCMPEQD (SI), Y8, Y1
	VMOVUPS (DX), Y0
	VCMPPS $7, Y0, Y0, Y2 // ordered: not NaN
	VANDPS Y2, Y1, Y1
	VMOVUPS Y1, (DI)
	VMOVMSKPS Y1, BX
	POPCNTL BX, BX
	ADDQ BX, AX
`)
	e.next("rmloop", 8, 32, "DI", "SI", "DX")
	e.t(`rmdone:
	VZEROUPPER
	MOVQ AX, ret+40(FP)
	RET

// func routeAVX(y *float32, w float32, grad *float32, mask *float32, n int)
//
// For n a multiple of 8: y[j] += w·grad[j] (a product rounded, then a sum
// rounded, as Go computes it) where mask[j] is set; other lanes keep y[j].
TEXT ·routeAVX(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	VBROADCASTSS w+8(FP), Y8
`)
	e.args("grad+16 SI", "mask+24 DX", "n+32 CX")
	e.lanes8("rtloop", "rtdone", `	VMOVUPS (DI), Y0
	VMULPS (SI), Y8, Y1
	VADDPS Y1, Y0, Y1
	VMOVUPS (DX), Y2
	VBLENDVPS Y2, Y1, Y0, Y0
	VMOVUPS Y0, (DI)
`, "DI", "SI", "DX")
	e.t(`
// func spmmRowAVX(dst, x *float32, idx *int, w *float32, n, stride, cols int)
//
// dst[j] = Σ_{e<n} w[e]·x[idx[e]*stride+j] for j < cols, a multiple of 8:
// each term a fused multiply-add into a sum that starts at +0, edges in
// order, so the sums are axpyAVX's into a cleared row, bit for bit. A nil
// w means weights 1. Sixty-four columns live in Y0-Y7 while the edges
// stream past, so a destination row is written once, not once per edge.
TEXT ·spmmRowAVX(SB), NOSPLIT, $0-56
`)
	e.args("dst+0 DI", "x+8 SI")
	sparseArgs(e)
	// Sixty-four columns in Y0-Y7 while they last, then eight in Y0.
	sparseAVX(e, "sr", "s", "SI", func(n int) {
		e.zero("VXORPS", rng("Y", 0, n)...)
	}, func(n int) {
		for j := range n {
			e.i("VFMADD231PS", at(32*j, "(AX)"), "Y8", y(j))
		}
	}, func(n int) {
		e.st("VMOVUPS", n, 32, ys(0), "(DI)")
	})
	e.t(`
// func spmmScatterAVX(y, grad *float32, idx *int, w *float32, n, stride, cols int)
//
// For e < n in order: y[idx[e]*stride+j] += w[e]·grad[j] for j < cols, a
// multiple of 8, each a fused multiply-add as axpyAVX's (a nil w means
// weights 1). Sixty-four columns of grad stay in Y0-Y7 across the edges.
TEXT ·spmmScatterAVX(SB), NOSPLIT, $0-56
`)
	e.args("y+0 DI", "grad+8 SI")
	sparseArgs(e)
	sparseAVX(e, "sc", "n", "DI", func(n int) {
		e.ld("VMOVUPS", n, 32, "(SI)", ys(0))
	}, func(n int) {
		// Four columns at a time through Y9-Y12: y += w·grad, fused.
		for h := 0; h < n; h += 4 {
			m := min(n, 4)
			for j := range m {
				e.i("VMOVAPS", y(h+j), y(9+j))
			}
			for j := range m {
				e.i("VFMADD213PS", at(32*(h+j), "(AX)"), "Y8", y(9+j))
			}
			for j := range m {
				e.i("VMOVUPS", y(9+j), at(32*(h+j), "(AX)"))
			}
		}
	}, func(int) {})
	e.t(`
// func packRows16AVX(dst, src *float32, ld, k int)
//
// dst[p*16+j] = src[p*ld+j] for p < k, j < 16: a 16-column panel of an
// untransposed B, two AVX moves per row.
TEXT ·packRows16AVX(SB), NOSPLIT, $0-32
`)
	e.args("dst+0 DI", "src+8 SI", "ld+16 R8")
	e.t(`	SHLQ $2, R8
	MOVQ k+24(FP), CX
`)
	e.loop("pr16", 2, "pr16one")
	for r := range 2 { // two rows of b per round
		for p := range 2 {
			e.i("VMOVUPS", at(32*p, "(SI)"+[]string{"", "(R8*1)"}[r]), y(2*r+p))
		}
	}
	e.st("VMOVUPS", 4, 32, ys(0), "(DI)")
	e.t(`	LEAQ (SI)(R8*2), SI
`)
	e.next("pr16", 2, 128, "DI")
	e.t(`pr16one:
	TESTQ CX, CX
	JZ pr16done
`)
	e.ld("VMOVUPS", 2, 32, "(SI)", ys(0))
	e.st("VMOVUPS", 2, 32, ys(0), "(DI)")
	e.ret("pr16done")
	e.t(`
// func sgemmKernel6x32Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool)
//
// sgemmKernel6x16 twice as wide, in AVX-512 registers: c[0:6, 0:32] =
// Σ_p a[r*lda+p*step]·b[...] + add[r*ldadd+j], where b holds two packed
// 16-column panels back to back (k rows of 16 each, as packB writes them).
// Each element is the same chain of fused multiply-adds from zero, in the
// same order, then the same add, so the bits equal those of two
// sgemmKernel6x16 calls. Z0-Z11 hold the 6×32 tile, Z12-Z13 a row of the
// two panels, Z14-Z15 the broadcast elements of a. k must be at least 1.
TEXT ·sgemmKernel6x32Z(SB), NOSPLIT, $0-88
`)
	zKernel(e, 6, "6", zGemm(6, ""))
	e.t(`
// func sgemmKernel12x32Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool)
//
// sgemmKernel6x32Z for twelve rows: Z0-Z23 hold the 12×32 tile, Z24-Z25 a
// row of the two panels, Z26-Z27 the broadcast elements of a. Same bits.
TEXT ·sgemmKernel12x32Z(SB), NOSPLIT, $0-88
`)
	zKernel(e, 12, "12", zGemm(12, "12"))

	e.t(`
// func addAVX(dst, a, b *float32, n int)
//
// dst[i] = a[i] + b[i] for n a multiple of 8 (dst may be a or b).
TEXT ·addAVX(SB), NOSPLIT, $0-32
`)
	e.args("dst+0 DI", "a+8 SI", "b+16 DX", "n+24 CX")
	sums(e, "add", "(DX)")
	e.t(`
// func addPairAVX(dst, b, c *float32, n int)
//
// dst[i] += b[i] + c[i], the pair summed first, for n a multiple of 8.
TEXT ·addPairAVX(SB), NOSPLIT, $0-32
`)
	e.args("dst+0 DI", "b+8 SI", "c+16 DX", "n+24 CX")
	sums(e, "pair", "(DX)", "(DI)")
	e.t(`
// func addReluAVX(dst, src *float32, n int)
//
// dst[i] = max(dst[i] + src[i], 0) (Go's max) for n a multiple of 8.
TEXT ·addReluAVX(SB), NOSPLIT, $0-24
`)
	e.args("dst+0 DI", "src+8 SI", "n+16 CX")
	e.t(`	VXORPS Y15, Y15, Y15
`)
	stream(e, "ar32", "ar8", "ardone", []string{"SI", "DI"}, func(n int, a addr) {
		e.ld2("VMOVUPS", n, a, "(DI)", ys(0))
		e.add(n, a, "(SI)")
		for j := range n {
			e.i("VMAXPS", y(j), "Y15", y(j))
		}
		for j := range n {
			e.i("VADDPS", "Y15", y(j), y(j))
		}
		e.st2("VMOVUPS", n, a, ys(0), "(DI)")
	})
	e.t(`
// func maxArgZ(out *float32, arg *int32, row *float32, n int, e int32)
//
// maxArgAVX in AVX-512, sixteen lanes at a time, for n a multiple of 16:
// arg[j] = e where row[j] > out[j] (a masked store), and out[j] =
// max(out[j], row[j]) with GOMAX's rules in mask registers (ties take
// out AND row, a NaN in out is put back).
TEXT ·maxArgZ(SB), NOSPLIT, $0-36
`)
	e.args("out+0 DI", "arg+8 R9", "row+16 SI", "n+24 CX")
	e.t(`	MOVL e+32(FP), AX
	VPBROADCASTD AX, Z8
`)
	e.loop("mzloop", 16, "mzdone")
	e.t(`	VMOVUPS (DI), Z0
	VMOVUPS (SI), Z1
	VCMPPS $30, Z0, Z1, K1 // row > out (GT_OQ)
	VMOVDQU32 Z8, K1, (R9)
	VMAXPS Z1, Z0, Z2
	VCMPPS $0, Z1, Z0, K2 // ties
	VPANDD Z1, Z0, Z4
	VMOVAPS Z4, K2, Z2
	VCMPPS $3, Z0, Z0, K3 // a NaN in out
	VMOVAPS Z0, K3, Z2
	VMOVUPS Z2, (DI)
`)
	e.next("mzloop", 16, 64, "DI", "SI", "R9")
	e.ret("mzdone")
	e.t(`
// func spmmMaxArgZ(out *float32, arg *int32, x *float32, ptr, idx *int, w *float32, n int, e int32, fresh bool, stride, cols int)
//
// The messages of n consecutive rows of a sparse product, all in one
// segment, taken into that segment's maximum without being stored: row
// i < n (numbered e+i) has the entries [ptr[i], ptr[i+1]) of idx and w
// (w nil: weights 1), and its message, Σ w·x[idx·stride+j] in spmmRowAVX's
// arithmetic, goes into out[j] and arg[j] as maxArgZ would take it (arg
// nil: no argmax), for j < cols, a multiple of 64. fresh: the segment
// has no row yet, so out and arg are not read but start at −∞ and e (the
// first row sets every column's argmax). Per 64-column block,
// Z0-Z3 hold the maximum, Z4-Z7 the argmax and Z8-Z11 the message, so
// neither touches memory between rows.
TEXT ·spmmMaxArgZ(SB), NOSPLIT, $0-80
`)
	e.args("out+0 DI", "arg+8 R9", "x+16 SI")
	segmentArgs(e, 24)
	e.loop("smblk", 64, "smdone")
	startMax(e, "Z16", "row", "smload", "smrows")
	e.i("XORQ", "BX", "BX")
	e.count("smrow", "BX", "R14", "smstore", func() {
		rowSpan(e)
		e.zero("VPXORD", rng("Z", 8, 4)...)
		entries(e, "smentry", "smmax", "smw1", "Z12", "SI", func() {
			for j := range 4 {
				e.i("VFMADD231PS", at(64*j, "(R10)"), "Z12", z(8+j))
			}
		})
		e.t(`smmax:
	// maxArgZ's steps on each 16-lane group, in registers: the argmax
	// where the message is larger (GT_OQ), then max with GOMAX's rules, a
	// NaN in out put back. maxArgZ's tie step (out AND row, for +0 against
	// −0) is left out: a message is a sum of products added to +0, which
	// is never −0, and the maximum only ever holds −∞ or messages.
`)
		for j := range 4 {
			ka, kb := k(1+3*(j%2)), k(3+3*(j%2)) // K1, K3 or K4, K6
			e.i("VCMPPS", "$30", z(j), z(8+j), ka)
			e.i("VCMPPS", "$3", z(j), z(j), kb)
			e.i("VMOVDQA32", "Z16", ka, z(4+j))
			e.i("VMAXPS", z(8+j), z(j), z(20+j))
			e.i("VMOVAPS", z(j), kb, z(20+j))
			e.i("VMOVAPS", z(20+j), z(j))
		}
		e.i("VPADDD", "Z17", "Z16", "Z16")
	})
	endMax(e, "smstore", "smnext", "smblk", "smdone")
	e.t(`
// func spmmRouteZ(ga, grad *float32, arg *int32, out *float32, ptr, idx *int, w *float32, n int, e int32, stride, cols int)
//
// The backward pass of spmmMaxArgZ over the same n rows (numbered e,
// e+1, ...) of one segment, whose maximum is out, argmax arg and
// gradient grad: for each row in order, each of its entries in order,
// ga[idx·stride+j] += w·grad[j] (a product rounded, then a sum rounded,
// as in Go; w nil: weights 1) for the columns j < cols (a multiple of 64)
// whose argmax is the row and whose maximum is not NaN; other columns are
// not written. Per 64-column block, Z0-Z3 hold grad and Z4-Z7 the argmax
// (−1 where the maximum is NaN, which no row matches); K1-K4 are a row's
// columns, and rows with none are skipped.
TEXT ·spmmRouteZ(SB), NOSPLIT, $0-88
	MOVQ ga+0(FP), DI
`)
	segmentArgs(e, 32)
	bcast(e, "-1", "Z18")
	e.loop("rzblk", 64, "rzdone")
	loadRoute(e, "grad+8(FP)", "arg+16(FP)", "out+24(FP)", "Z18")
	e.t(`	MOVL e+64(FP), AX
	VPBROADCASTD AX, Z16 // the row's number
	XORQ BX, BX
`)
	e.count("rzrow", "BX", "R14", "rznext", func() {
		argCols(e, "Z16", "rzskip", "row")
		rowSpan(e)
		entries(e, "rzentry", "rzskip", "rzw1", "Z12", "DI", func() {
			for j := range 4 {
				e.i("VMULPS", z(j), "Z12", z(20+j))
			}
			for j := range 4 {
				e.i("VADDPS", at(64*j, "(R10)"), z(20+j), z(20+j))
			}
			for j := range 4 {
				e.i("VMOVUPS", z(20+j), k(1+j), at(64*j, "(R10)"))
			}
		})
		e.label("rzskip")
		e.i("VPADDD", "Z17", "Z16", "Z16")
	})
	blockEnd(e, "rznext", "rzblk", "rzdone")
	e.t(`
// func spmmScatterRowsZ(y, grad *float32, ptr, idx *int, w *float32, rows, stride, cols int)
//
// spmmScatterAVX for rows consecutive rows of a sparse product in one
// call, in AVX-512: for each row i < rows in order (its gradient grad[i*
// stride:], its entries [ptr[i], ptr[i+1]) of idx and w), each entry e in
// order, y[idx[e]*stride+j] += w[e]·grad[i*stride+j] for j < cols, a
// multiple of 64, each a fused multiply-add (the same bits; w nil:
// weights 1). Per row and 64-column block, Z0-Z3 hold the gradient.
TEXT ·spmmScatterRowsZ(SB), NOSPLIT, $0-64
`)
	e.args("y+0 DI", "grad+8 SI", "ptr+16 R8", "idx+24 R12", "w+32 R13", "rows+40 R14", "stride+48 R11")
	e.t(`	SHLQ $2, R11
`)
	one(e, 8, "Z8", "1.0")
	e.t(`	XORQ BX, BX // row
szrow:
	CMPQ BX, R14
	JGE szdone
	MOVQ cols+56(FP), CX
	XORQ R15, R15 // byte offset of the 64-column block
`)
	e.loop("szblk", 64, "sznextrow")
	e.ld("VMOVUPS", 4, 64, "(SI)(R15*1)", zs(0))
	rowSpan(e)
	entries(e, "szentry", "sznextblk", "szw1", "Z8", "DI", func() {
		for j := range 4 {
			e.i("VMOVAPS", z(j), z(9+j))
		}
		for j := range 4 {
			e.i("VFMADD213PS", at(64*j, "(R10)"), "Z8", z(9+j))
		}
		e.st("VMOVUPS", 4, 64, zs(9), "(R10)")
	})
	e.t(`sznextblk:
`)
	e.next("szblk", 64, 256, "R15")
	e.t(`sznextrow:
	ADDQ R11, SI
	INCQ BX
	JMP szrow
`)
	e.ret("szdone")
	e.t(`
// func colSumZ(dst, src *float32, rows, cols int)
//
// dst[j] += src[r*cols+j] for r < rows in order, j < cols (a multiple of
// 16): each column's chain of additions in Go's order, its running sum in
// a register (64 columns at a time, then 16) instead of stored per row.
TEXT ·colSumZ(SB), NOSPLIT, $0-32
`)
	e.args("dst+0 DI", "src+8 SI", "rows+16 R8", "cols+24 CX")
	e.t(`	MOVQ CX, R11
	SHLQ $2, R11 // a row's bytes
`)
	for _, w := range []width{{"cs64", "cs16", 4}, {"cs16", "csdone", 1}} {
		e.loop(w.l, 16*w.n, w.out)
		e.ld("VMOVUPS", w.n, 64, "(DI)", zs(0))
		e.t("\tMOVQ SI, AX\n\tMOVQ R8, BX\n")
		e.label(w.l + "r")
		e.i("TESTQ", "BX", "BX")
		e.i("JZ", w.l+"s")
		for j := range w.n {
			e.i("VADDPS", at(64*j, "(AX)"), z(j), z(j))
		}
		e.t("\tADDQ R11, AX\n\tDECQ BX\n")
		e.i("JMP", w.l+"r")
		e.label(w.l + "s")
		e.st("VMOVUPS", w.n, 64, zs(0), "(DI)")
		e.next(w.l, 16*w.n, 64*w.n, "DI", "SI")
	}
	e.ret("csdone")
	e.t(`
// func maxUintZ(p *int, n int) uint
//
// The largest of p[0:n] read as unsigned (0 for n = 0): sparse products
// check their indices against the row count with one comparison per
// block of rows, eight at a time.
TEXT ·maxUintZ(SB), NOSPLIT, $0-24
`)
	e.args("p+0 SI", "n+8 CX")
	e.t(`	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
`)
	e.loop("mu16", 16, "mu8")
	e.t(`	VPMAXUQ 0(SI), Z0, Z0
	VPMAXUQ 64(SI), Z1, Z1
`)
	e.next("mu16", 16, 128, "SI")
	e.t(`mu8:
	VPMAXUQ Z1, Z0, Z0
	CMPQ CX, $8
	JLT mutail
	VPMAXUQ 0(SI), Z0, Z0
	ADDQ $64, SI
	SUBQ $8, CX
mutail:
	// The horizontal maximum of Z0's eight lanes, then the last n < 8.
`)
	fold(e, "VPMAXUQ")
	scanTail(e, "mutl", "mudone", "CMOVQHI", "\tMOVQ (SI), DX\n")
	e.t(`
// func minStepZ(p *int, n int) int
//
// The smallest p[i+1] − p[i] over i < n (p holds n+1 values; the largest
// int for n = 0): a row pointer does not decrease where it is ≥ 0.
TEXT ·minStepZ(SB), NOSPLIT, $0-24
`)
	e.args("p+0 SI", "n+8 CX")
	e.t(`	MOVQ $0x7fffffffffffffff, AX
	VPBROADCASTQ AX, Z0
`)
	e.loop("ms8", 8, "mstail")
	e.t(`	VMOVDQU64 8(SI), Z1
	VPSUBQ 0(SI), Z1, Z1
	VPMINSQ Z1, Z0, Z0
`)
	e.next("ms8", 8, 64, "SI")
	e.t(`mstail:
`)
	fold(e, "VPMINSQ")
	scanTail(e, "mstl", "msdone", "CMOVQLT", "\tMOVQ 8(SI), DX\n\tSUBQ (SI), DX\n")
	e.t(`
// func edgeMaxZ(out *float32, arg *int32, x *float32, src *int, feat *float32, w *float32, n int, e int32, fresh bool, fd, stride, cols int)
//
// EdgeMax's messages of n edges (numbered e, e+1, ...; edge r's source
// row src[r] of x and features feat[r*fd:(r+1)*fd]), all of one
// destination, taken into its maximum out and argmax arg (nil: none) as
// spmmMaxArgZ takes the rows [x_src 1; w_f feat_f] of a sparse product
// over the stacked rows [x; w]: the same bits. fd ≤ 3 and cols a multiple
// of 64; fresh: out and arg start at −∞ and e instead of being read. Per
// 64-column block, Z0-Z3 hold the maximum, Z4-Z7 the argmax, Z8-Z11 a
// message and Z12-Z23 the fd rows of w.
TEXT ·edgeMaxZ(SB), NOSPLIT, $0-88
`)
	e.args("out+0 DI", "arg+8 R9", "x+16 SI")
	edgeArgs(e, 24, 48, 64)
	e.t(`	VPXORD Z24, Z24, Z24
`)
	bcast(e, "1", "Z27")
	e.loop("emblk", 64, "emdone")
	wRows(e, "w+40(FP)", "emw", false)
	startMax(e, "Z26", "edge", "emload", "emedges")
	e.t(`	MOVQ feat+32(FP), R10
	XORQ DX, DX
`)
	e.count("emedge", "DX", "R14", "emstore", func() {
		rowOf(e, "R8", "DX", "AX", "SI", true)
		e.t(`	// +0 + x_src: the sparse product's sum starts at +0, and its weight 1
	// times x_src is exact.
`)
		for j := range 4 {
			e.i("VADDPS", at(64*j, "(AX)"), "Z24", z(8+j))
		}
		features(e, "emmax", func(f int) {
			e.i("VBROADCASTSS", at(4*f, "(R10)"), "Z25")
			for j := range 4 {
				e.i("VFMADD231PS", z(12+4*f+j), "Z25", z(8+j))
			}
		})
		e.t(`emmax:
	// spmmMaxArgZ's steps: the argmax where the message is larger
	// (GT_OQ); then, where the maximum is not NaN (ORD), the maximum with
	// Intel's rules (the message where either is NaN), in place.
`)
		for j := range 4 {
			ka, kb := k(1+2*(j%2)), k(2+2*(j%2)) // K1, K2 or K3, K4
			e.i("VCMPPS", "$30", z(j), z(8+j), ka)
			e.i("VMOVDQA32", "Z26", ka, z(4+j))
			e.i("VCMPPS", "$7", z(j), z(j), kb)
			e.i("VMAXPS", z(8+j), z(j), kb, z(j))
		}
		e.t("\tADDQ R13, R10\n")
		e.i("VPADDD", "Z27", "Z26", "Z26")
	})
	endMax(e, "emstore", "emnext", "emblk", "emdone")
	e.t(`
// func edgeRouteZ(gx, gw, grad *float32, arg *int32, out *float32, src *int, feat *float32, n int, e int32, fd, stride, cols int)
//
// The backward pass of edgeMaxZ over the same n edges: the gradient grad
// of the destination's maximum out goes, where an edge is the column's
// argmax (arg) and out is not NaN, into its source's row of gx and, times
// each feature, into the fd rows of gw, edges in order, with spmmRouteZ's
// arithmetic (a product rounded, then a sum rounded): the bits spmmRouteZ
// gives the stacked rows [x; w]. Per 64-column block, Z0-Z3 hold the
// gradient, Z4-Z7 the argmax (−1 where the maximum is NaN) and Z12-Z23
// the rows of gw; K1-K4 are an edge's columns, and edges with none are
// skipped.
TEXT ·edgeRouteZ(SB), NOSPLIT, $0-96
	MOVQ gx+0(FP), DI
`)
	edgeArgs(e, 40, 56, 72)
	bcast(e, "1", "Z25")
	bcast(e, "-1", "Z26")
	e.loop("erblk", 64, "erdone")
	loadRoute(e, "grad+16(FP)", "arg+24(FP)", "out+32(FP)", "Z26")
	wRows(e, "gw+8(FP)", "erw", false)
	e.t(`	MOVL e+64(FP), AX
	VPBROADCASTD AX, Z24 // the edge's number
	MOVQ feat+48(FP), R10
	XORQ DX, DX
`)
	e.count("eredge", "DX", "R14", "erstore", func() {
		argCols(e, "Z24", "erskip", "edge")
		rowOf(e, "R8", "DX", "AX", "DI", true)
		e.t("\t// 1·grad is grad: the source row's sum, as spmmRouteZ's.\n")
		for j := range 4 {
			e.i("VADDPS", at(64*j, "(AX)"), z(j), z(8+j))
		}
		for j := range 4 {
			e.i("VMOVUPS", z(8+j), k(1+j), at(64*j, "(AX)"))
		}
		features(e, "erskip", func(f int) {
			e.i("VBROADCASTSS", at(4*f, "(R10)"), "Z27")
			for j := range 4 {
				e.i("VMULPS", z(j), "Z27", z(28+j))
			}
			for j := range 4 {
				w := z(12 + 4*f + j)
				e.i("VADDPS", w, z(28+j), k(1+j), w)
			}
		})
		e.label("erskip")
		e.t("\tADDQ R13, R10\n")
		e.i("VPADDD", "Z25", "Z24", "Z24")
	})
	e.label("erstore")
	wRows(e, "gw+8(FP)", "ernext", true)
	e.next("erblk", 64, 256, "R15")
	e.ret("erdone")
	e.t(`
// func sgemmKernel12x16Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool, ldb int)
//
// sgemmKernel12x32Z for one 16-column panel of b (packed, ldb 0, or in
// place): a 12×16 tile of c in Z0, Z2, …, Z22, the bits of
// sgemmKernel6x16's two 6-row tiles. For products 16 columns wide (the
// temporal convolution's), twice the rows of the AVX2 kernel per pass
// over b.
TEXT ·sgemmKernel12x16Z(SB), NOSPLIT, $0-88
`)
	gemmArgs(e, 12)
	e.t(`	MOVQ ldb+80(FP), AX
	SHLQ $2, AX // b in place: a row of b per step
	TESTQ AX, AX
	JNZ bdonez1216
	MOVQ $64, AX // a packed panel: 16 columns per step
bdonez1216:
`)
	cArgs(e, true)
	g := zGemm(12, "1216")
	g.panels, g.b, g.bregs, g.step = 1, []string{"(DI)"}, []int{24}, "\tADDQ AX, DI\n"
	g.emit(e)
	e.t(`

// func sgemmKernel4x32Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool, ldb int)
//
// sgemmKernel6x32Z for four rows of a in place (Z0-Z7), where the last
// rows of a product are four: the bits of the six-row kernels.
TEXT ·sgemmKernel4x32Z(SB), NOSPLIT, $0-88
`)
	g = zGemm(4, "4")
	// The four-row kernel steps its pointers past rows 4 and 5 as the
	// six-row one does: dead instructions, kept so the code is unchanged.
	g.stores, g.walk = "storezs4", 6
	zKernel(e, 4, "64", g)

	e.t(`
// func spmmRangeZ(o, x *float32, ptr, idx *int, w *float32, rows, stride, cols, mode int)
//
// Rows 0, 1, … of a sparse product, two at a time (rows even): row i, its
// entries [ptr[i], ptr[i+1]) of idx and w (nil: weights 1), into
// o[i*stride:]. Per 64-column block the two rows' sums are separate
// chains of fused multiply-adds (Z0-Z3, Z4-Z7), interleaved to hide their
// latency; each row's terms in its order, so the bits are spmmRowAVX's.
// mode 1 adds the sums to the rows (o the first operand, whose NaN an
// addition keeps, as addAVX), mode 2 then takes max(·, 0) + 0 (as
// addReluAVX). The argument slots rows, ptr and o hold the loop's
// position.
TEXT ·spmmRangeZ(SB), NOSPLIT, $0-72
	MOVQ stride+48(FP), R11
	SHLQ $2, R11
`)
	one(e, 10, "Z10", "1.0")
	e.t(`	VMOVAPS Z10, Z8
	VMOVAPS Z10, Z9
rrpair:
	MOVQ rows+40(FP), AX
	CMPQ AX, $2
	JLT rrdone
	SUBQ $2, AX
	MOVQ AX, rows+40(FP)
	MOVQ ptr+16(FP), AX
	MOVQ 0(AX), BX // row 1's first entry
	MOVQ 8(AX), R10 // its end, row 2's first
	MOVQ 16(AX), R15 // row 2's end
	ADDQ $16, AX
	MOVQ AX, ptr+16(FP)
	MOVQ R10, R14
	SUBQ BX, R14 // n1
	SUBQ R10, R15 // n2
	MOVQ idx+24(FP), R8
	LEAQ (R8)(R10*8), R12
	LEAQ (R8)(BX*8), R8
	MOVQ w+32(FP), R9
	XORQ R13, R13
	TESTQ R9, R9
	JZ rrnow
	LEAQ (R9)(R10*4), R13
	LEAQ (R9)(BX*4), R9
rrnow:
	MOVQ o+0(FP), DI
	LEAQ (DI)(R11*1), DX
	LEAQ (DX)(R11*1), AX
	MOVQ AX, o+0(FP)
`)
	e.args("x+8 SI", "cols+56 CX")
	e.loop("rrblk", 64, "rrnext")
	e.zero("VPXORD", rng("Z", 0, 8)...)
	e.t(`	XORQ BX, BX
	MOVQ R14, R10
	CMPQ R15, R10
	CMOVQLT R15, R10 // min(n1, n2): entries both rows have
`)
	e.count("rrboth", "BX", "R10", "rrone", func() {
		rangeRow(e, 0, "rrb1")
		rangeRow(e, 1, "rrb2")
	})
	e.label("rrone")
	e.ic("where row 2 resumes", "MOVQ", "BX", "R10")
	e.count("rrone1", "BX", "R14", "rrtwo", func() { rangeRow(e, 0, "rro1") })
	e.label("rrtwo")
	e.i("MOVQ", "R10", "BX")
	e.count("rrtwo1", "BX", "R15", "rrstore", func() { rangeRow(e, 1, "rro2") })
	e.t(`rrstore:
	MOVQ mode+64(FP), AX
	TESTQ AX, AX
	JZ rrput
	// mode 1: dst + sum, as addAVX adds (dst the first operand, whose NaN
	// an addition keeps); mode 2: then max(·, 0) + 0, as addReluAVX.
`)
	e.ld("VMOVUPS", 4, 64, "(DI)", zs(16))
	e.ld("VMOVUPS", 4, 64, "(DX)", zs(20))
	for j := range 8 {
		e.i("VADDPS", z(j), z(16+j), z(j))
	}
	e.t(`	CMPQ AX, $2
	JNE rrput
	VPXORD Z24, Z24, Z24
`)
	for j := range 8 {
		e.i("VMAXPS", z(j), "Z24", z(j))
	}
	for j := range 8 {
		e.i("VADDPS", "Z24", z(j), z(j))
	}
	e.t(`rrput:
`)
	e.st("VMOVUPS", 4, 64, zs(0), "(DI)")
	e.st("VMOVUPS", 4, 64, zs(4), "(DX)")
	e.next("rrblk", 64, 256, "DI", "DX", "SI")
	e.t(`rrnext:
	JMP rrpair
`)
	e.ret("rrdone")
	e.t(`
// func adamZ(d, m, v, grad *float32, n int, b1, c1, b2, c2, a, decay float32, eps float64, wd bool)
//
// Adam's update of n elements (a multiple of 16), 16 at a time, with the
// operations of Adam.Step's loop in its order and precision: the moments in
// float32 without fused multiply-adds, the denominator's square root and ε
// in float64 then rounded to float32, and (if wd) the decay before the step.
TEXT ·adamZ(SB), NOSPLIT, $0-73
`)
	e.args("d+0 DI", "m+8 SI", "v+16 R8", "grad+24 R9", "n+32 CX")
	e.t(`	VBROADCASTSS b1+40(FP), Z20
	VBROADCASTSS c1+44(FP), Z21
	VBROADCASTSS b2+48(FP), Z22
	VBROADCASTSS c2+52(FP), Z23
	VBROADCASTSS a+56(FP), Z24
	VBROADCASTSS decay+60(FP), Z25
	VBROADCASTSD eps+64(FP), Z26
	MOVBLZX wd+72(FP), AX
	XORQ BX, BX // byte offset
`)
	e.loop("adamloop", 16, "adamdone")
	e.t(`	VMOVUPS (SI)(BX*1), Z0 // m
	VMOVUPS (R9)(BX*1), Z1 // g
	VMOVUPS (R8)(BX*1), Z2 // v
	VMULPS Z0, Z20, Z3 // b1·m
	VMULPS Z1, Z21, Z4 // c1·g
	VADDPS Z4, Z3, Z3 // m' = b1·m + c1·g
	VMOVUPS Z3, (SI)(BX*1)
	VMULPS Z1, Z23, Z5 // c2·g
	VMULPS Z1, Z5, Z5 // (c2·g)·g
	VMULPS Z2, Z22, Z6 // b2·v
	VADDPS Z5, Z6, Z6 // v' = b2·v + c2·g·g
	VMOVUPS Z6, (R8)(BX*1)
	VCVTPS2PD Y6, Z7 // the denominator f32(√f64(v') + ε), eight lanes at a time
	VEXTRACTF64X4 $1, Z6, Y8 // (AVX512F: the upper 256 bits)
	VCVTPS2PD Y8, Z8
	VSQRTPD Z7, Z7
	VSQRTPD Z8, Z8
	VADDPD Z26, Z7, Z7
	VADDPD Z26, Z8, Z8
	VCVTPD2PS Z7, Y7
	VCVTPD2PS Z8, Y8
	VINSERTF64X4 $1, Y8, Z7, Z7
	VMOVUPS (DI)(BX*1), Z9 // x
	TESTQ AX, AX
	JZ adamnodecay
	VMULPS Z25, Z9, Z9 // x·decay
adamnodecay:
	VMULPS Z3, Z24, Z10 // a·m'
	VDIVPS Z7, Z10, Z10 // (a·m') / den
	VSUBPS Z10, Z9, Z9 // x − (a·m')/den
	VMOVUPS Z9, (DI)(BX*1)
`)
	e.next("adamloop", 16, 64, "BX")
	e.ret("adamdone")
	e.t(`
// func tanhZ(y, x *float32, n int, c *float64)
//
// y = float32(math.Tanh(float64(x))) for n elements (a multiple of 8),
// eight at a time in float64, with math.Tanh's operations in its order
// (Cephes: ±1 above ½·log(2¹²⁷); 1 − 2/(e^{2|x|} + 1) from 0.625, with
// e^{2|x|} as math.Exp computes it on amd64 with FMA (Shibata's method:
// reduction by ln 2 in two fused parts, a Taylor polynomial of x/16 by
// fused Horner steps, four squarings of 1 + x); below 0.625 the rational
// polynomial, unfused as the Go compiler emits it by default; x itself for
// ±0), so every result has its bits. c is tanhConsts (sgemm_amd64.go).
TEXT ·tanhZ(SB), NOSPLIT, $0-32
`)
	e.args("y+0 DI", "x+8 SI", "n+16 CX", "c+24 AX")
	e.t(`	MOVQ $0x8000000000000000, DX
	VPBROADCASTQ DX, Z29 // the sign bit
	MOVQ $0x7fffffffffffffff, DX
	VPBROADCASTQ DX, Z31 // all but the sign bit
	MOVQ $0x3ff, DX
	VPBROADCASTQ DX, Z30 // the exponent bias
	VPXORQ Z28, Z28, Z28 // +0
`)
	e.loop("tanhloop", 8, "tanhdone")
	e.t(`	VMOVUPS (SI), Y0
	VCVTPS2PD Y0, Z0 // x
	VPANDQ Z31, Z0, Z1 // z = |x|
	VCMPPD $0x11, Z28, Z0, K1 // x < 0

	// Below 0.625: x + x·s·((P0·s + P1)·s + P2)/(((s + Q0)·s + Q1)·s + Q2), s = x².
	VMULPD Z0, Z0, Z2
	VMULPD.BCST 0(AX), Z2, Z3
	VADDPD.BCST 8(AX), Z3, Z3
	VMULPD Z2, Z3, Z3
	VADDPD.BCST 16(AX), Z3, Z3
	VADDPD.BCST 24(AX), Z2, Z4
	VMULPD Z2, Z4, Z4
	VADDPD.BCST 32(AX), Z4, Z4
	VMULPD Z2, Z4, Z4
	VADDPD.BCST 40(AX), Z4, Z4
	VMULPD Z2, Z0, Z5
	VMULPD Z3, Z5, Z5
	VDIVPD Z4, Z5, Z5
	VADDPD Z5, Z0, Z6 // the result so far

	// From 0.625: e = math.Exp(2z), then 1 − 2/(e + 1), negated for x < 0.
	VADDPD Z1, Z1, Z7 // 2z
	VMULPD.BCST 64(AX), Z7, Z8 // ·log2(e)
	VCVTPD2DQ Z8, Y9 // the exponent k, rounded to nearest
	VCVTDQ2PD Y9, Z8
	VFNMADD231PD.BCST 72(AX), Z8, Z7 // − k·ln2 (upper part), fused
	VFNMADD231PD.BCST 80(AX), Z8, Z7 // − k·ln2 (lower part), fused
	VMULPD.BCST 88(AX), Z7, Z7 // /16
	VBROADCASTSD 96(AX), Z10
`)
	// The Taylor polynomial's Horner steps, its coefficients c[13:20].
	for j := range 7 {
		e.i("VFMADD213PD.BCST", at(104+8*j, "(AX)"), "Z7", "Z10")
	}
	for s := range 4 {
		e.i("VMULPD", "Z10", "Z7", "Z7")
		if s == 0 {
			e.ic("four times t·(t + 2), the last + 1 fused", "VADDPD.BCST", "160(AX)", "Z7", "Z10")
		} else {
			e.i("VADDPD.BCST", "160(AX)", "Z7", "Z10")
		}
	}
	e.t(`	VFMADD213PD.BCST 152(AX), Z10, Z7
	VPMOVSXDQ Y9, Z11 // ·2^k
	VPADDQ Z30, Z11, Z11
	VPSLLQ $52, Z11, Z11
	VMULPD Z11, Z7, Z7
	VADDPD.BCST 152(AX), Z7, Z7 // e + 1
	VBROADCASTSD 160(AX), Z12
	VDIVPD Z7, Z12, Z12 // 2/(e + 1)
	VBROADCASTSD 152(AX), Z13
	VSUBPD Z12, Z13, Z13 // 1 − 2/(e + 1)
	VPXORQ Z29, Z13, K1, Z13
	VCMPPD.BCST $0x1d, 48(AX), Z1, K2 // z ≥ 0.625
	VMOVAPD Z13, K2, Z6

	// Above ½·log(2¹²⁷): ±1.
	VBROADCASTSD 152(AX), Z14
	VPXORQ Z29, Z14, K1, Z14
	VCMPPD.BCST $0x1e, 56(AX), Z1, K3 // z > ½·log(2¹²⁷)
	VMOVAPD Z14, K3, Z6

	VCMPPD $0x00, Z28, Z0, K4 // ±0 stays itself
	VMOVAPD Z0, K4, Z6
	VCVTPD2PS Z6, Y6
	VMOVUPS Y6, (DI)
`)
	e.next("tanhloop", 8, 32, "SI", "DI")
	e.ret("tanhdone")
	e.t(`
// func packTransposedZ(dst, src *float32, ld, k int)
//
// dst[p*16+c] = src[c*ld+p] for p < k, c < 16, k a multiple of 16: a
// panel of a transposed B, one 16×16 block at a time in registers
// (sixteen rows loaded, four rounds of shuffles, sixteen rows stored).
// Z0-Z15 hold the block's rows, Z16-Z31 the intermediate rounds.
TEXT ·packTransposedZ(SB), NOSPLIT, $0-32
`)
	e.args("dst+0 DI", "src+8 SI", "ld+16 R8")
	e.t(`	SHLQ $2, R8 // a source row's bytes
	MOVQ k+24(FP), CX
	LEAQ (R8)(R8*2), R9 // three rows
	LEAQ (SI)(R8*4), R10 // row 4
	LEAQ (R10)(R8*4), R11 // row 8
	LEAQ (R11)(R8*4), R12 // row 12
`)
	e.loop("ptz", 16, "ptzdone")
	packTransposed(e)
	e.t(`	ADDQ $1024, DI
	ADDQ $64, SI
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	SUBQ $16, CX
	JMP ptz
`)
	e.ret("ptzdone")
	e.t(`
// func fmaPeakZ(n int)
//
// n rounds of 12 independent 16-lane fused multiply-adds, from registers
// to registers: the core's float32 arithmetic ceiling, with no memory
// access (BenchmarkFMAPeak). Twelve accumulators cover the FMA units'
// latency times their count, so the loop is bound by throughput alone.
TEXT ·fmaPeakZ(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
`)
	e.zero("VXORPS", append(rng("Z", 0, 12), "Z30", "Z31")...)
	e.t(`	TESTQ CX, CX
	JLE fpdone
fploop:
`)
	for j := range 12 {
		e.i("VFMADD231PS", "Z30", "Z31", z(j))
	}
	e.t(`	DECQ CX
	JNZ fploop
`)
	e.ret("fpdone")
}

// freshMax starts a segment's maximum at −∞ (Z0, already broadcast to
// Z1-Z3) and its argmax at the row's number.
func freshMax(e *emitter, num string) {
	for j := 1; j < 4; j++ {
		e.i("VMOVAPS", "Z0", z(j))
	}
	for j := range 4 {
		e.i("VMOVDQA32", num, z(4+j))
	}
}

// loadMax reads the maximum into Z0-Z3 and, unless arg is nil, the
// argmax into Z4-Z7; storeMax writes them back.
func loadMax(e *emitter, skip string) {
	e.ld("VMOVUPS", 4, 64, "(DI)(R15*1)", zs(0))
	e.t("\tTESTQ R9, R9\n")
	e.i("JZ", skip)
	e.ld("VMOVDQU32", 4, 64, "(R9)(R15*1)", zs(4))
}

func storeMax(e *emitter, next string) {
	e.st("VMOVUPS", 4, 64, zs(0), "(DI)(R15*1)")
	e.t("\tTESTQ R9, R9\n")
	e.i("JZ", next)
	e.st("VMOVDQU32", 4, 64, zs(4), "(R9)(R15*1)")
}

// loadRoute reads a block's gradient (Z0-Z3), argmax (Z4-Z7) and maximum
// (Z8-Z11) and sets the argmax to −1 (minus) where the maximum is NaN.
func loadRoute(e *emitter, grad, arg, out, minus string) {
	e.i("MOVQ", grad, "R10")
	e.ld("VMOVUPS", 4, 64, "(R10)(R15*1)", zs(0))
	e.i("MOVQ", arg, "R10")
	e.ld("VMOVDQU32", 4, 64, "(R10)(R15*1)", zs(4))
	e.i("MOVQ", out, "R10")
	e.ld("VMOVUPS", 4, 64, "(R10)(R15*1)", zs(8))
	e.ic("a NaN maximum equals no message", "VCMPPS", "$3", "Z8", "Z8", "K1")
	for j := 1; j < 4; j++ {
		e.i("VCMPPS", "$3", z(8+j), z(8+j), k(1+j))
	}
	for j := range 4 {
		e.i("VMOVDQA32", minus, k(1+j), z(4+j))
	}
}

// argCols sets K1-K4 to the columns whose argmax is num and leaves for
// skip where there are none.
func argCols(e *emitter, num, skip, what string) {
	for j := range 4 {
		e.i("VPCMPEQD", num, z(4+j), k(1+j))
	}
	e.t(`	KORW K1, K2, K5
	KORW K3, K4, K6
	KORTESTW K5, K6
`)
	e.ic("the "+what+" attains no column's maximum", "JZ", skip)
}

// features emits body for each of an edge's fd ≤ 3 features, fd in BX,
// leaving for done after the last.
func features(e *emitter, done string, body func(f int)) {
	for f := range 3 {
		e.i("CMPQ", "BX", imm(f+1))
		e.i("JLT", done)
		body(f)
	}
}

// rangeRow adds an entry of row r (0 or 1) of spmmRangeZ's pair, times
// its weight, into the row's sums, Z(4r)-Z(4r+3): row 0's entries are
// in R8 and R9, its weight in Z8, row 1's in R12, R13 and Z9.
func rangeRow(e *emitter, r int, skip string) {
	w := z(8 + r)
	entry(e, skip, []string{"R9", "R13"}[r], w, []string{"R8", "R12"}[r], "BX", "AX", "SI", false)
	for j := range 4 {
		e.i("VFMADD231PS", at(64*j, "(AX)"), w, z(4*r+j))
	}
}

// packTransposed is packTransposedZ's 16×16 transpose: the rows loaded,
// pairs interleaved by element, then by element pair, then 128-bit lanes
// shuffled twice, the rows stored.
func packTransposed(e *emitter) {
	for r := range 16 {
		base := "(" + []string{"SI", "R10", "R11", "R12"}[r/4] + ")"
		e.i("VMOVUPS", at(0, base+[]string{"", "(R8*1)", "(R8*2)", "(R9*1)"}[r%4]), z(r))
	}
	for j := range 8 {
		e.i("VUNPCKLPS", z(2*j+1), z(2*j), z(16+2*j))
		e.i("VUNPCKHPS", z(2*j+1), z(2*j), z(17+2*j))
	}
	for q := range 4 {
		s := 16 + 4*q
		e.i("VUNPCKLPD", z(s+2), z(s), z(4*q))
		e.i("VUNPCKHPD", z(s+2), z(s), z(4*q+1))
		e.i("VUNPCKLPD", z(s+3), z(s+1), z(4*q+2))
		e.i("VUNPCKHPD", z(s+3), z(s+1), z(4*q+3))
	}
	for j := range 4 {
		for _, h := range []int{0, 8} {
			e.i("VSHUFF32X4", "$0x88", z(4+h+j), z(h+j), z(16+h+j))
			e.i("VSHUFF32X4", "$0xdd", z(4+h+j), z(h+j), z(20+h+j))
		}
	}
	for j := range 8 {
		e.i("VSHUFF32X4", "$0x88", z(24+j), z(16+j), z(j))
		e.i("VSHUFF32X4", "$0xdd", z(24+j), z(16+j), z(8+j))
	}
	e.st("VMOVUPS", 16, 64, zs(0), "(DI)")
}

// gemmArgs loads the gemm kernels' k (CX), a (SI) and the byte strides
// of a's rows (R10) and steps (R12), and points R11 (and for twelve
// rows R13, R14) at every third row, and loads b (DI).
func gemmArgs(e *emitter, rows int) {
	e.args("k+0 CX", "a+8 SI", "lda+16 R10")
	e.i("SHLQ", "$2", "R10")
	e.args("step+24 R12")
	e.i("SHLQ", "$2", "R12")
	prev, n := "SI", 1
	if rows == 12 {
		n = 3
	}
	for r, reg := range []string{"R11", "R13", "R14"}[:n] {
		e.i("LEAQ", "("+prev+")(R10*2)", reg)
		e.ic(fmt.Sprintf("row %d", 3*(r+1)), "ADDQ", "R10", reg)
		prev = reg
	}
	e.args("b+32 DI")
}

// panels2 points DI and BX at b's two 16-column panels, packed back to
// back or in place (ldb ≠ 0), and AX at the bytes of b per step.
func panels2(e *emitter, suf string) {
	e.t(`	MOVQ ldb+80(FP), AX
	TESTQ AX, AX
`)
	e.i("JNZ", "bplacez"+suf)
	e.t(`	MOVQ CX, BX
	SHLQ $6, BX
	ADDQ DI, BX // the second panel
	MOVQ $64, AX // bytes of b per step
`)
	e.i("JMP", "bdonez"+suf)
	e.label("bplacez" + suf)
	e.t(`	SHLQ $2, AX // b in place: a row of b per step, its next 16 columns
	LEAQ 64(DI), BX
`)
	e.label("bdonez" + suf)
}

// cArgs loads c (DX) and its row stride in bytes (R8); early copies c
// to R9 for the tile's early fetch.
func cArgs(e *emitter, early bool) {
	e.args("c+40 DX", "ldc+48 R8")
	e.i("SHLQ", "$2", "R8")
	if early {
		e.t(`	// Fetch the tile of c early: it is added to or stored at the end, and
	// on large matrices comes from memory.
	MOVQ DX, R9
`)
	}
}

// entry points dst at the row of x (base, plus the block's offset R15
// where blk) that entry i of idx names, and broadcasts its weight from w
// into wreg unless w is nil (wreg then holds 1).
func entry(e *emitter, skip, w, wreg, idx, i, dst, base string, blk bool) {
	rowOf(e, idx, i, dst, base, blk)
	e.i("TESTQ", w, w)
	e.i("JZ", skip)
	e.i("VBROADCASTSS", "("+w+")("+i+"*4)", wreg)
	e.label(skip)
}

// addr writes a memory operand (at or at0).
type addr func(off int, base string) string

// stream writes an elementwise kernel's loops: body on four registers of
// eight lanes (operands a = at) while 32 elements remain, then on one
// (a = at0, "(SI)") while eight do, the pointers stepped past them.
func stream(e *emitter, wide, narrow, done string, ptrs []string, body func(n int, a addr)) {
	e.loop(wide, 32, narrow)
	body(4, at)
	e.next(wide, 32, 128, ptrs...)
	e.loop(narrow, 8, done)
	body(1, at0)
	e.next(narrow, 8, 32, ptrs...)
	e.ret(done)
}

// sparseArgs loads the AVX sparse kernels' idx (R8), w (R9), n (R10),
// stride in bytes (R11) and cols (CX), and 1.0 into Y8, the weight when
// w is nil.
func sparseArgs(e *emitter) {
	e.args("idx+16 R8", "w+24 R9", "n+32 R10")
	colArgs(e, 40, 48, false)
	one(e, 8, "Y8", "1.0")
}

// segmentArgs loads a segment's ptr (R8), idx (R12), w (R13) and n (R14),
// from the slot ptr on, the stride and cols after them, and sets Z12 to
// 1.0 and Z17 to 1, the step between row numbers.
func segmentArgs(e *emitter, ptr int) {
	for j, a := range [][2]string{{"ptr", "R8"}, {"idx", "R12"}, {"w", "R13"}, {"n", "R14"}} {
		e.i("MOVQ", fmt.Sprintf("%s+%d(FP)", a[0], ptr+8*j), a[1])
	}
	colArgs(e, ptr+40, ptr+48, true)
	one(e, 12, "Z12", "1.0, the weight when w is nil")
	bcast(e, "1", "Z17")
}

// edgeArgs loads the edge kernels' src (R8), n (R14), fd (BX, and in
// bytes R13), stride and cols, the last two after fd.
func edgeArgs(e *emitter, src, n, fd int) {
	e.args(fmt.Sprintf("src+%d R8", src), fmt.Sprintf("n+%d R14", n), fmt.Sprintf("fd+%d BX", fd))
	e.t(`	MOVQ BX, R13
	SHLQ $2, R13 // bytes of features per edge
`)
	colArgs(e, fd+8, fd+16, true)
}

// colArgs loads stride, in bytes, into R11 and cols into CX; blk starts
// R15 at the first 64-column block.
func colArgs(e *emitter, stride, cols int, blk bool) {
	e.args(fmt.Sprintf("stride+%d R11", stride))
	e.i("SHLQ", "$2", "R11")
	e.args(fmt.Sprintf("cols+%d CX", cols))
	if blk {
		e.ic("byte offset of the 64-column block", "XORQ", "R15", "R15")
	}
}

// bcast sets each 32-bit lane of reg to v.
func bcast(e *emitter, v, reg string) {
	e.i("MOVL", "$"+v, "AX")
	e.i("VPBROADCASTD", "AX", reg)
}

// fold takes Z0's eight quadwords to one in AX by op (a maximum or
// minimum), halving the width three times.
func fold(e *emitter, op string) {
	e.i("VEXTRACTI64X4", "$1", "Z0", "Y1")
	e.i(op, "Y1", "Y0", "Y0")
	e.i("VEXTRACTI128", "$1", "Y0", "X1")
	e.i(op, "X1", "X0", "X0")
	e.i("VPSHUFD", "$0x4e", "X0", "X1")
	e.i(op, "X1", "X0", "X0")
	e.i("VMOVQ", "X0", "AX")
}

// startMax sets num to the first row's (or edge's) number and starts
// the block's maximum and argmax fresh or from memory, going on at rows.
func startMax(e *emitter, num, what, load, rows string) {
	e.t("\tMOVL e+56(FP), AX\n")
	e.ic("the "+what+"'s number, for the argmax", "VPBROADCASTD", "AX", num)
	e.t(`	MOVBLZX fresh+60(FP), AX
	TESTQ AX, AX
`)
	e.i("JZ", load)
	e.ic("−∞", "MOVL", "$0xff800000", "AX")
	e.i("VPBROADCASTD", "AX", "Z0")
	freshMax(e, num)
	e.i("JMP", rows)
	e.label(load)
	loadMax(e, rows)
	e.label(rows)
}

// wRows loads (or stores) the block's fd ≤ 3 rows of w, at the argument
// slot, in Z12-Z23, then goes on at done.
func wRows(e *emitter, slot, done string, store bool) {
	e.i("MOVQ", slot, "AX")
	e.i("ADDQ", "R15", "AX")
	features(e, done, func(f int) {
		if store {
			e.st("VMOVUPS", 4, 64, zs(12+4*f), "(AX)")
		} else {
			e.ld("VMOVUPS", 4, 64, "(AX)", zs(12+4*f))
		}
		if f < 2 {
			e.i("ADDQ", "R11", "AX")
		}
	})
	e.label(done)
}

// zKernel writes an AVX-512 gemm kernel over b's two panels, rows deep.
func zKernel(e *emitter, rows int, suf string, g *gemm) {
	gemmArgs(e, rows)
	panels2(e, suf)
	cArgs(e, rows == 12)
	g.emit(e)
}

// width is one of a kernel's loops: its label, where it leaves for and
// how many registers of columns it holds.
type width struct {
	l, out string
	n      int
}

// sparseAVX writes the AVX sparse kernels' two loops over the columns,
// 64 at a time (eight registers) then eight (one), labels p64 and p8,
// each over the n entries (BX < R10) with AX at the entry's row of x or y
// (base) and its weight in Y8: pre before the entries, body per entry,
// post after them, at the label ending in exit.
func sparseAVX(e *emitter, p, exit, base string, pre, body, post func(n int)) {
	for _, w := range []width{{p + "64", p + "8", 8}, {p + "8", p + "done", 1}} {
		e.loop(w.l, 8*w.n, w.out)
		pre(w.n)
		e.i("XORQ", "BX", "BX")
		e.count(w.l+"e", "BX", "R10", w.l+exit, func() {
			entry(e, w.l+"f", "R9", "Y8", "R8", "BX", "AX", base, false)
			body(w.n)
		})
		e.label(w.l + exit)
		post(w.n)
		e.next(w.l, 8*w.n, 32*w.n, "DI", "SI")
	}
	e.ret(p + "done")
}

// blockEnd steps R15 to the next 64-column block at next, back to blk,
// and exits at done.
func blockEnd(e *emitter, next, blk, done string) {
	e.label(next)
	e.next(blk, 64, 256, "R15")
	e.ret(done)
}

// scanTail takes the last CX < 8 quadwords at SI, each read by load into
// DX, into AX by the conditional move cmov, and returns AX.
func scanTail(e *emitter, loop, done, cmov, load string) {
	e.label(loop)
	e.i("TESTQ", "CX", "CX")
	e.i("JZ", done)
	e.t(load)
	e.i("CMPQ", "DX", "AX")
	e.i(cmov, "DX", "AX")
	e.t("\tADDQ $8, SI\n\tDECQ CX\n")
	e.i("JMP", loop)
	e.label(done)
	e.t("\tVZEROUPPER\n\tMOVQ AX, ret+16(FP)\n\tRET\n")
}

// endMax stores the block's maximum and argmax at store and ends the
// block.
func endMax(e *emitter, store, next, blk, done string) {
	e.label(store)
	storeMax(e, next)
	blockEnd(e, next, blk, done)
}

// rowSpan sets AX and DX to the first and end entry of row BX of ptr (R8).
func rowSpan(e *emitter) {
	e.ic("the row's first entry", "MOVQ", "(R8)(BX*8)", "AX")
	e.ic("and its end", "MOVQ", "8(R8)(BX*8)", "DX")
}

// entries loops over a row's entries AX < DX, leaving for out: for each,
// R10 points at its row of x or y (base plus the block offset), its
// weight in wreg, then body.
func entries(e *emitter, label, out, skip, wreg, base string, body func()) {
	e.count(label, "AX", "DX", out, func() {
		entry(e, skip, "R13", wreg, "R12", "AX", "R10", base, true)
		body()
	})
}

// one broadcasts 1.0 into reg through Xx, the comment saying what for.
func one(e *emitter, x int, reg, comment string) {
	e.ic(comment, "MOVL", "$0x3f800000", "AX")
	e.i("VMOVD", "AX", fmt.Sprintf("X%d", x))
	e.i("VBROADCASTSS", fmt.Sprintf("X%d", x), reg)
}

// rowOf points dst at the row of x (base, plus the block's offset R15
// where blk) that entry i of idx names, stride R11 apart.
func rowOf(e *emitter, idx, i, dst, base string, blk bool) {
	e.i("MOVQ", "("+idx+")("+i+"*8)", dst)
	e.i("IMULQ", "R11", dst)
	e.i("ADDQ", base, dst)
	if blk {
		e.i("ADDQ", "R15", dst)
	}
}

// sums writes addAVX's and addPairAVX's loops, labels p32, p8 and
// pdone: dst (DI) = the vectors at SI plus those at each of srcs, in
// order.
func sums(e *emitter, p string, srcs ...string) {
	stream(e, p+"32", p+"8", p+"done", []string{"SI", "DX", "DI"}, func(n int, a addr) {
		e.ld2("VMOVUPS", n, a, "(SI)", ys(0))
		for _, src := range srcs {
			e.add(n, a, src)
		}
		e.st2("VMOVUPS", n, a, ys(0), "(DI)")
	})
}
