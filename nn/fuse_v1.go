//go:build !amd64.v3

package nn

// goFusesMath: below GOAMD64=v3 the compiler keeps x*y + z as a multiply
// and an add (see fuse_v3.go).
const goFusesMath = false
