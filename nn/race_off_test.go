//go:build !race

package nn

const raceOn = false
