package env

import (
	"fmt"
	"strconv"
	"time"
)

// ParseSeconds reads a length of simulated time as command lines give it:
// a Go duration ("6h", "90m") or plain seconds. Negative lengths are
// refused.
func ParseSeconds(s string) (float64, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if v < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return v, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a Go duration such as 6h or a number of seconds", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d.Seconds(), nil
}
