//go:build openblas

package nn

// With the openblas build tag, matrix products go to OpenBLAS through
// gonum's netlib binding instead of gonum's pure-Go BLAS. Only the
// implementation changes: gemm stays the single entry point. Building needs
// cgo and libopenblas-dev (apt-get install libopenblas-dev):
//
//	go test -tags openblas ./nn/

// #cgo LDFLAGS: -lopenblas
import "C"

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

func init() {
	nativeBLAS = false
	blas32.Use(netlib.Implementation{})
	blas64.Use(netlib.Implementation{})
}
