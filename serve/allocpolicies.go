package serve

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tegrl/tegrl/env"
)

// Learned allocation policies: scored policy files (env.ScoredPolicy) and
// tiered policy files (env.TieredPackedPolicy) an operator loads at start
// (Config.AllocationPolicies) or an admin puts (PUT
// /v1/allocation-policies/{name}), served by POST /v1/allocate under their
// name. The service keeps only the validated parameters: every request
// gets a policy of them that no other request holds, a scored one with
// the previous round's types the request carries (AllocateJob.PrevType),
// so requests share no mutable state. A new version replaces the map of policies as a whole
// (copy on write behind an atomic pointer): a request sees one version or
// the other, never a mix.

// maxAllocPolicyBytes caps a learned allocation policy file: a few dozen
// weights and a training record.
const maxAllocPolicyBytes = 1 << 20

// allocPolicyName is the form of a learned allocation policy's name.
var allocPolicyName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// Refusal reasons of a learned allocation policy (the reason label of
// tegrl_serve_allocation_policy_loads_total).
const (
	reasonAllocName        = "name"        // not a valid or free name
	reasonAllocParse       = "parse"       // not a scored or tiered policy file of this build, or a weight not finite
	reasonAllocClairvoyant = "clairvoyant" // reads the jobs' remaining steps
	reasonAllocSmoke       = "smoke"       // the canary allocation failed
	reasonAllocRead        = "read"        // the file could not be read
)

// learnedPolicy is one validated version of a learned allocation policy.
type learnedPolicy struct {
	name     string
	weights  []float64 // never written after validation
	exchange bool      // env.ScoredPolicy.Exchange
	// tiered holds a tiered policy's parameters (never allocates); nil
	// for a scored policy.
	tiered   *env.TieredPackedPolicy
	sha256   string
	source   string // "file:PATH" or "admin"
	loadedAt time.Time
	// idle holds policies of these parameters between requests, so that
	// a request reuses grown buffers; one request holds one at a time. A
	// scored policy's SetPrevious replaces all the history it kept; a
	// tiered policy keeps none from one allocation to the next.
	idle sync.Pool
}

// kind is "tiered" or "scored".
func (lp *learnedPolicy) kind() string {
	if lp.tiered != nil {
		return "tiered"
	}
	return "scored"
}

// policy is a policy of these parameters that no other request holds;
// release gives it back.
func (lp *learnedPolicy) policy() env.AllocationPolicy {
	if p, ok := lp.idle.Get().(env.AllocationPolicy); ok {
		return p
	}
	if lp.tiered != nil {
		p := lp.tiered.Clone()
		p.MaxPairColumns = maxPackedColumns
		return p
	}
	return &env.ScoredPolicy{Weights: slices.Clone(lp.weights), Exchange: lp.exchange}
}

func (lp *learnedPolicy) release(p env.AllocationPolicy) { lp.idle.Put(p) }

// allocPolicies is the registry of learned allocation policies.
type allocPolicies struct {
	cur   atomic.Pointer[map[string]*learnedPolicy]
	mu    sync.Mutex        // serializes the writers' copy and swap
	trust ed25519.PublicKey // Config.TrustKey: every version must be signed by it
	loads *prometheus.CounterVec
}

// newAllocPolicies loads and validates the operator's policies (name ->
// file path), each signed by trust when it is set (the sidecar PATH.sig),
// and registers the load counter on reg.
func newAllocPolicies(files map[string]string, trust ed25519.PublicKey, reg *prometheus.Registry) (*allocPolicies, error) {
	ap := &allocPolicies{trust: trust, loads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_allocation_policy_loads_total",
		Help: "Learned allocation policy versions offered, by source (file, admin), result (accepted, refused) and reason of a refusal (name, parse, clairvoyant, smoke, read, size, signature)."},
		[]string{"source", "result", "reason"})}
	reg.MustRegister(ap.loads)
	m := map[string]*learnedPolicy{}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names) // the first bad one in name order is the one reported
	for _, name := range names {
		path := files[name]
		lp, err := ap.loadFile(name, path)
		if err != nil {
			return nil, fmt.Errorf("allocation policy %s=%s: %w", name, path, err)
		}
		m[name] = lp
	}
	ap.cur.Store(&m)
	return ap, nil
}

func (ap *allocPolicies) loadFile(name, path string) (*learnedPolicy, error) {
	if err := checkAllocPolicyName(name); err != nil {
		ap.loads.WithLabelValues("file", "refused", reasonAllocName).Inc()
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		ap.loads.WithLabelValues("file", "refused", reasonAllocRead).Inc()
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAllocPolicyBytes+1))
	if err != nil {
		ap.loads.WithLabelValues("file", "refused", reasonAllocRead).Inc()
		return nil, err
	}
	if len(b) > maxAllocPolicyBytes {
		ap.loads.WithLabelValues("file", "refused", reasonSize).Inc()
		return nil, fmt.Errorf("larger than %d bytes", maxAllocPolicyBytes)
	}
	if err := checkTrust(ap.trust, candidate{name: path, source: "file", payload: b}, nil, 0); err != nil {
		ap.loads.WithLabelValues("file", "refused", reasonSignature).Inc()
		return nil, err
	}
	lp, rf := validateLearned(name, "file:"+path, b)
	if rf != nil {
		ap.loads.WithLabelValues("file", "refused", rf.reason).Inc()
		return nil, rf
	}
	ap.loads.WithLabelValues("file", "accepted", "").Inc()
	return lp, nil
}

// checkAllocPolicyName tells why name cannot name a learned allocation
// policy: its form, or a built-in policy's name (which it would shadow).
func checkAllocPolicyName(name string) error {
	switch {
	case !allocPolicyName.MatchString(name):
		return fmt.Errorf("name %q: want %s", name, allocPolicyName)
	case slices.Contains(env.AllocationPolicyNames(), name):
		return fmt.Errorf("name %q is a built-in allocation policy", name)
	case env.IsPolicyFile(name):
		return fmt.Errorf("name %q reads as a policy file path (ends in .json)", name)
	}
	return nil
}

// errClairvoyant refuses a policy that reads the jobs' remaining steps.
var errClairvoyant = errors.New("clairvoyant policy (it reads the jobs' remaining steps): a bound to measure against, not a deployable policy")

// validateLearned checks a policy file as every version must pass before
// it serves: a scored or tiered policy file of this build's features with
// finite parameters, not clairvoyant (it reads the jobs' remaining steps:
// a bound, not a deployable policy), whose allocation of the canary round
// is valid.
func validateLearned(name, source string, data []byte) (*learnedPolicy, *refusal) {
	lp := &learnedPolicy{name: name, source: source, loadedAt: time.Now().UTC()}
	if env.PolicyFileKind(data) == env.TieredPolicyKind {
		p, err := env.ParseTieredPolicy(data)
		if err != nil {
			return nil, &refusal{reasonAllocParse, err}
		}
		if p.IsClairvoyant() {
			return nil, &refusal{reasonAllocClairvoyant, errClairvoyant}
		}
		lp.weights, lp.tiered = slices.Clone(p.Weights), p
	} else {
		p, err := env.ParseScoredPolicy(data)
		if err != nil {
			return nil, &refusal{reasonAllocParse, err}
		}
		if p.Pack {
			return nil, &refusal{reasonAllocParse, errors.New("packed scored policy (pack: true): it pairs each job with the partner it had last round, which a request does not carry; serve the unpacked policy or a tiered one")}
		}
		if p.Clairvoyant {
			return nil, &refusal{reasonAllocClairvoyant, errClairvoyant}
		}
		lp.weights, lp.exchange = slices.Clone(p.Weights), p.Exchange
	}
	sum := sha256.Sum256(data)
	lp.sha256 = hex.EncodeToString(sum[:])
	if err := smokeLearned(lp); err != nil {
		return nil, &refusal{reasonAllocSmoke, err}
	}
	return lp, nil
}

// canaryAllocRequest is the round every learned policy version allocates
// before it serves: the three Gavel GPU types, fewer GPUs than the jobs
// ask, gangs of 1 to 4 and jobs that ran last round.
func canaryAllocRequest() *AllocateRequest {
	req := &AllocateRequest{TimeS: 7200, GPUs: []AllocateGPU{{"v100", 4}, {"p100", 2}, {"k80", 2}}}
	models := []string{"ResNet-18 (batch size 16)", "Transformer (batch size 16)", "ResNet-50 (batch size 16)", "LM (batch size 5)"}
	prev := []string{"v100", "", "k80", "p100", ""}
	for i := range 10 {
		scale := 1 << (i % 3)
		req.Jobs = append(req.Jobs, AllocateJob{ID: i, Model: models[i%len(models)], Scale: scale, ArrivalS: float64(600 * i),
			StepsTotal: 1000, StepsLeft: 500, AttainedGPUS: float64(300 * i), PrevType: prev[i%len(prev)]})
	}
	return req
}

// smokeLearned allocates the canary round with lp and checks the answer.
func smokeLearned(lp *learnedPolicy) error {
	tab, err := allocTable()
	if err != nil {
		return err
	}
	req := canaryAllocRequest()
	st, err := req.state(tab)
	if err != nil {
		return fmt.Errorf("canary round: %w", err)
	}
	x, pairs, err := allocateLearned(lp, st, req.previous(st))
	if err != nil {
		return err
	}
	return checkAllocation(st, x, pairs)
}

// allocateLearned runs a policy of lp that no other request holds on st,
// a scored one with the previous round's types; a panic is an error of
// this call. The pairs are copies: the policy's own are reused by the
// next request.
func allocateLearned(lp *learnedPolicy, st *env.RoundState, prev map[int]int) (x []float64, pairs []env.RoundPair, err error) {
	defer func() {
		if p := recover(); p != nil {
			x, pairs, err = nil, nil, fmt.Errorf("policy %s failed: %v", lp.name, p)
		}
	}()
	pol := lp.policy()
	if sp, ok := pol.(*env.ScoredPolicy); ok {
		sp.SetPrevious(prev)
	}
	x = make([]float64, len(st.Jobs)*len(st.Types))
	if len(st.Jobs) > 0 {
		if err := pol.Allocate(st, x); err != nil {
			lp.release(pol)
			return nil, nil, fmt.Errorf("policy %s: %w", lp.name, err)
		}
		if pp, ok := pol.(env.PackingPolicy); ok {
			for _, p := range pp.Pairs(st) {
				pairs = append(pairs, env.RoundPair{A: p.A, B: p.B, X: slices.Clone(p.X)})
			}
		}
	}
	lp.release(pol) // not reached after a panic: that policy is dropped
	return x, pairs, nil
}

// checkAllocation tells whether x and pairs are a valid allocation of
// st: shares in [0, 1], each job's shares and pairs at most 1 in all, a
// pair two distinct jobs of one gang size, whole gangs (a pair's once)
// within each type's capacity.
func checkAllocation(st *env.RoundState, x []float64, pairs []env.RoundPair) error {
	nt := len(st.Types)
	if len(x) != len(st.Jobs)*nt {
		return fmt.Errorf("allocation of %d shares for %d jobs and %d types", len(x), len(st.Jobs), nt)
	}
	use := make([]float64, nt)
	row := make(map[int]float64, len(st.Jobs))
	scale := make(map[int]int, len(st.Jobs))
	for i, j := range st.Jobs {
		scale[j.ID] = j.Scale
		for t := range nt {
			v := x[i*nt+t]
			if !(v >= 0 && v <= 1) {
				return fmt.Errorf("job %d: share %v on %s", j.ID, v, st.Types[t])
			}
			row[j.ID] += v
			use[t] += v * float64(j.Scale)
		}
	}
	for _, p := range pairs {
		sa, okA := scale[p.A]
		sb, okB := scale[p.B]
		if !okA || !okB || p.A == p.B || sa != sb || len(p.X) != nt {
			return fmt.Errorf("pair of jobs %d and %d: not two jobs of this round of one gang size on its %d types", p.A, p.B, nt)
		}
		for t, v := range p.X {
			if !(v >= 0 && v <= 1) {
				return fmt.Errorf("pair of jobs %d and %d: share %v on %s", p.A, p.B, v, st.Types[t])
			}
			row[p.A] += v
			row[p.B] += v
			use[t] += v * float64(sa)
		}
	}
	for id, v := range row {
		if v > 1+1e-9 {
			return fmt.Errorf("job %d: %v of the time", id, v)
		}
	}
	for t, u := range use {
		if u > float64(st.Capacity[t])+1e-9 {
			return fmt.Errorf("type %s: %v GPUs used of %d", st.Types[t], u, st.Capacity[t])
		}
	}
	return nil
}

// get returns the serving version of name, or nil.
func (ap *allocPolicies) get(name string) *learnedPolicy {
	if ap == nil {
		return nil
	}
	return (*ap.cur.Load())[name]
}

// names lists the loaded names, sorted.
func (ap *allocPolicies) names() []string {
	m := *ap.cur.Load()
	out := make([]string, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// put validates data as a new version of name and swaps it in; on any
// refusal the serving version is unchanged. sidecar is the signature
// that came with it (checked when the registry trusts a key). It returns
// the new version and the one it replaced (nil for a new name).
func (ap *allocPolicies) put(name, source string, data, sidecar []byte) (lp, old *learnedPolicy, err error) {
	if err := checkAllocPolicyName(name); err != nil {
		ap.loads.WithLabelValues(source, "refused", reasonAllocName).Inc()
		return nil, nil, &fieldError{"name", err.Error()}
	}
	if err := checkTrust(ap.trust, candidate{name: name, source: source, payload: data}, sidecar, 0); err != nil {
		ap.loads.WithLabelValues(source, "refused", reasonSignature).Inc()
		return nil, nil, err
	}
	lp, rf := validateLearned(name, source, data)
	if rf != nil {
		ap.loads.WithLabelValues(source, "refused", rf.reason).Inc()
		return nil, nil, rf
	}
	ap.mu.Lock()
	defer ap.mu.Unlock()
	cur := *ap.cur.Load()
	next := make(map[string]*learnedPolicy, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	old = cur[name]
	next[name] = lp
	ap.cur.Store(&next)
	ap.loads.WithLabelValues(source, "accepted", "").Inc()
	return lp, old, nil
}

// AllocationPolicy describes a learned allocation policy version, in GET
// and PUT /v1/allocation-policies.
type AllocationPolicy struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	// Source is "file:PATH" (loaded at start) or "admin" (PUT).
	Source string `json:"source"`
	// Kind is "scored" (env.ScoredPolicy) or "tiered"
	// (env.TieredPackedPolicy: its answers have pairs).
	Kind     string    `json:"kind"`
	Features []string  `json:"features"`
	Weights  []float64 `json:"weights"`
	// Exchange tells that the policy swaps equal-size gangs between GPU
	// types after scoring (env.ScoredPolicy.Exchange).
	Exchange bool `json:"exchange,omitempty"`
	// Tiered holds a tiered policy's other parameters.
	Tiered   *TieredParams `json:"tiered,omitempty"`
	LoadedAt time.Time     `json:"loaded_at"`
	// Replaced is the SHA-256 of the version a PUT replaced, if any.
	Replaced string `json:"replaced_sha256,omitempty"`
}

// AllocationPoliciesResponse is the body of GET /v1/allocation-policies.
type AllocationPoliciesResponse struct {
	Policies []AllocationPolicy `json:"policies"`
}

// TieredParams are a tiered policy file's parameters besides its
// weights, under the file's names.
type TieredParams struct {
	LogPriorityRatio  float64 `json:"log_priority_ratio"`
	LogRatioLoadSlope float64 `json:"log_ratio_load_slope"`
	GangGuardHours    float64 `json:"gang_guard_h"`
	AgeGuardHours     float64 `json:"age_guard_h"`
	TieDeficit        float64 `json:"tie_deficit_weight"`
	// SupportColumns is a distilled student's column support's size,
	// every load band's (0: every column).
	SupportColumns int `json:"support_columns,omitempty"`
	// SupportPriced: columns outside the support enter when they improve
	// the LP, so the answer is an optimum of the teacher's LP.
	SupportPriced bool `json:"support_priced,omitempty"`
}

func (lp *learnedPolicy) describe() AllocationPolicy {
	d := AllocationPolicy{Name: lp.name, SHA256: lp.sha256, Source: lp.source, Kind: lp.kind(), Features: env.ScoredFeatureNames(false),
		Weights: slices.Clone(lp.weights), Exchange: lp.exchange, LoadedAt: lp.loadedAt}
	if t := lp.tiered; t != nil {
		d.Features = env.TieredFeatureNames(false)
		d.Tiered = &TieredParams{LogPriorityRatio: t.LogRatio, LogRatioLoadSlope: t.LoadSlope, GangGuardHours: t.GangGuardHours,
			AgeGuardHours: t.AgeGuardHours, TieDeficit: t.TieDeficit}
		if t.Support != nil {
			d.Tiered.SupportColumns = t.Support.Len()
			d.Tiered.SupportPriced = t.Support.Price
		}
	}
	return d
}

// AllocationPolicies lists the learned allocation policies, by name.
func (s *Service) AllocationPolicies() AllocationPoliciesResponse {
	out := AllocationPoliciesResponse{Policies: []AllocationPolicy{}}
	m := *s.alloc.cur.Load()
	for _, name := range s.alloc.names() {
		if lp := m[name]; lp != nil {
			out.Policies = append(out.Policies, lp.describe())
		}
	}
	return out
}

func (s *Service) handleAllocationPolicies(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.AllocationPolicies())
}

// handleAllocationPolicyPut takes a scored or tiered policy file as the body (admin
// role) and serves it as the new version of the path's name once it
// passes validation: 400 for a bad name, 413 for a body over 1 MiB, 422
// with the reason for a refused file. With a trusted key the header
// X-Tegrl-Signature carries the file's signature sidecar line, as for
// POST /v1/policies.
func (s *Service) handleAllocationPolicyPut(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAllocPolicyBytes))
	if err != nil {
		if isTimeout(err) {
			err = &bodyTimeoutError{}
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.alloc.loads.WithLabelValues("admin", "refused", reasonSize).Inc()
		}
		writeError(w, err)
		return
	}
	var sidecar []byte
	if sig := r.Header.Get("X-Tegrl-Signature"); sig != "" {
		sidecar = []byte(sig)
	}
	lp, old, err := s.alloc.put(name, "admin", payload, sidecar)
	if err != nil {
		var rf *refusal
		if errors.As(err, &rf) {
			s.log.Warn("allocation policy refused", "name", name, "reason", rf.reason, "err", rf.err)
			writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: fmt.Sprintf("allocation policy %s: %v", name, err), Reason: rf.reason})
			return
		}
		writeError(w, err)
		return
	}
	s.log.Info("allocation policy loaded", "name", name, "sha256", lp.sha256, "source", lp.source)
	d := lp.describe()
	if old != nil {
		d.Replaced = old.sha256
	}
	writeJSON(w, http.StatusOK, d)
}
