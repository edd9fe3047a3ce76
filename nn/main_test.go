package nn

import (
	"os"
	"testing"
)

// TestMain poisons the tensors of allocRaw with NaN for every test of the
// package: an operation that relies on an unwritten element then fails its
// value and gradient checks instead of reading stale data.
func TestMain(m *testing.M) {
	poisonRaw = true
	os.Exit(m.Run())
}
