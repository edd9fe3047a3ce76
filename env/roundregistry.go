package env

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// The allocation-policy registry: every round-based policy (the
// heuristics in roundpolicies.go, the LP-based ones in lppolicy*.go) is
// reachable by its Gavel name through AllocationPolicyByName, which
// `tegrl gavel --scheduler` and the round simulator use.
//
// A file that defines a policy registers it from its own init function:
//
//	func init() {
//		RegisterAllocationPolicy("max_min_fairness_perf",
//			func() AllocationPolicy { return &MaxMinFairnessPerf{} })
//	}
//
// The constructor is called once per simulation run, so a policy may keep
// state across rounds (FIFO remembers where each job was placed) and runs
// in parallel simulations never share an instance.

var (
	policyMu       sync.RWMutex
	policyRegistry = map[string]func() AllocationPolicy{}
)

// RegisterAllocationPolicy makes a policy constructor available under name.
// It panics on an empty name, a nil constructor or a name registered twice,
// which are programming errors caught at start-up.
func RegisterAllocationPolicy(name string, f func() AllocationPolicy) {
	if name == "" || f == nil {
		panic("env: RegisterAllocationPolicy needs a name and a constructor")
	}
	policyMu.Lock()
	defer policyMu.Unlock()
	if _, dup := policyRegistry[name]; dup {
		panic("env: allocation policy registered twice: " + name)
	}
	policyRegistry[name] = f
}

// AllocationPolicyByName returns a fresh instance of the policy registered
// under name; else of the learned policy in the file name when it ends in
// .json, or in name/policy.json when name is a training output folder
// (ParseScoredPolicy, or ParseTieredPolicy for a tiered file); else an
// error naming the known policies.
func AllocationPolicyByName(name string) (AllocationPolicy, error) {
	policyMu.RLock()
	f, ok := policyRegistry[name]
	policyMu.RUnlock()
	if !ok && IsPolicyFile(name) {
		return loadScoredPolicyFile(name)
	}
	if !ok && isPolicyDir(name) {
		return loadScoredPolicyFile(filepath.Join(name, "policy.json"))
	}
	if !ok {
		return nil, fmt.Errorf("unknown allocation policy %q (known: %s)", name, strings.Join(AllocationPolicyNames(), ", "))
	}
	return f(), nil
}

// AllocationPolicyNames lists the registered policy names, sorted.
func AllocationPolicyNames() []string {
	policyMu.RLock()
	defer policyMu.RUnlock()
	names := make([]string, 0, len(policyRegistry))
	for n := range policyRegistry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RoundHints tells the round mechanism how Gavel's scheduler treats a
// policy. A policy that does not implement RoundHintsPolicy gets the zero
// Hints, which is how Gavel treats its heterogeneity-aware ("_perf")
// policies.
type RoundHints struct {
	// ShuffleTypes: visit GPU types in a random order each round (Gavel
	// does this for heterogeneity-agnostic policies) instead of fastest
	// first.
	ShuffleTypes bool
	// SkipUnallocated: never run a job on a type where its allocation is
	// zero, even on GPUs that would otherwise stay idle (Gavel's FIFO).
	SkipUnallocated bool
	// Upgrade (with SkipUnallocated): a job alone on its GPUs may also be
	// picked, after every job with a positive priority there, on a type
	// where it runs faster than on any type it was allocated. GPUs that a
	// completion frees between two allocations then work until the next
	// allocation instead of standing idle, and only jobs that gain from
	// them take them.
	Upgrade bool
}

// RoundHintsPolicy is implemented by policies that need non-default
// mechanism behaviour.
type RoundHintsPolicy interface {
	RoundHints() RoundHints
}

// RoundPair is a co-located pair of jobs (Gavel's space sharing): both
// run on the same Scale GPUs of one type at the table's pair throughputs.
type RoundPair struct {
	A, B int // job IDs, A < B
	// X[j] is the fraction of time the pair should run on type j.
	X []float64
}

// PackingPolicy is implemented by policies that co-locate pairs of jobs
// (Gandiva, the packed variants). After Allocate fills the single-job
// allocation, the mechanism calls Pairs for the same round; the returned
// slice and its X slices are read before the next Allocate call.
type PackingPolicy interface {
	AllocationPolicy
	Pairs(s *RoundState) []RoundPair
}

// SeededPolicy is implemented by policies with their own randomness; the
// simulator seeds them from its run seed before the first round.
type SeededPolicy interface {
	Seed(seed uint64)
}

// ConsolidatingPolicy is implemented by policies that run some gangs only
// on one server (Tiresias: the jobs whose model is sensitive to
// placement). For each gang of two or more GPUs that does not keep its
// GPUs, the round mechanism asks MustConsolidate with the job's table
// throughputs on the GPU type at its scale factor, consolidated on one
// server and spread over several (0 where the table has none); a gang
// that must consolidate and finds no server with the gang free waits the
// round, and the jobs behind it take the GPUs left. It acts only with
// RoundConfig.Locality: without it every gang runs at its consolidated
// throughput wherever it is placed, and placement is left as it is.
type ConsolidatingPolicy interface {
	MustConsolidate(consolidated, spread float64) bool
}

// isPolicyDir tells whether dir is a folder holding a policy.json, the
// output of tegrl train --preset gavel.
func isPolicyDir(dir string) bool {
	if dir == "" {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, "policy.json"))
	return err == nil && st.Mode().IsRegular()
}
