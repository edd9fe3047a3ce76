// Package openblas, built with the openblas tag, makes gonum's blas32 and
// blas64 use OpenBLAS through the netlib binding (cgo, libopenblas-dev).
// It is its own package because Go does not allow cgo in a package with
// assembly, and nn keeps its AVX2 kernels in the openblas build: only the
// matrix products change. Without the tag it is empty.
package openblas
