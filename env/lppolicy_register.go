package env

// The LP policies under their Gavel names. The heterogeneity-agnostic ones
// ask the round mechanism to visit GPU types in a shuffled order, as Gavel's
// scheduler does for every policy whose name lacks "Perf" or "Packing".
func init() {
	RegisterAllocationPolicy("max_min_fairness_perf", func() AllocationPolicy { return &MaxMinFairnessPerf{} })
	RegisterAllocationPolicy("min_total_duration", func() AllocationPolicy { return agnostic{&MinTotalDuration{}} })
	RegisterAllocationPolicy("min_total_duration_perf", func() AllocationPolicy { return &MinTotalDuration{Perf: true} })
	RegisterAllocationPolicy("finish_time_fairness", func() AllocationPolicy { return agnostic{&FinishTimeFairness{}} })
	RegisterAllocationPolicy("finish_time_fairness_perf", func() AllocationPolicy { return &FinishTimeFairness{Perf: true} })
	RegisterAllocationPolicy("allox", func() AllocationPolicy { return &AlloX{} })
	RegisterAllocationPolicy("max_min_fairness_packed", func() AllocationPolicy { return &MaxMinFairnessPacked{} })
}

// agnostic wraps a heterogeneity-agnostic policy with the mechanism hint
// Gavel gives such policies.
type agnostic struct{ AllocationPolicy }

// RoundHints asks for a shuffled type order each round.
func (agnostic) RoundHints() RoundHints { return RoundHints{ShuffleTypes: true} }
