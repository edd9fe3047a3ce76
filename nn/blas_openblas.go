//go:build openblas

package nn

// With the openblas build tag, matrix products go to OpenBLAS through
// gonum's netlib binding (set up by the internal/openblas package, since a
// package with assembly cannot use cgo) instead of sgemm's kernel and
// gonum's pure-Go BLAS. Only the products change: gemm stays the single
// entry point, and the other AVX2 kernels still run. Building needs cgo and
// libopenblas-dev (apt-get install libopenblas-dev):
//
//	go test -tags openblas ./nn/

import _ "github.com/tegrl/tegrl/nn/internal/openblas"

// openblasBuild routes float32 products to OpenBLAS rather than sgemm's
// kernel.
const openblasBuild = true

func init() {
	nativeBLAS = false
}
