package env

import "maps"

// SetPrevious sets the GPU types jobs ran on last round: prev maps a job
// ID to the index in RoundState.Types of the type it was allocated, and a
// job absent from it did not run. It is for a caller that keeps the
// history itself, such as a stateless service that receives it with each
// request; the next Allocate reads it (features same_type and running) in
// place of the policy's own record of its last round. nil clears the
// history. prev is copied.
func (p *ScoredPolicy) SetPrevious(prev map[int]int) {
	if prev == nil {
		p.prev, p.next = nil, nil
		return
	}
	p.prev = maps.Clone(prev)
	if p.next == nil {
		p.next = map[int]int{}
	}
}
