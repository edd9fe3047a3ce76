//go:build amd64 && !openblas && !purego

package nn

import "golang.org/x/sys/cpu"

// haveSgemmKernel is true where the AVX2/FMA kernel of sgemm can run.
var haveSgemmKernel = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// sgemmKernel6x16 is implemented in sgemm_amd64.s.
//
//go:noescape
func sgemmKernel6x16(k int, a *float32, lda int, b, c *float32, ldc int, acc bool)

// axpyAVX adds a·x to y for n, a multiple of 8, elements; it is implemented
// in sgemm_amd64.s and runs where haveSgemmKernel is true.
//
//go:noescape
func axpyAVX(y *float32, a float32, x *float32, n int)
