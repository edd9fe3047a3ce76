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
// build tag may replace.
func gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
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
		blas32.Implementation().Sgemm(tA, tB, m, n, k, float32(alpha), as32(a), lda, as32(b), ldb, float32(beta), as32(c), ldc)
		return
	}
	blas64.Implementation().Dgemm(tA, tB, m, n, k, float64(alpha), as64(a), lda, as64(b), ldb, float64(beta), as64(c), ldc)
}

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
