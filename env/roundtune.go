package env

import (
	"fmt"
	"math"
)

// TunablePolicy is an allocation policy with named numeric parameters,
// which tegrl tune searches over.
type TunablePolicy interface {
	AllocationPolicy
	// SetParam sets the named parameter; an unknown name or a value out
	// of range is an error that lists the names or the range.
	SetParam(name string, v float64) error
}

// PolicyParam is one named parameter value of a TunablePolicy.
type PolicyParam struct {
	Name  string
	Value float64
}

// NewAllocationPolicy builds the registered policy name with params set
// in order; params on a policy that has none is an error.
func NewAllocationPolicy(name string, params []PolicyParam) (AllocationPolicy, error) {
	p, err := AllocationPolicyByName(name)
	if err != nil || len(params) == 0 {
		return p, err
	}
	tp, ok := p.(TunablePolicy)
	if !ok {
		return nil, fmt.Errorf("allocation policy %s has no parameters to set", name)
	}
	for _, q := range params {
		if err := tp.SetParam(q.Name, q.Value); err != nil {
			return nil, fmt.Errorf("allocation policy %s: %w", name, err)
		}
	}
	return p, nil
}

// SetParam implements TunablePolicy: "queue1-h" and "queue2-h" are the
// attained service, in GPU-hours, that demotes a job out of the first and
// second queue (defaults 1 and 10). A threshold below the one before it
// leaves its queue empty.
func (p *Tiresias) SetParam(name string, v float64) error {
	k := map[string]int{"queue1-h": 0, "queue2-h": 1}
	i, ok := k[name]
	switch {
	case !ok:
		return fmt.Errorf("tiresias: unknown parameter %q (known: queue1-h, queue2-h)", name)
	case !(v > 0) || math.IsInf(v, 0):
		return fmt.Errorf("tiresias: %s %v must be a positive number of GPU-hours", name, v)
	}
	if p.Thresholds == nil {
		p.Thresholds = []float64{3600, 36000}
	}
	p.Thresholds[i] = v * 3600
	return nil
}
