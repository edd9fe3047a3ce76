//go:build openblas

package openblas

// #cgo LDFLAGS: -lopenblas
import "C"

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

func init() {
	blas32.Use(netlib.Implementation{})
	blas64.Use(netlib.Implementation{})
}
