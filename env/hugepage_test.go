package env

import (
	"testing"
	"unsafe"
)

func TestHugeSlice(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 3 * hugePage / 64, 5*hugePage/64 + 7} {
		s := hugeSlice[MachineState](n)
		if len(s) != n || cap(s) < n {
			t.Fatalf("n=%d: len %d cap %d", n, len(s), cap(s))
		}
		for i := range s {
			if s[i] != (MachineState{}) {
				t.Fatalf("n=%d: element %d not zero", n, i)
			}
		}
		if n > 0 {
			s[n-1].FreeCPU = 1 // the whole range is writable
		}
	}
	if unsafe.Sizeof(MachineState{}) != 64 || unsafe.Sizeof(machHot{}) != 128 {
		t.Fatalf("records are %d and %d bytes, want 64 and 128 (whole cache lines)", unsafe.Sizeof(MachineState{}), unsafe.Sizeof(machHot{}))
	}
}
