package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tegrl/tegrl/env"
)

// Clock modes: how the model's time advances.
const (
	// ClockRequest: state updates carry the cluster's clock (time_s).
	ClockRequest = "request"
	// ClockWall: the model advances with the wall clock, one tick every
	// SimConfig.Tick seconds since the cluster was defined.
	ClockWall = "wall"
)

// Config configures a Service. Zero values mean the defaults noted.
type Config struct {
	// Cluster is the initial cluster; nil waits for a state update that
	// lists the machines.
	Cluster *env.Cluster
	// Target is the typical job mix for GPU fragmentation (FGD's target
	// workload); nil uses a synthetic workload on the cluster.
	Target []env.Job
	// Sim configures the model: seed, tick, TEG mechanisms.
	Sim env.SimConfig
	// Arms are the A/B arms (default: one arm "a" serving langevin).
	Arms []ArmConfig
	// AdminToken is the bearer token of POST /v1/policies; empty
	// disables the endpoint.
	AdminToken string
	// MaxBodyBytes caps JSON request bodies (default 32 MiB: a full state
	// of 100,000 machines fits).
	MaxBodyBytes int64
	// MaxPolicyBytes caps policy files (default 256 MiB).
	MaxPolicyBytes int64
	// RequestTimeout bounds each request's handling (default 10 s);
	// slower requests get 503.
	RequestTimeout time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests (default 15 s).
	ShutdownTimeout time.Duration
	// Clock is ClockRequest (default) or ClockWall.
	Clock string
	// Seed drives the schedulers' random streams and decision ids.
	Seed uint64
	// DecisionLog is how many recent decisions outcomes can refer to
	// (default 65,536).
	DecisionLog int
	// PolicyDir is watched for new policy files (*.safetensors, with an
	// optional NAME.sha256 beside), loaded into arm PolicyDirArm (default
	// the first arm) every WatchInterval (default 2 s).
	PolicyDir     string
	PolicyDirArm  string
	WatchInterval time.Duration
	// NATS hot-loads policy versions from a JetStream object store.
	NATS NATSConfig
	// Logger receives the service's log (default: discard).
	Logger *slog.Logger
}

// NATSConfig names the JetStream object store bucket the trainer
// publishes policy files to. Empty URL: off.
type NATSConfig struct {
	URL, Token string
	// Run scopes the connection (transport.DialConfig.RunID); default
	// "serve".
	Run string
	// Bucket is the object store bucket, created if missing.
	Bucket string
	// Arm receives the policies (default: the first arm).
	Arm string
}

// Service is the real-time scheduling service. Create it with New, then
// serve Handler on a listener, or call Serve.
type Service struct {
	cfg     Config
	log     *slog.Logger
	met     *metrics
	router  *router
	canary  *canary
	decided *decisionLog
	prefix  string // decision id prefix: distinguishes services and restarts
	handler http.Handler

	// mu guards the model, the random stream and every scheduler's
	// Decide (schedulers keep caches).
	mu        sync.Mutex
	model     *model
	rng       *rand.Rand
	seq       uint64
	wallStart time.Time
	// kube is the cluster sync's record of a Kubernetes cluster and the
	// bind verb's back end (clustersync.go, bind.go; guarded by mu).
	kube kubeState

	evMu   sync.Mutex
	events []PolicyEvent // recent loads and refusals, newest last
}

// PolicyEvent is a policy load or refusal, for GET /v1/policies.
type PolicyEvent struct {
	Time       time.Time `json:"time"`
	Arm        string    `json:"arm"`
	Source     string    `json:"source"`
	Name       string    `json:"name"`
	Version    string    `json:"version,omitempty"`
	Accepted   bool      `json:"accepted"`
	Reason     string    `json:"reason,omitempty"`
	Error      string    `json:"error,omitempty"`
	ValidateMS float64   `json:"validate_ms"`
}

const maxEvents = 32

// errNotReady is a request the service cannot answer yet: 503.
var errNotReady = errors.New("not ready")

type notReadyError struct{ msg string }

func (e *notReadyError) Error() string { return e.msg }
func (e *notReadyError) Unwrap() error { return errNotReady }

// New builds a service: it checks the configuration, validates each arm's
// initial scheduler on the canary states and builds the model when a
// cluster is given.
func New(cfg Config) (*Service, error) {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 32 << 20
	}
	if cfg.MaxPolicyBytes == 0 {
		cfg.MaxPolicyBytes = 256 << 20
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 15 * time.Second
	}
	if cfg.DecisionLog == 0 {
		cfg.DecisionLog = 1 << 16
	}
	if cfg.WatchInterval == 0 {
		cfg.WatchInterval = 2 * time.Second
	}
	if cfg.Clock == "" {
		cfg.Clock = ClockRequest
	}
	if len(cfg.Arms) == 0 {
		cfg.Arms = []ArmConfig{{Name: "a", Spec: "langevin", Weight: 1}}
	}
	switch {
	case cfg.Clock != ClockRequest && cfg.Clock != ClockWall:
		return nil, fmt.Errorf("serve: clock %q: want %s or %s", cfg.Clock, ClockRequest, ClockWall)
	case cfg.MaxBodyBytes < 0 || cfg.MaxPolicyBytes < 0 || cfg.RequestTimeout < 0 || cfg.DecisionLog < 0 || cfg.WatchInterval < 0:
		return nil, fmt.Errorf("serve: negative limit in the configuration")
	}
	r, err := newRouter(cfg.Arms)
	if err != nil {
		return nil, fmt.Errorf("serve: arms: %w", err)
	}
	for _, name := range []string{cfg.PolicyDirArm, cfg.NATS.Arm} {
		if name != "" && r.byName(name) == nil {
			return nil, fmt.Errorf("serve: hot-load target arm %q is not configured", name)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cv, err := newCanary(cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	s := &Service{cfg: cfg, log: log, met: newMetrics(), router: r, canary: cv, decided: newDecisionLog(cfg.DecisionLog),
		prefix: fmt.Sprintf("%08x", uint32(splitmix(cfg.Seed)>>32)), rng: rand.New(rand.NewPCG(cfg.Seed, 0x73657276))}
	for _, a := range r.arms {
		a.decideTime = s.met.decideTime.WithLabelValues(a.cfg.Name)
		if err := s.initArm(a); err != nil {
			return nil, fmt.Errorf("serve: arm %s: %w", a.cfg.Name, err)
		}
	}
	if cfg.Cluster != nil {
		m, err := s.newModel(cfg.Cluster)
		if err != nil {
			return nil, fmt.Errorf("serve: %w", err)
		}
		s.setModel(m)
	}
	s.handler = s.routes()
	s.updateReady()
	return s, nil
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// initArm loads an arm's configured scheduler.
func (s *Service) initArm(a *arm) error {
	spec := a.cfg.Spec
	if spec == "hot" {
		return nil
	}
	if _, err := env.NewScheduler(spec); err == nil {
		p, err := s.canary.builtin(spec)
		if err != nil {
			return err
		}
		s.swap(a, p, "builtin", spec)
		return nil
	}
	c, err := readPolicyFile(spec)
	if err != nil {
		return fmt.Errorf("scheduler %q: not built in (%s) and not a readable policy file: %w", spec, strings.Join(env.SchedulerNames, ", "), err)
	}
	_, err = s.Load(a.cfg.Name, c.name, "file", c.payload, c.sha256)
	return err
}

// newModel builds a model of c with the service's configuration.
func (s *Service) newModel(c *env.Cluster) (*model, error) {
	target := s.cfg.Target
	if target == nil {
		wc := env.DefaultWorkload
		wc.Horizon = 3600
		w, err := env.NewSyntheticWorkload(c, wc, s.cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("target workload: %w", err)
		}
		target = w.Jobs
	}
	m, err := newModel(c, target, s.cfg.Sim)
	if err != nil {
		return nil, err
	}
	// Observe once so that the load history records from the start: the
	// learned policies read it.
	var t env.Tensors
	if err := m.live.Observe(&t, nil); err != nil {
		return nil, err
	}
	return m, nil
}

// setModel installs m (s.mu held or before serving).
func (s *Service) setModel(m *model) {
	s.model = m
	s.wallStart = time.Now()
	s.observeModel()
}

// observeModel updates the model gauges (s.mu held).
func (s *Service) observeModel() {
	l := s.model.live
	s.met.machines.Set(float64(len(l.Cluster().Machines)))
	s.met.machinesUp.Set(float64(s.model.up))
	s.met.running.Set(float64(l.Running()))
	s.met.modelTime.Set(l.Now())
}

// Ready reports whether the service can decide: a cluster is defined and
// every arm serves a validated policy; otherwise why not.
func (s *Service) Ready() (bool, string) {
	s.mu.Lock()
	haveModel := s.model != nil
	s.mu.Unlock()
	if !haveModel {
		return false, "no cluster yet: POST /v1/state with the machines"
	}
	for _, a := range s.router.arms {
		if a.cur.Load() == nil {
			return false, fmt.Sprintf("arm %s has no policy yet (waiting for a hot-load)", a.cfg.Name)
		}
	}
	return true, "ready"
}

func (s *Service) updateReady() {
	ok, _ := s.Ready()
	v := 0.0
	if ok {
		v = 1
	}
	s.met.ready.Set(v)
}

// Load validates a policy file for arm (empty: the first arm) and, when it
// passes, makes it the arm's policy. A refused candidate leaves the arm's
// policy as it was; the error says why.
func (s *Service) Load(armName, name, source string, payload []byte, sha string) (*Policy, error) {
	a := s.router.arms[0]
	if armName != "" {
		if a = s.router.byName(armName); a == nil {
			return nil, fmt.Errorf("unknown arm %q", armName)
		}
	}
	start := time.Now()
	p, err := s.canary.validate(candidate{name: name, source: source, payload: payload, sha256: sha}, s.cfg.MaxPolicyBytes)
	if err != nil {
		reason := reasonPolicy
		var rf *refusal
		if errors.As(err, &rf) {
			reason = rf.reason
		}
		s.refuse(a.cfg.Name, source, name, reason, err, time.Since(start))
		return nil, fmt.Errorf("policy %s from %s refused: %w", name, source, err)
	}
	s.swap(a, p, source, name)
	s.met.swapTime.Observe(time.Since(start).Seconds())
	return p, nil
}

// refuse counts, logs and lists a refused candidate.
func (s *Service) refuse(armName, source, name, reason string, err error, took time.Duration) {
	s.met.refused.WithLabelValues(armName, source, reason).Inc()
	s.log.Warn("policy refused; the arm keeps its policy", "arm", armName, "source", source, "name", name, "reason", reason, "err", err)
	s.event(PolicyEvent{Time: time.Now(), Arm: armName, Source: source, Name: name, Reason: reason, Error: err.Error(),
		ValidateMS: float64(took.Microseconds()) / 1000})
}

// swap makes p the arm's policy: one atomic store; decisions in flight
// finish with the policy they started with.
func (s *Service) swap(a *arm, p *Policy, source, name string) {
	old := a.cur.Swap(p)
	if old != nil {
		s.met.policyInfo.DeleteLabelValues(a.cfg.Name, old.Version, old.Source)
	}
	s.met.policyInfo.WithLabelValues(a.cfg.Name, p.Version, p.Source).Set(1)
	s.met.swaps.WithLabelValues(a.cfg.Name, source).Inc()
	prev := ""
	if old != nil {
		prev = old.Version
	}
	s.log.Info("policy serving", "arm", a.cfg.Name, "version", p.Version, "source", source, "previous", prev,
		"validate_ms", float64(p.ValidateTime.Microseconds())/1000)
	s.event(PolicyEvent{Time: time.Now(), Arm: a.cfg.Name, Source: source, Name: name, Version: p.Version, Accepted: true,
		ValidateMS: float64(p.ValidateTime.Microseconds()) / 1000})
	s.updateReady()
}

func (s *Service) event(e PolicyEvent) {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	s.events = append(s.events, e)
	if len(s.events) > maxEvents {
		s.events = s.events[len(s.events)-maxEvents:]
	}
}

// Handler returns the service's HTTP handler.
func (s *Service) Handler() http.Handler { return s.handler }

// Metrics returns the service's Prometheus registry.
func (s *Service) Metrics() *prometheus.Registry { return s.met.reg }

// Serve serves on ln until ctx ends, then shuts down gracefully: the
// listener closes, in-flight requests drain (up to ShutdownTimeout), the
// watchers stop. It returns nil after a clean shutdown.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       s.cfg.RequestTimeout + 20*time.Second,
		WriteTimeout:      s.cfg.RequestTimeout + 20*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	if s.cfg.PolicyDir != "" {
		wg.Go(func() { s.watchDir(wctx) })
	}
	if s.cfg.NATS.URL != "" {
		wg.Go(func() { s.watchNATS(wctx) })
	}
	if s.cfg.Clock == ClockWall {
		wg.Go(func() { s.wallClock(wctx) })
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "clock", s.cfg.Clock)
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	s.log.Info("shutting down: draining in-flight requests", "timeout", s.cfg.ShutdownTimeout)
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// wallClock advances the model with the wall clock.
func (s *Service) wallClock(ctx context.Context) {
	tick := time.Duration(s.tickSeconds() * float64(time.Second))
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.mu.Lock()
			if s.model != nil {
				s.model.live.AdvanceTo(time.Since(s.wallStart).Seconds())
				s.observeModel()
			}
			s.mu.Unlock()
		}
	}
}

func (s *Service) tickSeconds() float64 {
	if s.cfg.Sim.Tick > 0 {
		return s.cfg.Sim.Tick
	}
	return env.DefaultSimConfig.Tick
}

// statusWriter records the status code for the request metrics.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// instrument counts and times a handler's requests and bounds their time.
func (s *Service) instrument(name string, h http.HandlerFunc) http.Handler {
	obs := s.met.requestTime.WithLabelValues(name)
	codes := map[int]prometheus.Counter{}
	var codesMu sync.Mutex
	counter := func(code int) prometheus.Counter {
		codesMu.Lock()
		defer codesMu.Unlock()
		c, ok := codes[code]
		if !ok {
			c = s.met.requests.WithLabelValues(name, strconv.Itoa(code))
			codes[code] = c
		}
		return c
	}
	inner := http.TimeoutHandler(h, s.cfg.RequestTimeout, `{"error":"request timed out"}`)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		inner.ServeHTTP(sw, r)
		obs.Observe(time.Since(start).Seconds())
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		counter(sw.code).Inc()
	})
}

func (s *Service) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/state", s.instrument("state", s.handleState))
	mux.Handle("POST /v1/decide", s.instrument("decide", s.handleDecide))
	mux.Handle("POST /v1/outcome", s.instrument("outcome", s.handleOutcome))
	mux.Handle("GET /v1/ab", s.instrument("ab", s.handleAB))
	mux.Handle("GET /v1/policies", s.instrument("policies", s.handlePolicies))
	mux.Handle("POST /v1/policies", s.instrument("policy_load", s.handlePolicyLoad))
	mux.Handle("POST /filter", s.instrument("filter", s.handleFilter))
	mux.Handle("POST /prioritize", s.instrument("prioritize", s.handlePrioritize))
	mux.Handle("POST /bind", s.instrument("bind", s.handleBind))
	mux.Handle("GET /v1/cluster", s.instrument("cluster", s.handleCluster))
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, why := s.Ready()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		io.WriteString(w, why+"\n")
	})
	return mux
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	encodeJSON(w, v)
}

// apiError is the body of every error answer.
type apiError struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
}

// writeError maps an error to its status: 400 for bodies and fields, 413
// for bodies over the cap, 409 for conflicts, 503 when not ready, 500
// otherwise.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var be *bodyError
	var fe *fieldError
	var ce *conflictError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		code = http.StatusRequestEntityTooLarge
		err = fmt.Errorf("body larger than the limit of %d bytes", mbe.Limit)
	case errors.As(err, &be), errors.As(err, &fe):
		code = http.StatusBadRequest
	case errors.As(err, &ce):
		code = http.StatusConflict
	case errors.Is(err, errNotReady):
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, apiError{Error: err.Error()})
}

func (s *Service) body(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeStrict(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), v)
}

func (s *Service) handleState(w http.ResponseWriter, r *http.Request) {
	var req StateRequest
	if err := s.body(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	resp, err := s.State(&req)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// State applies a state update (see StateRequest).
func (s *Service) State(req *StateRequest) (StateResponse, error) {
	var resp StateResponse
	if req.TimeS != nil && s.cfg.Clock == ClockWall {
		return resp, fieldErr("time_s", "the service runs on the wall clock (clock %s): leave time_s out", s.cfg.Clock)
	}
	s.mu.Lock()
	rebuilt := false
	defer func() {
		s.mu.Unlock()
		if rebuilt {
			s.updateReady()
		}
	}()
	specs, err := stateCheck(s.model, req)
	if err != nil {
		return resp, err
	}
	if specs != nil {
		c, err := env.NewCluster(specs)
		if err != nil {
			return resp, fieldErr("machines", "%v", err)
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
		s.setModel(m)
		resp.Rebuilt = true
		s.log.Info("cluster defined", "machines", len(specs))
		rebuilt = true
	}
	s.model.apply(req, &resp)
	s.model.fill(&resp)
	s.observeModel()
	s.met.stateUpd.Inc()
	s.met.rejected.Add(float64(len(resp.Rejected)))
	return resp, nil
}

func (s *Service) handleDecide(w http.ResponseWriter, r *http.Request) {
	var req DecideRequest
	if err := s.body(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	resp, err := s.Decide(&req)
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

// decide routes key to its arm and asks the arm's scheduler (s.mu held).
func (s *Service) decide(key string, js *JobJSON, endpoint string) (decision, error) {
	var d decision
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
	l.ApplyKnobs(&j, a)
	elapsed := time.Since(start)
	s.seq++
	d.action, d.verdict, d.seq, d.now, d.job = a, v, s.seq, l.Now(), j
	if a.Node >= 0 {
		d.machine = l.Cluster().Machines[a.Node].Name
	}
	d.arm.decideTime.Observe(elapsed.Seconds())
	return d, nil
}

// account records a decision in the A/B statistics, the decision log and
// the metrics (s.mu not needed).
func (s *Service) account(d *decision, endpoint string) {
	s.decided.add(d.seq, d.arm)
	s.met.decisions.WithLabelValues(d.arm.cfg.Name, endpoint, d.verdict.String()).Inc()
	d.arm.mu.Lock()
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
	d.arm.mu.Unlock()
}

// Decide answers a decision request (see DecideRequest).
func (s *Service) Decide(req *DecideRequest) (DecideResponse, error) {
	key := req.Key
	if key == "" {
		key = req.Job.Name
	}
	if key == "" {
		return DecideResponse{}, fieldErr("key", "empty, and so is job.name: A/B routing needs a job key")
	}
	s.mu.Lock()
	d, err := s.decide(key, &req.Job, "decide")
	s.mu.Unlock()
	if err != nil {
		return DecideResponse{}, err
	}
	s.account(&d, "decide")
	resp := DecideResponse{
		DecisionID: s.prefix + "-" + strconv.FormatUint(d.seq, 10), Arm: d.arm.cfg.Name, PolicyVersion: d.pol.Version,
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
	if err := s.body(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := s.Outcome(&req); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"recorded": true})
}

// Outcome records what became of a decision's job.
func (s *Service) Outcome(req *OutcomeRequest) error {
	switch {
	case req.Reward == nil && req.Success == nil && req.SLAViolated == nil && req.JCTS == nil && req.WaitS == nil:
		return fieldErr("reward", "no measurement: give reward, success, sla_violated, jct_s or wait_s")
	case req.Reward != nil && !finite(*req.Reward):
		return fieldErr("reward", "%v must be finite", *req.Reward)
	case req.JCTS != nil && !finiteNonNeg(*req.JCTS):
		return fieldErr("jct_s", "%v must be finite and >= 0", *req.JCTS)
	case req.WaitS != nil && !finiteNonNeg(*req.WaitS):
		return fieldErr("wait_s", "%v must be finite and >= 0", *req.WaitS)
	}
	prefix, num, ok := strings.Cut(req.DecisionID, "-")
	seq, err := strconv.ParseUint(num, 10, 64)
	if !ok || err != nil || prefix != s.prefix {
		return fieldErr("decision_id", "%q is not a decision of this service", req.DecisionID)
	}
	a, err := s.decided.take(seq)
	if err != nil {
		return fieldErr("decision_id", "%q: %v", req.DecisionID, err)
	}
	a.record(req)
	s.met.outcomes.WithLabelValues(a.cfg.Name).Inc()
	if req.Reward != nil {
		s.met.rewardSum.WithLabelValues(a.cfg.Name).Add(*req.Reward)
	}
	return nil
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

// handlePolicyLoad takes a policy file as the raw body, authorised by the
// admin bearer token; query: arm, name, sha256 (or header X-Tegrl-SHA256).
func (s *Service) handlePolicyLoad(w http.ResponseWriter, r *http.Request) {
	if s.cfg.AdminToken == "" {
		writeJSON(w, http.StatusForbidden, apiError{Error: "admin endpoint disabled: the service has no admin token"})
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.AdminToken)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tegrl"`)
		writeJSON(w, http.StatusUnauthorized, apiError{Error: "missing or wrong admin bearer token"})
		return
	}
	q := r.URL.Query()
	armName := q.Get("arm")
	if armName != "" && s.router.byName(armName) == nil {
		writeError(w, fieldErr("arm", "unknown arm %q", armName))
		return
	}
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxPolicyBytes))
	if err != nil {
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
	p, err := s.Load(armName, name, "admin", payload, sha)
	if err != nil {
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
