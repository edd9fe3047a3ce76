package env

import "fmt"

// GavelRun is one run of Gavel's continuous-jobs experiment: a policy on a
// cluster at one arrival rate and seed.
type GavelRun struct {
	Policy        string  // registered allocation policy name
	Rate          float64 // jobs per hour
	Seed          uint64
	Multi         bool   // continuous-multiple (scale factors 1-8)
	Cluster       string // "V:P:K" or type=count,...; "36:36:36" if empty
	GPUsPerServer int    // 1 if 0
	Round         RoundConfig
	// New, when set, builds the run's policy instead of Policy's
	// registered one (Policy then only names it in errors).
	New func() AllocationPolicy
}

// Run executes the run against the bundled Gavel throughput table. The
// mechanism's seed is the run's, so fifo's and gandiva's randomness and
// the type shuffles follow the seed.
func (g GavelRun) Run(t *ThroughputTable) (RoundResult, error) {
	if g.Cluster == "" {
		g.Cluster = "36:36:36"
	}
	if g.GPUsPerServer == 0 {
		g.GPUsPerServer = 1
	}
	c, err := ParseGPUClusterSpec(g.Cluster, t, g.GPUsPerServer)
	if err != nil {
		return RoundResult{}, err
	}
	var pol AllocationPolicy
	if g.New != nil {
		pol = g.New()
	} else if pol, err = AllocationPolicyByName(g.Policy); err != nil {
		return RoundResult{}, err
	}
	gen, err := NewGavelGenerator(t, GavelWorkloadConfig{Rate: g.Rate, Multi: g.Multi, Seed: g.Seed})
	if err != nil {
		return RoundResult{}, err
	}
	g.Round.Seed = g.Seed
	sim, err := NewRoundSim(c, pol, gen, g.Round)
	if err != nil {
		return RoundResult{}, err
	}
	res, err := sim.Run()
	if err != nil {
		return res, fmt.Errorf("gavel %s at %.2f jobs/h seed %d: %w", g.Policy, g.Rate, g.Seed, err)
	}
	return res, nil
}
