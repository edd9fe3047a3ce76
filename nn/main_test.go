package nn

import (
	"flag"
	"os"
	"testing"
)

// TestMain poisons the tensors of allocRaw with NaN for the tests of the
// package: an operation that relies on an unwritten element then fails its
// value and gradient checks instead of reading stale data. Runs with
// -bench measure the production path and do not poison.
func TestMain(m *testing.M) {
	flag.Parse()
	poisonRaw = flag.Lookup("test.bench").Value.String() == ""
	os.Exit(m.Run())
}
