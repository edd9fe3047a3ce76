package env

import "fmt"

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
