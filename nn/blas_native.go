//go:build !openblas

package nn

// openblasBuild is false in the default build: float32 products go to
// sgemm's kernel where the CPU has one (see blas_openblas.go).
const openblasBuild = false
