// Package nn holds the project's numeric kernels: dense tensors, a
// reverse-mode automatic differentiation tape, the operations built on it,
// optimisers, initialisers, layers and safetensors weight files.
//
// # Tensors
//
// A [Tensor] is a row-major, contiguous slice of float32 or float64 with a
// shape. Models train and serve in float32; every operation is generic over
// [Float] so the same code runs in float64, where finite-difference gradient
// checks are exact enough to catch mistakes.
//
// # Why a tape
//
// Models in this project are small and their graphs change with the input
// (graph sizes, masks, sequence lengths), so the graph is recorded while the
// forward pass runs ("define by run") instead of being built ahead of time.
// Each [Tape] method computes its result immediately and appends one record
// to the tape; [Tape.Backward] replays the records in reverse to accumulate
// gradients. Operations are coarse (a matmul, a softmax over rows, a layer
// norm) so that the tape holds few records and each backward pass is a tight
// loop over contiguous memory.
//
// # How buffers are reused
//
// A training step is expected to allocate (almost) nothing once warm. The
// tape owns every tensor it returns: results and gradient buffers come from
// an arena that [Tape.Reset] rewinds without freeing. Because a training step
// issues the same operations with the same shapes each time, the n-th tensor
// requested after a reset reuses the memory of the n-th tensor of the
// previous step. Records are plain structs in a slice (no closures), so
// recording does not allocate either. Tensors returned by a tape are
// therefore only valid until the next Reset; parameters, inputs and anything
// that must outlive a step are ordinary tensors created with [NewTensor] or
// [Zeros] and are never touched by Reset.
//
// # Masks
//
// Softmax, LogSoftmax, CrossEntropy and the categorical distribution take an
// optional mask with one entry per logit; false excludes the entry (an
// illegal action). Excluded entries get probability 0 and log-probability 0
// (not -Inf, so products such as p·log p stay 0 instead of NaN) and receive
// no gradient. A row with every entry excluded is all zeros. A nil mask
// excludes nothing.
//
// Index slices and masks passed to operations are kept by reference until
// Backward; callers must not change them in between.
//
// # Errors
//
// Shape mismatches and out-of-range indices in operations are programming
// errors and panic with a message naming the operation, as in gonum. Data
// read from outside (safetensors files) is validated and reported as errors.
//
// # BLAS
//
// Matrix products go through one function, gemm. The default build needs no
// cgo: float32 products of four rows or more run the packed kernels of
// sgemm.go (Go assembly: 6×16 register tiles in AVX2/FMA, 12×32 and 6×32
// in AVX-512 where the CPU has it, with the same bits) where the CPU has
// AVX2 and FMA; everything else (float64, narrower products, other CPUs,
// the purego tag) goes to gonum's blas32/blas64, whose kernels are about
// twice as fast for A·Bᵀ as for the other transpose cases, so large
// products are rewritten into that form by transposing operands into
// scratch buffers the tape keeps. The kernels add a bias row or the old
// result and apply a ReLU as they store, which is how Affine and SumTerms
// avoid passes of their own. Building with the openblas tag (needs cgo and
// libopenblas-dev) installs gonum.org/v1/netlib's OpenBLAS binding (in the
// internal/openblas package, since a package with assembly cannot use cgo)
// as the BLAS implementation for every product and turns sgemm and the
// rewrite off; the other kernels (sparse products, ReLU, maxima, column
// sums, additions, Adam's step; AVX2, and AVX-512 where the CPU has it)
// run in both builds.
//
// # Message passing
//
// Graph layers aggregate with SpMM (a weighted sum of source rows per
// destination, never materialising one row per edge), SpMMSegmentMax
// (the maximum of such sums per segment) and EdgeMax (the maximum of
// x[src] + Σ feat·w per destination, EdgeConv's messages, without sparse
// rows). With AVX-512 and rows of whole 64-column blocks, SpMM computes
// its rows two at a time in one call (spmmRangeZ); SpMMSegmentMax and
// EdgeMax take each destination's run of rows in one call that keeps the
// running maximum, its argmax and the message in registers (spmmMaxArgZ;
// edgeMaxZ, with the feature weights in registers too), and their
// backward passes route each run's gradient under masks of the argmax
// (spmmRouteZ, edgeRouteZ); SpMM's backward pass scatters a whole product
// in one call (spmmScatterRowsZ). Every kernel gives the bits of the
// plain Go loops it replaces, which the tests check with NaN, ±0 and ±∞
// among the values.
//
// # Memory
//
// A tape reuses its tensors from one step to the next. Operations that
// write every element of their result take them uncleared, and gradient
// buffers are zeroed by the first operation that adds to them, or not at
// all when that operation overwrites them; the package's tests fill both
// with NaN first, so that an operation that reads an unwritten element
// fails its checks. [Tape.Backward] keeps a gradient for every result, for
// inspection; a training step calls [Tape.BackwardLeaves], which lends
// intermediate results buffers from a free list only while the backward
// pass needs them (the 1,200-machine GNN encoder's gradients: 20 buffers,
// 4.7 MB, instead of 87 and 11.6 MB).
package nn
