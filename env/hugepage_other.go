//go:build !linux

package env

import "unsafe"

// adviseHuge is a no-op outside Linux.
func adviseHuge(unsafe.Pointer, uintptr) {}
