package nn

import (
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// gemm computes c = alpha*op(a)*op(b) + beta*c for row-major matrices, where
// op(a) is m×k, op(b) is k×n and c is m×n; lda, ldb, ldc are the row strides
// of the stored matrices. It is the only matrix product in the project: the
// element type selects blas32 or blas64, whose implementation the openblas
// build tag may replace; float32 products go to the packed AVX2 kernel of
// [sgemm] where the CPU has one.
func gemm[T Float](s *sgemmScratch, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if beta == 0 {
			clear(c[:(m-1)*ldc+n])
		} else if beta != 1 {
			for i := 0; i < m; i++ {
				row := c[i*ldc : i*ldc+n]
				for j := range row {
					row[j] *= beta
				}
			}
		}
		return
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if transA {
		tA = blas.Trans
	}
	if transB {
		tB = blas.Trans
	}
	if unsafe.Sizeof(alpha) == 4 {
		if alpha == 1 && useSgemm(m, n, k) {
			s.sgemm(transA, transB, m, n, k, as32(a), lda, as32(b), ldb, float32(beta), as32(c), ldc)
			return
		}
		if alpha == 1 && m < 4 && n > gonumSerialCols && useSgemm(n, 1, k) {
			// Too few rows for the kernel, and enough columns that gonum
			// would start a goroutine per 64 of them (a layer's input
			// gradient for one row, as the GNN readout's). Each row of C
			// is a column of Cᵀ = op(B)ᵀ·op(A)ᵀ, which the kernel computes
			// as n rows of one column; a one-column C of stride 1 is the
			// row itself.
			for i := 0; i < m; i++ {
				ai, ldai := a[i:], lda // row i of op(A), k long: a column of A
				if !transA {
					ai, ldai = a[i*lda:], 1
				}
				s.sgemm(!transB, false, n, 1, k, as32(b), ldb, as32(ai), ldai, float32(beta), as32(c[i*ldc:]), 1)
			}
			return
		}
		blas32.Implementation().Sgemm(tA, tB, m, n, k, float32(alpha), as32(a), lda, as32(b), ldb, float32(beta), as32(c), ldc)
		return
	}
	blas64.Implementation().Dgemm(tA, tB, m, n, k, float64(alpha), as64(a), lda, as64(b), ldb, float64(beta), as64(c), ldc)
}

// gonumSerialCols is the most columns gonum's Sgemm multiplies in one
// goroutine when C has at most 64 rows: from 4 blocks of 64 it starts a
// goroutine per block (gonum/blas/gonum: blockSize, minParBlock).
const gonumSerialCols = 3 * 64

// as32 and as64 reinterpret a slice of a Float type as its underlying basic
// type; the caller has checked the element size.
func as32[T Float](s []T) []float32 {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&s[0])), len(s))
}

func as64[T Float](s []T) []float64 {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&s[0])), len(s))
}

// nativeBLAS is true while gonum's pure-Go BLAS is in use. Its kernels are
// about twice as fast for C = A·Bᵀ (dot products over contiguous rows) as for
// the other transpose cases (axpy updates that store to C in the inner loop),
// so gemmScratch rewrites products into that form when it pays.
var nativeBLAS = true

// transposeMin is the smallest m·n·k for which gemmScratch transposes
// operands; below it the copy costs more than it saves. Tests lower it to
// exercise the rewrite on small shapes.
var transposeMin = 1 << 15

// shortDot is the inner dimension below which the A·Bᵀ form loses.
const shortDot = 32

// gemmScratch holds reusable buffers for transposed operands, so that a
// tape's products do not allocate.
type gemmScratch[T Float] struct {
	a, b []T
	sg   sgemmScratch

	// mulAdds counts the multiply-adds of every product since the tape's
	// last Reset (Tape.MulAdds).
	mulAdds int64
}

// gemm is [gemm] with operands rewritten to the A·Bᵀ form when nativeBLAS.
func (s *gemmScratch[T]) gemm(transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	s.mulAdds += int64(m) * int64(n) * int64(k)
	// sgemm's packing handles every layout at the same speed.
	kernel := unsafe.Sizeof(alpha) == 4 && alpha == 1 && useSgemm(m, n, k)
	if nativeBLAS && !kernel && m*n*k >= transposeMin {
		if k < shortDot && n >= 4*shortDot && !transA {
			// Dot products this short cost more in call overhead than the
			// axpy form loses to stores: use A·B with B stored k×n.
			if transB { // stored n×k → k×n
				s.b = grow(s.b, n*k)
				transpose(s.b, b, n, k, ldb)
				b, ldb = s.b, n
			}
			gemm(&s.sg, false, false, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			return
		}
		if transA { // stored k×m → m×k
			s.a = grow(s.a, m*k)
			transpose(s.a, a, k, m, lda)
			a, lda, transA = s.a, k, false
		}
		if !transB { // stored k×n → n×k
			s.b = grow(s.b, n*k)
			transpose(s.b, b, k, n, ldb)
			b, ldb, transB = s.b, k, true
		}
	}
	gemm(&s.sg, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// product computes c = x·w, plus bias in every row when bias is not nil,
// plus c's old values when acc (not both), then max(·, 0) (Go's max) when
// relu; x is m×k, w k×n and c m×n, all stored contiguously. The packed
// kernel adds the bias as it stores (sgemmBias) and applies the ReLU
// there too; other products start from rows filled with the bias. Both
// give the bits of the latter followed by a ReLU pass.
func (s *gemmScratch[T]) product(m, n, k int, x, w, bias []T, acc, relu bool, c []T) {
	if bias != nil && acc {
		panic("nn: product with a bias onto c")
	}
	c = c[:m*n]
	if unsafe.Sizeof(c[0]) == 4 && k > 0 && n > 0 && useSgemm(m, n, k) {
		beta := float32(0)
		if acc {
			beta = 1
		}
		s.mulAdds += int64(m) * int64(n) * int64(k)
		s.sg.sgemmBias(false, false, m, n, k, as32(x), k, as32(w), n, beta, as32(bias), relu, as32(c), n)
		return
	}
	beta := T(0)
	if acc || bias != nil {
		beta = 1
	}
	if bias != nil {
		fillRows(c, bias)
	}
	s.gemm(false, false, m, n, k, 1, x, k, w, n, beta, c, n)
	if relu {
		reluVec(c)
	}
}

func grow[T Float](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// transpose writes the r×c matrix src (row stride ld) into dst as c×r.
// It works in square tiles and writes each tile's output rows contiguously:
// the naive loop writes with a power-of-two stride, which maps every store
// to the same cache set and runs about six times slower.
func transpose[T Float](dst, src []T, r, c, ld int) {
	const tile = 32
	for i0 := 0; i0 < r; i0 += tile {
		i1 := min(i0+tile, r)
		for j0 := 0; j0 < c; j0 += tile {
			j1 := min(j0+tile, c)
			for j := j0; j < j1; j++ {
				d := dst[j*r+i0 : j*r+i1]
				for ii := range d {
					d[ii] = src[(i0+ii)*ld+j]
				}
			}
		}
	}
}
