package serve

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/tegrl/tegrl/env"
)

// POST /v1/allocate serves a GPU training cluster's round allocation:
// given the GPU types and their counts and the active jobs, a round
// allocation policy (env.AllocationPolicyNames: fifo_perf, tiresias,
// langevin, the LP policies ...) answers which share of time each job
// should run on each type, as in env.RoundSim. Throughputs come from the
// bundled throughput table by job type and GPU type name. The call is
// stateless: each request builds the policy afresh (seeded by the
// request), so policies that carry history from round to round (fifo's
// types, langevin's leases and damping) see none, and the same request
// always gets the same answer.
//
// The policy may also name a learned allocation policy the operator loaded
// (allocpolicies.go: a scored or tiered policy file, tegrl serve
// --allocation-policy NAME=FILE, or PUT /v1/allocation-policies/NAME). A
// scored policy reads where each job ran last round (features same_type
// and running): the client keeps that history and sends it as each job's
// prev_type, and the answer names the version that served by its file's
// SHA-256. Policies that space-share GPUs (Gandiva, the packed LPs, tiered
// files) also answer pairs of jobs.

// Limits of an allocation request.
const (
	maxAllocJobs  = 1000
	maxAllocTypes = 16
	maxAllocBody  = 2 << 20
	// maxPackedColumns bounds the pair columns of a packed LP (Gavel's
	// max_min_fairness_packed, tiered policy files), whose cost grows
	// with the cube of its job classes: 8,000 columns take up to 0.13 s
	// on 2 cores. Every job type and gang size of the bundled table in
	// both tiers of a tiered policy (166 jobs, 0.12 s) stays within it;
	// distinct priorities make a class per job.
	maxPackedColumns = 8000
	// maxLPClasses bounds the classes of the other LP policies: 300 take
	// under 0.1 s, 1,000 (the simulator's bound) 5-11 s.
	maxLPClasses = 300
)

// lpClassKeys are the LP policies whose cost grows steeply with their
// classes, with what makes two jobs of a request one class: the LP's
// coefficients of max_min_fairness_perf depend on the job type, gang size
// and priority; finish-time fairness and min total duration read each
// job's progress and age as well.
var lpClassKeys = map[string]func(j *AllocateJob) any{
	"max_min_fairness_perf":     perfClass,
	"finish_time_fairness":      jobClass,
	"finish_time_fairness_perf": jobClass,
	"min_total_duration":        jobClass,
	"min_total_duration_perf":   jobClass,
}

func perfClass(j *AllocateJob) any {
	return struct {
		m    string
		s    int
		prio float64
	}{j.Model, j.Scale, j.Priority}
}

func jobClass(j *AllocateJob) any {
	return struct {
		m                         string
		s                         int
		prio, arr, total, left, a float64
	}{j.Model, j.Scale, j.Priority, j.ArrivalS, j.StepsTotal, j.StepsLeft, j.AttainedGPUS}
}

// checkLPSize refuses a round with more classes than maxLPClasses for
// the LP policies of lpClassKeys.
func checkLPSize(req *AllocateRequest) error {
	key, ok := lpClassKeys[req.Policy]
	if !ok {
		return nil
	}
	classes := map[any]bool{}
	for i := range req.Jobs {
		if classes[key(&req.Jobs[i])] = true; len(classes) > maxLPClasses {
			return &fieldError{"jobs", fmt.Sprintf("policy %s: more than %d distinct jobs make its LP too slow to serve; split the round or use max_min_fairness_packed", req.Policy, maxLPClasses)}
		}
	}
	return nil
}

// errPackedTooLarge is the answer to a round whose packed LP
// (env.MaxMinFairnessPacked.MaxPairColumns) would exceed maxPackedColumns.
var errPackedTooLarge = &fieldError{"jobs", fmt.Sprintf("the packed LP would have more than %d pair columns: its cost grows with the cube of the distinct (model, scale, priority) classes; send fewer distinct priorities or split the round", maxPackedColumns)}

// AllocateRequest is the body of POST /v1/allocate.
type AllocateRequest struct {
	// Policy is a built-in allocation policy (env.AllocationPolicyNames)
	// or the name of a loaded learned allocation policy; never a file
	// path.
	Policy string `json:"policy"`
	// Seed seeds the policy's randomness (the round mechanism's seed).
	Seed uint64 `json:"seed"`
	// TimeS is the current time, seconds.
	TimeS float64 `json:"time_s"`
	// GPUs lists the cluster's GPU types (names of the throughput table,
	// e.g. v100, p100, k80) with their counts.
	GPUs []AllocateGPU `json:"gpus"`
	// Jobs are the active jobs.
	Jobs []AllocateJob `json:"jobs"`
}

// AllocateGPU is one GPU type of the cluster.
type AllocateGPU struct {
	Type  string `json:"type"`
	Count int    `json:"count"`
}

// AllocateJob is one active job of an allocation request.
type AllocateJob struct {
	ID int `json:"id"`
	// Model is the job type, as in the throughput table ("ResNet-18
	// (batch size 16)").
	Model        string  `json:"model"`
	Scale        int     `json:"scale"`
	ArrivalS     float64 `json:"arrival_s"`
	StepsTotal   float64 `json:"steps_total"`
	StepsLeft    float64 `json:"steps_left"`
	AttainedGPUS float64 `json:"attained_gpu_s"`
	Priority     float64 `json:"priority"`
	// PrevType is the GPU type the job ran on last round, one of the
	// request's gpus types; empty: it did not run. Learned policies read
	// it; built-in policies ignore it (the call is stateless for them).
	PrevType string `json:"prev_type,omitempty"`
}

// AllocateShare is one job's share of time on one GPU type.
type AllocateShare struct {
	Job      int     `json:"job"`
	Type     string  `json:"type"`
	Fraction float64 `json:"fraction"`
}

// AllocatePair is the share of time two jobs of the same gang size should
// run together on the same GPUs of one type (space sharing, as Gandiva and
// the packed policies do).
type AllocatePair struct {
	Jobs     [2]int  `json:"jobs"` // job IDs, the lower first
	Type     string  `json:"type"`
	Fraction float64 `json:"fraction"`
}

// AllocateResponse is the answer: the positive shares, jobs in request
// order, types in request order, then the pairs of a policy that
// space-shares GPUs. A job's shares and the pairs it is in add up to at
// most 1; a pair uses its gang size's GPUs once.
type AllocateResponse struct {
	Policy string `json:"policy"`
	// SHA256 is the learned policy version that served (its file's
	// SHA-256); empty for a built-in policy.
	SHA256     string          `json:"sha256,omitempty"`
	Allocation []AllocateShare `json:"allocation"`
	Pairs      []AllocatePair  `json:"pairs,omitempty"`
}

// state validates req against the table and builds the policy's input.
func (req *AllocateRequest) state(tab *env.ThroughputTable) (*env.RoundState, error) {
	switch {
	case len(req.GPUs) == 0 || len(req.GPUs) > maxAllocTypes:
		return nil, &fieldError{"gpus", fmt.Sprintf("%d GPU types: want 1 to %d", len(req.GPUs), maxAllocTypes)}
	case len(req.Jobs) > maxAllocJobs:
		return nil, &fieldError{"jobs", fmt.Sprintf("%d jobs: at most %d", len(req.Jobs), maxAllocJobs)}
	case !finiteNonNeg(req.TimeS):
		return nil, &fieldError{"time_s", "must be finite and >= 0"}
	}
	st := &env.RoundState{Time: req.TimeS}
	gs := make([]int, len(req.GPUs))
	for i, g := range req.GPUs {
		k, err := tab.GPU(g.Type)
		if err != nil {
			return nil, &fieldError{fmt.Sprintf("gpus[%d].type", i), err.Error()}
		}
		for _, prev := range st.Types {
			if prev == g.Type {
				return nil, &fieldError{fmt.Sprintf("gpus[%d].type", i), fmt.Sprintf("%q listed twice", g.Type)}
			}
		}
		if g.Count < 0 || g.Count > env.MaxClusterGPUs {
			return nil, &fieldError{fmt.Sprintf("gpus[%d].count", i), fmt.Sprintf("%d outside [0, %d]", g.Count, env.MaxClusterGPUs)}
		}
		gs[i] = k
		st.Types = append(st.Types, g.Type)
		st.Capacity = append(st.Capacity, g.Count)
	}
	seen := make(map[int]bool, len(req.Jobs))
	for i, j := range req.Jobs {
		f := func(name string) string { return fmt.Sprintf("jobs[%d].%s", i, name) }
		m := tab.Model(j.Model)
		switch {
		case j.ID < 0 || seen[j.ID]:
			return nil, &fieldError{f("id"), fmt.Sprintf("%d is negative or repeated", j.ID)}
		case m < 0:
			return nil, &fieldError{f("model"), fmt.Sprintf("unknown job type %q", j.Model)}
		case j.Scale < 1 || !tab.HasScale(m, j.Scale):
			return nil, &fieldError{f("scale"), fmt.Sprintf("the table has no %d-GPU entry for %q", j.Scale, j.Model)}
		case !finiteNonNeg(j.ArrivalS) || j.ArrivalS > req.TimeS:
			return nil, &fieldError{f("arrival_s"), "must be finite, >= 0 and not after time_s"}
		case !(j.StepsTotal > 0) || math.IsInf(j.StepsTotal, 0):
			return nil, &fieldError{f("steps_total"), "must be finite and > 0"}
		case !finiteNonNeg(j.StepsLeft) || j.StepsLeft > j.StepsTotal:
			return nil, &fieldError{f("steps_left"), "must be in [0, steps_total]"}
		case !finiteNonNeg(j.AttainedGPUS):
			return nil, &fieldError{f("attained_gpu_s"), "must be finite and >= 0"}
		case !finiteNonNeg(j.Priority):
			return nil, &fieldError{f("priority"), "must be finite and >= 0"}
		case j.PrevType != "" && !slices.Contains(st.Types, j.PrevType):
			return nil, &fieldError{f("prev_type"), fmt.Sprintf("%q is not one of the request's gpus types", j.PrevType)}
		}
		seen[j.ID] = true
		prio := j.Priority
		if prio == 0 {
			prio = 1
		}
		st.Jobs = append(st.Jobs, env.RoundJob{ID: j.ID, Type: m, Scale: j.Scale, Arrival: j.ArrivalS, StepsTotal: j.StepsTotal,
			StepsLeft: j.StepsLeft, Attained: j.AttainedGPUS, Priority: prio})
		for _, g := range gs {
			st.Throughput = append(st.Throughput, tab.Throughput(m, g, j.Scale, false))
		}
	}
	st.Pair = func(a, b, t int) (float64, float64, bool) {
		ja, jb := &st.Jobs[a], &st.Jobs[b]
		if ja.Scale != jb.Scale {
			return 0, 0, false
		}
		return tab.PairThroughput(ja.Type, jb.Type, gs[t], ja.Scale)
	}
	return st, nil
}

// previous maps the job IDs of a validated request to the index in
// st.Types of the type each ran on last round (prev_type).
func (req *AllocateRequest) previous(st *env.RoundState) map[int]int {
	prev := map[int]int{}
	for _, j := range req.Jobs {
		if j.PrevType != "" {
			prev[j.ID] = slices.Index(st.Types, j.PrevType)
		}
	}
	return prev
}

// Allocate answers an allocation request by a built-in policy. A policy
// that panics is an internal error for this request; nothing is kept
// between requests.
func Allocate(tab *env.ThroughputTable, req *AllocateRequest) (*AllocateResponse, error) {
	return allocate(tab, req, nil)
}

// allocate answers req by the learned policy of its name in learned, or
// else by a built-in policy.
func allocate(tab *env.ThroughputTable, req *AllocateRequest, learned *allocPolicies) (resp *AllocateResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, fmt.Errorf("policy %s failed on this request: %v", req.Policy, p)
		}
	}()
	if lp := learned.get(req.Policy); lp != nil {
		st, err := req.state(tab)
		if err != nil {
			return nil, err
		}
		x, pairs, err := allocateLearned(lp, st, req.previous(st))
		if lp.tiered != nil && errors.Is(err, env.ErrRoundTooLarge) {
			return nil, errPackedTooLarge
		}
		if err != nil {
			return nil, err
		}
		resp = shares(req.Policy, st, x, pairs)
		resp.SHA256 = lp.sha256
		return resp, nil
	}
	if !slices.Contains(env.AllocationPolicyNames(), req.Policy) {
		// A path would make the service read files a client names.
		names := env.AllocationPolicyNames()
		if learned != nil {
			names = append(slices.Clip(names), learned.names()...)
		}
		return nil, &fieldError{"policy", fmt.Sprintf("%q: the API takes a built-in or loaded policy name (%s), not a file", req.Policy, strings.Join(names, ", "))}
	}
	pol, err := env.AllocationPolicyByName(req.Policy)
	if err != nil {
		return nil, &fieldError{"policy", err.Error()}
	}
	st, err := req.state(tab)
	if err != nil {
		return nil, err
	}
	packed, ok := pol.(*env.MaxMinFairnessPacked)
	if ok {
		packed.MaxPairColumns = maxPackedColumns
	}
	if err := checkLPSize(req); err != nil {
		return nil, err
	}
	if sp, ok := pol.(env.SeededPolicy); ok {
		sp.Seed(req.Seed)
	}
	nt := len(st.Types)
	x := make([]float64, len(st.Jobs)*nt)
	var pairs []env.RoundPair
	if len(st.Jobs) > 0 {
		if err := pol.Allocate(st, x); err != nil {
			if packed != nil && errors.Is(err, env.ErrRoundTooLarge) {
				return nil, errPackedTooLarge
			}
			return nil, fmt.Errorf("policy %s: %w", req.Policy, err)
		}
		if pp, ok := pol.(env.PackingPolicy); ok {
			pairs = pp.Pairs(st)
		}
	}
	return shares(req.Policy, st, x, pairs), nil
}

// shares is the answer of policy's allocation x of st and its pairs: the
// positive shares.
func shares(policy string, st *env.RoundState, x []float64, pairs []env.RoundPair) *AllocateResponse {
	nt := len(st.Types)
	resp := &AllocateResponse{Policy: policy, Allocation: []AllocateShare{}}
	for i, j := range st.Jobs {
		for t, name := range st.Types {
			if v := x[i*nt+t]; v > minShare {
				resp.Allocation = append(resp.Allocation, AllocateShare{Job: j.ID, Type: name, Fraction: v})
			}
		}
	}
	for _, p := range pairs {
		for t, v := range p.X {
			if v > minShare {
				resp.Pairs = append(resp.Pairs, AllocatePair{Jobs: [2]int{min(p.A, p.B), max(p.A, p.B)}, Type: st.Types[t], Fraction: v})
			}
		}
	}
	return resp
}

// minShare is the least share an answer lists: the LP policies leave
// round-off such as 5e-17 where a share is 0, which is no time to run
// (a billionth of a round is well under a millisecond), and dropping a
// share keeps an allocation valid.
const minShare = 1e-9

// allocTable is Gavel's throughput table with a GPU type for every model
// of the bundled GPU model mapping (env.BundledGPUModels: h800,
// a100-sxm4-80gb, t4 and the rest, in lower case), each the base type's
// throughputs times its speed, as the simulator's node-list clusters
// derive them: a student distilled on such a cluster serves its types.
var allocTable = sync.OnceValues(func() (*env.ThroughputTable, error) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return nil, err
	}
	gm := env.BundledGPUModels()
	models := slices.Sorted(maps.Keys(gm.Models))
	return tab.WithGPUModels(gm, models)
})

func (s *Service) handleAllocate(w http.ResponseWriter, r *http.Request) {
	var req AllocateRequest
	if err := decodeStrict(http.MaxBytesReader(w, r.Body, maxAllocBody), &req); err != nil {
		writeError(w, err)
		return
	}
	tab, err := allocTable()
	if err != nil {
		writeError(w, err)
		return
	}
	resp, err := allocate(tab, &req, s.alloc)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}
