//go:build amd64.v3

package nn

// goFusesMath: from GOAMD64=v3 the compiler turns x*y + z into a fused
// multiply-add, in the math package too, so math.Tanh rounds otherwise
// than tanhZ, which follows the unfused code.
const goFusesMath = true
