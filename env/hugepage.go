package env

import "unsafe"

// hugePage is the size of a transparent huge page on amd64 and arm64.
const hugePage = 2 << 20

// hugeSlice returns a zeroed slice of n elements for a table that hot paths
// read at random, such as the per-machine records a placement checks. When
// it spans whole huge pages the kernel is asked to back them with huge
// pages (see adviseHuge): at 100k machines each candidate's records
// otherwise cost a TLB miss apiece, which made a langevin decision grow
// with the cluster (docs/PERFORMANCE.md). The memory is an ordinary Go
// allocation, collected as usual and free to grow with append; only the
// advice is extra.
func hugeSlice[T any](n int) []T {
	s := make([]T, n)
	var z T
	size := uintptr(n) * unsafe.Sizeof(z)
	if size < 2*hugePage {
		return s
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	first := (lo + hugePage - 1) &^ (hugePage - 1)
	last := (lo + size) &^ (hugePage - 1)
	if last > first {
		adviseHuge(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), first-lo), last-first)
	}
	return s
}
