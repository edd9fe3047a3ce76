//go:build !amd64 || purego

package nn

// Without the assembly kernels (other architectures, or the purego tag)
// float32 products go to gonum's blas32 (or OpenBLAS), and the other
// operations run their Go loops.
const (
	haveAVX2        = false
	haveAVX512      = false
	haveSgemmKernel = false
)

// haveSgemmZ is a variable, as on amd64, so that tests can turn it off
// and back in every build.
var haveSgemmZ = false

func sgemmKernel6x16(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool) {
	panic("nn: sgemmKernel6x16 without the assembly kernel")
}

func sgemmKernel6x32Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool, ldb int) {
	panic("nn: sgemmKernel6x32Z without the assembly kernel")
}

func sgemmKernel12x32Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool, ldb int) {
	panic("nn: sgemmKernel12x32Z without the assembly kernel")
}

func sgemmKernel4x32Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool, ldb int) {
	panic("nn: sgemmKernel4x32Z without the assembly kernel")
}

func sgemmKernel12x16Z(k int, a *float32, lda, step int, b, c *float32, ldc int, add *float32, ldadd int, relu bool, ldb int) {
	panic("nn: sgemmKernel12x16Z without the assembly kernel")
}

func addAVX(dst, a, b *float32, n int) {
	panic("nn: addAVX without the assembly kernel")
}

func addPairAVX(dst, b, c *float32, n int) {
	panic("nn: addPairAVX without the assembly kernel")
}

func addReluAVX(dst, src *float32, n int) {
	panic("nn: addReluAVX without the assembly kernel")
}

func axpyAVX(y *float32, a float32, x *float32, n int) {
	panic("nn: axpyAVX without the assembly kernel")
}

func maxAVX(y, x *float32, n int) {
	panic("nn: maxAVX without the assembly kernel")
}

func reluAVX(y, x *float32, n int) {
	panic("nn: reluAVX without the assembly kernel")
}

func reluGradAVX(dst, x, grad *float32, n int) {
	panic("nn: reluGradAVX without the assembly kernel")
}

func maxArgAVX(out *float32, arg *int32, row *float32, n int, e int32) {
	panic("nn: maxArgAVX without the assembly kernel")
}

func maxArgZ(out *float32, arg *int32, row *float32, n int, e int32) {
	panic("nn: maxArgZ without the assembly kernel")
}

func routeMaskAVX(mask *float32, arg *int32, e int32, out *float32, n int) int {
	panic("nn: routeMaskAVX without the assembly kernel")
}

func routeAVX(y *float32, w float32, grad *float32, mask *float32, n int) {
	panic("nn: routeAVX without the assembly kernel")
}

func spmmRowAVX(dst, x *float32, idx *int, w *float32, n, stride, cols int) {
	panic("nn: spmmRowAVX without the assembly kernel")
}

func spmmRangeZ(o, x *float32, ptr, idx *int, w *float32, rows, stride, cols, mode int) {
	panic("nn: spmmRangeZ without the assembly kernel")
}

func spmmMaxArgZ(out *float32, arg *int32, x *float32, ptr, idx *int, w *float32, n int, e int32, fresh bool, stride, cols int) {
	panic("nn: spmmMaxArgZ without the assembly kernel")
}

func spmmRouteZ(ga, grad *float32, arg *int32, out *float32, ptr, idx *int, w *float32, n int, e int32, stride, cols int) {
	panic("nn: spmmRouteZ without the assembly kernel")
}

func edgeMaxZ(out *float32, arg *int32, x *float32, src *int, feat *float32, w *float32, n int, e int32, fresh bool, fd, stride, cols int) {
	panic("nn: edgeMaxZ without the assembly kernel")
}

func edgeRouteZ(gx, gw, grad *float32, arg *int32, out *float32, src *int, feat *float32, n int, e int32, fd, stride, cols int) {
	panic("nn: edgeRouteZ without the assembly kernel")
}

func spmmScatterAVX(y, grad *float32, idx *int, w *float32, n, stride, cols int) {
	panic("nn: spmmScatterAVX without the assembly kernel")
}

func spmmScatterRowsZ(y, grad *float32, ptr, idx *int, w *float32, rows, stride, cols int) {
	panic("nn: spmmScatterRowsZ without the assembly kernel")
}

func colSumZ(dst, src *float32, rows, cols int) {
	panic("nn: colSumZ without the assembly kernel")
}

func maxUintZ(p *int, n int) uint {
	panic("nn: maxUintZ without the assembly kernel")
}

func minStepZ(p *int, n int) int {
	panic("nn: minStepZ without the assembly kernel")
}

func packRows16AVX(dst, src *float32, ld, k int) {
	panic("nn: packRows16AVX without the assembly kernel")
}

func adamZ(d, m, v, grad *float32, n int, b1, c1, b2, c2, a, decay float32, eps float64, wd bool) {
	panic("nn: adamZ without the assembly kernel")
}

func tanhZ(y, x *float32, n int, c *float64) { panic("nn: tanhZ without the assembly kernel") }

var tanhConsts [21]float64

const haveTanhZ = false

func packTransposedZ(dst, src *float32, ld, k int) {
	panic("nn: packTransposedZ without the assembly kernel")
}
