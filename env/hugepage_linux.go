package env

import (
	"syscall"
	"unsafe"
)

// adviseHuge asks Linux to back [p, p+size), huge-page aligned, with
// transparent huge pages (madvise MADV_HUGEPAGE, effective when THP is
// "always" or "madvise"). Failure is harmless (the pages stay small), so it
// is ignored.
func adviseHuge(p unsafe.Pointer, size uintptr) {
	b := unsafe.Slice((*byte)(p), size)
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	// Pages the Go heap had already touched stay small until khugepaged
	// gets to them; MADV_COLLAPSE (Linux 6.1) collapses them now.
	_ = syscall.Madvise(b, madvCollapse)
}

// madvCollapse is MADV_COLLAPSE, which package syscall does not name.
const madvCollapse = 25
