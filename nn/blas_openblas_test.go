//go:build openblas

package nn

import (
	"testing"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

func TestOpenBLASInstalled(t *testing.T) {
	if _, ok := blas32.Implementation().(netlib.Implementation); !ok {
		t.Errorf("blas32 uses %T, want netlib", blas32.Implementation())
	}
	if _, ok := blas64.Implementation().(netlib.Implementation); !ok {
		t.Errorf("blas64 uses %T, want netlib", blas64.Implementation())
	}
}
