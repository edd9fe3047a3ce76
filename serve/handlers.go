package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/tegrl/tegrl/env"
)

func (s *Service) handleState(w http.ResponseWriter, r *http.Request) {
	var req StateRequest
	if err := s.body(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	resp, err := s.StateContext(r.Context(), &req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// State applies a state update (see StateRequest).
func (s *Service) State(req *StateRequest) (StateResponse, error) {
	return s.StateContext(context.Background(), req)
}

// StateContext applies a state update if ctx is still live when it is
// ready to: a full update (with machines) is checked and its model built
// outside the model's lock, and installed under it; a delta is checked
// and applied under it. Either way nothing changes unless everything in
// the request is valid and ctx has not ended.
func (s *Service) StateContext(ctx context.Context, req *StateRequest) (StateResponse, error) {
	var resp StateResponse
	if req.TimeS != nil && s.cfg.Clock == ClockWall {
		return resp, fieldErr("time_s", "the service runs on the wall clock (clock %s): leave time_s out", s.cfg.Clock)
	}
	if err := stateLimits(req, s.cfg.MaxMachines); err != nil {
		return resp, err
	}
	if len(req.Machines) > 0 {
		return s.defineState(ctx, req)
	}
	if err := s.mu.LockContext(ctx); err != nil {
		return resp, err
	}
	defer s.mu.Unlock()
	if _, err := stateCheck(s.model, req); err != nil {
		return resp, err
	}
	if !commit(ctx) {
		return resp, errCancelled
	}
	s.model.apply(req, &resp)
	s.model.fill(&resp)
	s.observeModel()
	s.met.stateUpd.Inc()
	s.met.rejected.Add(float64(len(resp.Rejected)))
	return resp, nil
}

// defineState builds the model of a full state update without the lock
// (it may take a second at 100,000 machines, and decisions go on
// meanwhile) and installs it under the lock if ctx is still live.
func (s *Service) defineState(ctx context.Context, req *StateRequest) (StateResponse, error) {
	var resp StateResponse
	specs, err := stateCheck(nil, req)
	if err != nil {
		return resp, err
	}
	c, err := env.NewCluster(specs)
	if err != nil {
		return resp, fieldErr("machines", "%v", err)
	}
	if err := applyRacks(c, req.Racks); err != nil {
		return resp, err
	}
	if ctx.Err() != nil {
		return resp, errCancelled
	}
	m, err := s.newModel(c)
	if err != nil {
		return resp, fmt.Errorf("model: %w", err)
	}
	for i := range req.Machines {
		if u := req.Machines[i].Up; u != nil && !*u {
			m.setUp(i, false)
		}
	}
	m.apply(req, &resp)
	resp.Rebuilt = true
	if err := s.mu.LockContext(ctx); err != nil {
		return StateResponse{}, err
	}
	defer s.mu.Unlock()
	if !commit(ctx) {
		return StateResponse{}, errCancelled
	}
	s.setModel(m)
	m.fill(&resp)
	s.observeModel()
	s.met.stateUpd.Inc()
	s.met.rejected.Add(float64(len(resp.Rejected)))
	s.updateReady()
	s.log.Info("cluster defined", "machines", len(specs))
	return resp, nil
}

func (s *Service) handleDecide(w http.ResponseWriter, r *http.Request) {
	var req DecideRequest
	if err := s.smallBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	resp, err := s.DecideContext(r.Context(), &req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// decision is one decision's result inside the service.
type decision struct {
	arm     *arm
	pol     *Policy
	action  env.Action
	verdict env.Verdict
	seq     uint64
	machine string
	now     float64
	job     env.Job
}

// decide routes key to its arm and asks the arm's scheduler, under the
// model's lock; then, if the request is still wanted, it applies the
// action's knobs and runs after (still under the lock). A panic in the
// scheduler is an internal error for this request; the model is as
// before it (a decision places nothing).
func (s *Service) decide(ctx context.Context, key string, js *JobJSON, endpoint string, after func(*decision) error) (d decision, err error) {
	if err := s.mu.LockContext(ctx); err != nil {
		return d, err
	}
	defer s.mu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			name := "?"
			if d.pol != nil {
				name = d.pol.Version
			}
			s.met.panics.WithLabelValues(endpoint).Inc()
			s.log.Error("panic in a scheduler's decision; answered 500", "policy", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = &internalError{fmt.Sprintf("scheduler %s failed on this job: %v", name, p)}
		}
	}()
	if s.model == nil {
		return d, &notReadyError{"no cluster yet: POST /v1/state with the machines"}
	}
	d.arm = s.router.pick(key)
	d.pol = d.arm.cur.Load()
	if d.pol == nil {
		return d, &notReadyError{fmt.Sprintf("arm %s has no policy yet", d.arm.cfg.Name)}
	}
	l := s.model.live
	j, err := s.model.job(js, "job", l.Now())
	if err != nil {
		return d, err
	}
	j.ID = usageKey(key)
	start := time.Now()
	a, v, err := l.Decide(&j, d.pol.sched, s.rng)
	if err != nil {
		return d, fieldErr("job", "%v", err)
	}
	if a.Node >= len(l.Cluster().Machines) || a.Node < -1 {
		return d, &internalError{fmt.Sprintf("scheduler %s named machine %d of %d", d.pol.Version, a.Node, len(l.Cluster().Machines))}
	}
	if !commit(ctx) {
		return d, errCancelled
	}
	l.ApplyKnobs(&j, a)
	elapsed := time.Since(start)
	s.seq++
	d.action, d.verdict, d.seq, d.now, d.job = a, v, s.seq, l.Now(), j
	if a.Node >= 0 {
		d.machine = l.Cluster().Machines[a.Node].Name
	}
	d.arm.decideTime.Observe(elapsed.Seconds())
	if after != nil {
		err = after(&d)
	}
	return d, err
}

// account records a decision in the A/B statistics, the decision log and
// the metrics (s.mu not needed); it returns the decision's id.
func (s *Service) account(d *decision, endpoint string) decisionID {
	id := s.decided.add(d.arm)
	s.met.decisions.WithLabelValues(d.arm.cfg.Name, endpoint, d.verdict.String()).Inc()
	d.arm.mu.Lock()
	defer d.arm.mu.Unlock()
	st := &d.arm.st
	st.decisions++
	switch d.verdict {
	case env.Placed:
		st.placed++
	case env.Waited:
		st.waited++
	case env.Projected:
		st.projected++
		if d.action.Node < 0 {
			st.waited++
		} else {
			st.placed++
		}
	case env.Invalid:
		st.invalid++
	}
	return id
}

// Decide answers a decision request (see DecideRequest).
func (s *Service) Decide(req *DecideRequest) (DecideResponse, error) {
	return s.DecideContext(context.Background(), req)
}

// DecideContext is Decide for a request that ends with ctx: a decision
// made after ctx ended changes nothing (no knobs applied, no id issued).
func (s *Service) DecideContext(ctx context.Context, req *DecideRequest) (DecideResponse, error) {
	key := req.Key
	if key == "" {
		key = req.Job.Name
	}
	if key == "" {
		return DecideResponse{}, fieldErr("key", "empty, and so is job.name: A/B routing needs a job key")
	}
	if len(key) > maxKeyLen {
		return DecideResponse{}, fieldErr("key", "%d bytes, at most %d", len(key), maxKeyLen)
	}
	d, err := s.decide(ctx, key, &req.Job, "decide", nil)
	if err != nil {
		return DecideResponse{}, err
	}
	id := s.account(&d, "decide")
	resp := DecideResponse{
		DecisionID: id.String(), Arm: d.arm.cfg.Name, PolicyVersion: d.pol.Version,
		Verdict: d.verdict.String(), ModelTimeS: d.now,
		Action: ActionJSON{MachineIndex: d.action.Node, GPU: d.action.GPU, ReplicaDelta: d.action.ReplicaDelta,
			Affinity: d.action.Affinity, Damping: finite32(d.action.Damping)},
	}
	if !finite(float64(resp.Action.Affinity)) {
		resp.Action.Affinity = 0
	}
	if d.action.Node >= 0 {
		resp.Action.Machine = &d.machine
	} else {
		resp.Action.MachineIndex, resp.Action.GPU = -1, -1
	}
	return resp, nil
}

func (s *Service) handleOutcome(w http.ResponseWriter, r *http.Request) {
	var req OutcomeRequest
	if err := s.smallBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.OutcomeContext(r.Context(), &req); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"recorded": true})
}

// Outcome records what became of a decision's job.
func (s *Service) Outcome(req *OutcomeRequest) error {
	return s.OutcomeContext(context.Background(), req)
}

// OutcomeContext is Outcome for a request that ends with ctx.
func (s *Service) OutcomeContext(ctx context.Context, req *OutcomeRequest) error {
	switch {
	case req.Reward == nil && req.Success == nil && req.SLAViolated == nil && req.JCTS == nil && req.WaitS == nil:
		return fieldErr("reward", "no measurement: give reward, success, sla_violated, jct_s or wait_s")
	case req.Reward != nil && !(*req.Reward >= -MaxReward && *req.Reward <= MaxReward):
		return fieldErr("reward", "%v must be finite and within ±%g", *req.Reward, MaxReward)
	case req.JCTS != nil && !boundedTime(*req.JCTS):
		return fieldErr("jct_s", "%v must be finite, >= 0 and <= %g", *req.JCTS, MaxTimeS)
	case req.WaitS != nil && !boundedTime(*req.WaitS):
		return fieldErr("wait_s", "%v must be finite, >= 0 and <= %g", *req.WaitS, MaxTimeS)
	}
	if !commit(ctx) {
		return errCancelled
	}
	a, err := s.decided.take(req.DecisionID)
	if err != nil {
		return fieldErr("decision_id", "%q: %v", clip(req.DecisionID, 80), err)
	}
	mean := a.record(req)
	s.met.outcomes.WithLabelValues(a.cfg.Name).Inc()
	if mean != nil {
		s.met.rewardMean.WithLabelValues(a.cfg.Name).Set(*mean)
	}
	return nil
}

// clip shortens s to at most n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func (s *Service) handleAB(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.router.summary())
}

// ArmPolicy describes an arm's serving policy in GET /v1/policies.
type ArmPolicy struct {
	Arm        string            `json:"arm"`
	Spec       string            `json:"spec"`
	Version    string            `json:"version"`
	Source     string            `json:"source"`
	SHA256     string            `json:"sha256,omitempty"`
	LoadedAt   *time.Time        `json:"loaded_at,omitempty"`
	ValidateMS float64           `json:"validate_ms"`
	Meta       map[string]string `json:"meta,omitempty"`
}

// PoliciesResponse is the body of GET /v1/policies.
type PoliciesResponse struct {
	Arms   []ArmPolicy   `json:"arms"`
	Events []PolicyEvent `json:"events"`
}

// Policies describes every arm's policy and the recent loads and refusals.
func (s *Service) Policies() PoliciesResponse {
	var out PoliciesResponse
	for _, a := range s.router.arms {
		ap := ArmPolicy{Arm: a.cfg.Name, Spec: a.cfg.Spec}
		if p := a.cur.Load(); p != nil {
			t := p.LoadedAt
			ap.Version, ap.Source, ap.SHA256, ap.LoadedAt, ap.ValidateMS = p.Version, p.Source, p.SHA256, &t, float64(p.ValidateTime.Microseconds())/1000
			ap.Meta = map[string]string{}
			for k, v := range p.Meta {
				if k != "tegrl.policy_config" && len(v) < 256 {
					ap.Meta[k] = v
				}
			}
		}
		out.Arms = append(out.Arms, ap)
	}
	s.evMu.Lock()
	out.Events = append([]PolicyEvent{}, s.events...)
	s.evMu.Unlock()
	return out
}

func (s *Service) handlePolicies(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Policies())
}

// handlePolicyLoad takes a policy file as the raw body (admin role);
// query: arm, name, sha256 (or header X-Tegrl-SHA256); header
// X-Tegrl-Signature: the policy's signature sidecar line (SignPolicy).
func (s *Service) handlePolicyLoad(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	armName := q.Get("arm")
	if armName != "" && s.router.byName(armName) == nil {
		writeError(w, fieldErr("arm", "unknown arm %q", armName))
		return
	}
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxPolicyBytes))
	if err != nil {
		if isTimeout(err) {
			err = &bodyTimeoutError{}
		}
		writeError(w, err)
		return
	}
	name := q.Get("name")
	if name == "" {
		name = "admin"
	}
	sha := q.Get("sha256")
	if sha == "" {
		sha = r.Header.Get("X-Tegrl-SHA256")
	}
	var sidecar []byte // the signature sidecar's line, with --trust-key
	if sig := r.Header.Get("X-Tegrl-Signature"); sig != "" {
		sidecar = []byte(sig)
	}
	p, err := s.load(r.Context(), armName, name, "admin", payload, sha, sidecar)
	if err != nil {
		if errors.Is(err, errNotReady) {
			writeError(w, err)
			return
		}
		reason := reasonPolicy
		var rf *refusal
		if errors.As(err, &rf) {
			reason = rf.reason
		}
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: err.Error(), Reason: reason})
		return
	}
	if armName == "" {
		armName = s.router.arms[0].cfg.Name
	}
	writeJSON(w, http.StatusOK, ArmPolicy{Arm: armName, Version: p.Version, Source: p.Source, SHA256: p.SHA256,
		LoadedAt: &p.LoadedAt, ValidateMS: float64(p.ValidateTime.Microseconds()) / 1000})
}
