//go:build race

package nn

// raceOn: the race detector slows the exhaustive checks tenfold without
// finding anything in their pure computation; they run in full without it
// (make check-long does).
const raceOn = true
