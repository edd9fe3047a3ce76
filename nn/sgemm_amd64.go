//go:build amd64 && !purego

package nn

//go:generate go run ./internal/asmgen -out sgemm_amd64.s

import "golang.org/x/sys/cpu"

// haveAVX2 is true where the AVX2/FMA kernels of this file can run: the
// sparse products, ReLU, maxima and additions use them in every build.
var haveAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasPOPCNT

// haveSgemmKernel is true where float32 products go to sgemm's AVX2/FMA
// kernel: not in the openblas build, whose products go to OpenBLAS.
var haveSgemmKernel = haveAVX2 && !openblasBuild

// haveAVX512 is true where the AVX-512 kernels can run: the sparse
// products, segment maxima and column sums use them in every build.
// x/sys/cpu reports AVX-512 only where the OS saves its registers.
var haveAVX512 = haveAVX2 && cpu.X86.HasAVX512F

// haveSgemmZ is true where sgemm can also use the AVX-512 kernels
// (sgemmKernel6x32Z, sgemmKernel12x32Z), which do twice the work per
// instruction and give the same bits.
var haveSgemmZ = haveSgemmKernel && haveAVX512

// sgemmKernel6x16 is implemented in sgemm_amd64.s.
//
//go:noescape
func sgemmKernel6x16(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool)

// sgemmKernel6x32Z is implemented in sgemm_amd64.s. Unlike
// sgemmKernel6x16 it also reads b in place: with ldb 0, b is two packed
// panels (k×16 each, one after the other); else row p of the 32 columns
// is b[p*ldb:p*ldb+32].
//
//go:noescape
func sgemmKernel6x32Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool, ldb int)

// sgemmKernel12x32Z is implemented in sgemm_amd64.s; b as
// sgemmKernel6x32Z's.
//
//go:noescape
func sgemmKernel12x32Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool, ldb int)

// sgemmKernel4x32Z is sgemmKernel6x32Z for four rows; sgemm_amd64.s.
//
//go:noescape
func sgemmKernel4x32Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool, ldb int)

// sgemmKernel12x16Z is sgemmKernel12x32Z for one 16-column panel, with
// sgemmKernel6x16's bits; sgemm_amd64.s.
//
//go:noescape
func sgemmKernel12x16Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool, ldb int)

// addAVX sets dst[i] = a[i] + b[i] for n, a multiple of 8, elements;
// sgemm_amd64.s.
//
//go:noescape
func addAVX(dst, a, b *float32, n int)

// addPairAVX sets dst[i] += b[i] + c[i] (the pair summed first) for n, a
// multiple of 8, elements; sgemm_amd64.s.
//
//go:noescape
func addPairAVX(dst, b, c *float32, n int)

// addReluAVX sets dst[i] = max(dst[i] + src[i], 0), as Go's max, for n,
// a multiple of 8, elements; sgemm_amd64.s.
//
//go:noescape
func addReluAVX(dst, src *float32, n int)

// axpyAVX adds a·x to y for n, a multiple of 8, elements; it is implemented
// in sgemm_amd64.s and runs where haveAVX2 is true.
//
//go:noescape
func axpyAVX(y *float32, a float32, x *float32, n int)

// maxAVX sets y[i] = max(y[i], x[i]) with the semantics of Go's max (NaN
// wins, +0 over −0) for n, a multiple of 8, elements; sgemm_amd64.s.
//
//go:noescape
func maxAVX(y, x *float32, n int)

// reluAVX sets y[i] = max(x[i], 0) like maxAVX; sgemm_amd64.s.
//
//go:noescape
func reluAVX(y, x *float32, n int)

// reluGradAVX is reluGrad32 for n, a multiple of 8, elements;
// sgemm_amd64.s.
//
//go:noescape
func reluGradAVX(dst, x, grad *float32, n int)

// maxArgAVX takes row into out as maxAVX and sets arg[j] = e where row[j]
// was strictly larger, for n a multiple of 8; sgemm_amd64.s.
//
//go:noescape
func maxArgAVX(out *float32, arg *int32, row *float32, n int, e int32)

// maxArgZ is maxArgAVX in AVX-512 for n a multiple of 16; sgemm_amd64.s.
//
//go:noescape
func maxArgZ(out *float32, arg *int32, row *float32, n int, e int32)

// routeMaskAVX sets mask[j] (all ones or zero) to arg[j] == e and out[j]
// not NaN, for n a multiple of 8, and returns how many are set;
// sgemm_amd64.s.
//
//go:noescape
func routeMaskAVX(mask *float32, arg *int32, e int32, out *float32, n int) int

// routeAVX adds w·grad[j] to y[j] where mask[j] is set (the product and the
// sum each rounded, as in Go), for n a multiple of 8; sgemm_amd64.s.
//
//go:noescape
func routeAVX(y *float32, w float32, grad *float32, mask *float32, n int)

// spmmRowAVX writes Σ w[e]·x[idx[e]*stride+j] over e < n into dst[j] for
// j < cols, a multiple of 8, with axpyAVX's arithmetic (w nil: weights
// 1); sgemm_amd64.s.
//
//go:noescape
func spmmRowAVX(dst, x *float32, idx *int, w *float32, n, stride, cols int)

// spmmRangeZ computes rows 0 … rows−1 (rows even) of a sparse product
// (row i: Σ w[e]·x[idx[e]·stride:] over its entries [ptr[i], ptr[i+1]))
// into o[i*stride:], two rows at a time in AVX-512 registers, for cols a
// multiple of 64, with spmmRowAVX's bits; mode 1 adds the sums to the rows
// (addTo's bits), mode 2 then takes max(·, 0) (addRelu's); sgemm_amd64.s.
//
//go:noescape
func spmmRangeZ(o, x *float32, ptr, idx *int, w *float32, rows, stride, cols, mode int)

// spmmMaxArgZ takes the messages of n rows of a sparse product (numbered
// e, e+1, ...; row i's entries [ptr[i], ptr[i+1]) of idx and w), all of one
// segment, into the segment's maximum out and argmax arg (nil: none) as
// spmmRangeZ and maxArgZ would, without storing them, for cols a multiple
// of 64; fresh: out and arg start at −∞ and e instead of being read;
// sgemm_amd64.s.
//
//go:noescape
func spmmMaxArgZ(out *float32, arg *int32, x *float32, ptr, idx *int, w *float32, n int, e int32, fresh bool, stride, cols int)

// spmmRouteZ is the backward pass of spmmMaxArgZ over the same rows: the
// gradient grad of the segment's maximum out goes, through each row's
// entries, into ga where the row is the column's argmax (arg) and out is
// not NaN, with routeAVX's arithmetic, rows and entries in order, for cols
// a multiple of 64; sgemm_amd64.s.
//
//go:noescape
func spmmRouteZ(ga, grad *float32, arg *int32, out *float32, ptr, idx *int, w *float32, n int, e int32, stride, cols int)

// edgeMaxZ takes the messages x[src[r]] + Σ_f feat[r·fd+f]·w[f] of n
// edges (numbered e, e+1, ...), all of one destination, into its maximum
// out and argmax arg (nil: none), with spmmMaxArgZ's bits for the sparse
// rows [x_src 1; w_f feat_f], for fd ≤ 3 and cols a multiple of 64;
// fresh: out and arg start at −∞ and e; sgemm_amd64.s.
//
//go:noescape
func edgeMaxZ(out *float32, arg *int32, x *float32, src *int, feat *float32, w *float32, n int, e int32, fresh bool, fd, stride, cols int)

// edgeRouteZ is the backward pass of edgeMaxZ over the same edges: the
// gradient grad of the maximum out goes where an edge is a column's
// argmax (arg) and out is not NaN into gx's source row and, times each
// feature, into gw's fd rows, with spmmRouteZ's bits; sgemm_amd64.s.
//
//go:noescape
func edgeRouteZ(gx, gw, grad *float32, arg *int32, out *float32, src *int, feat *float32, n int, e int32, fd, stride, cols int)

// spmmScatterAVX adds w[e]·grad[j] to y[idx[e]*stride+j] for e < n, j < cols
// (a multiple of 8), with axpyAVX's arithmetic (w nil: weights 1);
// sgemm_amd64.s.
//
//go:noescape
func spmmScatterAVX(y, grad *float32, idx *int, w *float32, n, stride, cols int)

// spmmScatterRowsZ is spmmScatterAVX over rows consecutive rows of a
// sparse product (row i: gradient grad[i*stride:], entries [ptr[i],
// ptr[i+1]) of idx and w), in one call and AVX-512, for cols a multiple of
// 64; the same bits; sgemm_amd64.s.
//
//go:noescape
func spmmScatterRowsZ(y, grad *float32, ptr, idx *int, w *float32, rows, stride, cols int)

// colSumZ adds the rows rows of src (cols wide, a multiple of 16) to dst
// in order, each column's sum in a register; the bits of one addTo per
// row; sgemm_amd64.s.
//
//go:noescape
func colSumZ(dst, src *float32, rows, cols int)

// maxUintZ returns the largest of p[0:n] as unsigned (0 for none), and
// minStepZ the smallest p[i+1] − p[i] over i < n (the largest int for
// none): checkRows's tests, eight lanes at a time; sgemm_amd64.s.
//
//go:noescape
func maxUintZ(p *int, n int) uint

//go:noescape
func minStepZ(p *int, n int) int

// packRows16AVX copies k rows of 16 floats, ld apart in src, into dst
// back to back; sgemm_amd64.s.
//
//go:noescape
func packRows16AVX(dst, src *float32, ld, k int)

// adamZ is Adam.Step's loop over n float32 elements (a multiple of 16)
// in AVX-512, with the loop's bits; sgemm_amd64.s.
//
//go:noescape
func adamZ(d, m, v, grad *float32, n int, b1, c1, b2, c2, a, decay float32, eps float64, wd bool)

// haveTanhZ reports whether tanhZ gives math.Tanh's bits: with AVX-512,
// and in a build whose compiler does not fuse math.Tanh's multiply-adds
// (GOAMD64 below v3; see goFusesMath).
var haveTanhZ = haveAVX512 && !goFusesMath

// tanhZ writes float32(math.Tanh(float64(x[i]))) to y[i] for n elements
// (a multiple of 8) with math.Tanh's bits, on a CPU with AVX-512 (and so
// FMA, which math.Exp then uses); c is &tanhConsts[0]; sgemm_amd64.s.
//
//go:noescape
func tanhZ(y, x *float32, n int, c *float64)

// tanhConsts are the constants of math.Tanh (Cephes) and of math.Exp on
// amd64 (exp_amd64.s), in the order tanhZ reads them.
var tanhConsts = [...]float64{
	-9.64399179425052238628e-1, // tanhP
	-9.92877231001918586564e1,
	-1.61468768441708447952e3,
	1.12811678491632931402e2, // tanhQ
	2.23548839060100448583e3,
	4.84406305325125486048e3,
	0.625,
	0.5 * 8.8029691931113054295988e+01,                    // ½·log(2¹²⁷)
	1.4426950408889634073599246810018920,                  // log2(e)
	0.69314718055966295651160180568695068359375,           // ln 2, upper part
	0.28235290563031577122588448175013436025525412068e-12, // ln 2, lower part
	0.0625,
	2.4801587301587301587e-5, // the Taylor coefficients, 1/8! to 1/2!
	1.9841269841269841270e-4,
	1.3888888888888888889e-3,
	8.3333333333333333333e-3,
	4.1666666666666666667e-2,
	1.6666666666666666667e-1,
	0.5,
	1.0,
	2.0,
}

// packTransposedZ is packTransposed16 for k a multiple of 16, in AVX-512
// 16×16 register transposes; sgemm_amd64.s.
//
//go:noescape
func packTransposedZ(dst, src *float32, ld, k int)

// fmaPeakZ runs n rounds of 12 register-only 16-lane FMAs
// (sgemm_amd64.s): BenchmarkFMAPeak's measure of the core's ceiling, which
// says how close the product kernels run to it.
func fmaPeakZ(n int)
