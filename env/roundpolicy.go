package env

// Round-based allocation for GPU training clusters, after Gavel
// (Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for
// Deep Learning Workloads", OSDI 2020): every round the policy computes an
// allocation X, the fraction of time each active job should spend on each
// GPU type, and the round mechanism turns X into concrete gangs of GPUs.

// RoundJob is what an allocation policy sees of one active (arrived, not
// finished) job.
type RoundJob struct {
	ID         int     // arrival order, from 0
	Type       int     // job type: index into the throughput table's types
	Scale      int     // GPUs the job needs at once (all or nothing)
	Arrival    float64 // arrival time, simulated seconds
	StepsTotal float64 // steps the job needs in all
	// StepsLeft is the remaining work. Only clairvoyant policies and those
	// Gavel defines on it (finish-time fairness, min total duration) read it.
	StepsLeft float64
	// Attained is the service received so far, in GPU-seconds (the
	// least-attained-service policies' priority).
	Attained float64
	Priority float64 // weight; 1 unless the workload sets one
}

// RoundState is one round's input to an allocation policy. Slices are owned
// by the simulator and valid during the call only.
type RoundState struct {
	Time     float64    // simulated seconds
	Jobs     []RoundJob // active jobs, in ID order
	Types    []string   // GPU (worker) types, e.g. "v100", "p100", "k80"
	Capacity []int      // GPUs of each type in the cluster
	// Throughput[i*len(Types)+j] is job i's steps/s alone on type j at its
	// scale factor, consolidated on one server; 0 where the job cannot run.
	Throughput []float64
	// Pair, when not nil, gives the steps/s of jobs i and k sharing GPUs of
	// type j (Gavel's space-sharing table); ok is false where the pair
	// cannot share. Only the packed policies use it.
	Pair func(i, k, j int) (ti, tk float64, ok bool)
}

// demand returns the GPUs the active jobs ask for (their gangs' sizes)
// and the cluster's GPUs.
func (s *RoundState) demand() (asked, gpus int) {
	for i := range s.Jobs {
		asked += s.Jobs[i].Scale
	}
	for _, c := range s.Capacity {
		gpus += c
	}
	return asked, gpus
}

// AllocationPolicy computes a round's allocation: x has len(Jobs)*len(Types)
// entries, x[i*len(Types)+j] the fraction of time job i should run on type
// j. A valid allocation has x >= 0, each row summing to at most 1, and
// sum_i x[i,j]*Scale_i <= Capacity_j for every type j. Allocate must be
// deterministic given its input.
type AllocationPolicy interface {
	Name() string
	Allocate(s *RoundState, x []float64) error
}

// ClairvoyantPolicy is implemented by policies that read what a real
// scheduler cannot know (a job's remaining work): bounds to measure the
// others against.
type ClairvoyantPolicy interface {
	IsClairvoyant() bool
}

// IsClairvoyant tells whether p is a ClairvoyantPolicy that says so.
func IsClairvoyant(p AllocationPolicy) bool {
	c, ok := p.(ClairvoyantPolicy)
	return ok && c.IsClairvoyant()
}
