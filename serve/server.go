package serve

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/rl"
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
	// ReadToken is the bearer token of the read role (decide, filter,
	// prioritize); empty leaves the role open.
	ReadToken string
	// WriteToken is the bearer token of the write role (state, outcome,
	// bind); empty leaves the role open. It also grants the read role.
	WriteToken string
	// AdminToken is the bearer token of the admin role (POST
	// /v1/policies, PUT /v1/allocation-policies/{name}, and the GET views
	// of both and /v1/ab when set); empty disables the policy uploads. It
	// grants every role.
	AdminToken string
	// TLS, when set, serves HTTPS with it (see LoadTLS).
	TLS *tls.Config
	// MaxBodyBytes caps the bodies of state updates and extender calls
	// (default 32 MiB: a full state of 100,000 machines fits); decisions
	// and outcomes are capped at 64 KiB.
	MaxBodyBytes int64 `flag:"max-body" default:"33554432" usage:"largest JSON request body in bytes"`
	// MaxMachines caps the machines of a full state update (default
	// 100,000).
	MaxMachines int `flag:"max-machines" default:"100_000" usage:"largest cluster a state update may define"`
	// MaxPolicyBytes caps policy files (default 256 MiB).
	MaxPolicyBytes int64 `flag:"max-policy-bytes" default:"268435456" usage:"largest policy file in bytes"`
	// RequestTimeout bounds each request's handling (default 10 s);
	// slower requests get 503.
	RequestTimeout time.Duration `flag:"request-timeout" default:"10s" usage:"bound on one request's handling"`
	// ShutdownTimeout bounds the drain of in-flight requests (default 15 s).
	ShutdownTimeout time.Duration `flag:"shutdown-timeout" default:"15s" usage:"bound on draining in-flight requests at shutdown"`
	// Clock is ClockRequest (default) or ClockWall.
	Clock string
	// Seed drives the schedulers' random streams and decision ids.
	Seed uint64 `flag:"seed" default:"1" usage:"seed of the synthetic cluster, the model and the schedulers' random streams"`
	// DecisionLog is how many recent decisions outcomes can refer to
	// (default 65,536).
	DecisionLog int
	// DecisionTTL is how long after a decision its outcome is accepted
	// (default 24 h).
	DecisionTTL time.Duration `flag:"decision-ttl" default:"24h" usage:"how long after a decision its outcome is accepted"`
	// PolicyDir is watched for new policy files (*.safetensors, with an
	// optional NAME.sha256 beside), loaded into arm PolicyDirArm (default
	// the first arm) every WatchInterval (default 2 s).
	PolicyDir     string        `flag:"policy-dir" usage:"directory watched for new policy files (*.safetensors, optional NAME.sha256)"`
	PolicyDirArm  string        `flag:"policy-dir-arm" default:"a" usage:"arm that --policy-dir loads into"`
	WatchInterval time.Duration `flag:"watch-interval" default:"2s" usage:"poll interval of --policy-dir"`
	// NATS hot-loads policy versions from a JetStream object store.
	NATS NATSConfig
	// TrustKey, when set, is the learner's public key (tegrl train's
	// DIR/signing.pub): every policy must carry a signature by it (a
	// policy file its sidecar NAME.sig) or is refused (checkTrust).
	TrustKey ed25519.PublicKey
	// Logger receives the service's log (default: discard).
	Logger *slog.Logger
	// AllocationPolicies are learned allocation policies (scored or
	// tiered policy files) that POST /v1/allocate serves by name: name ->
	// file path. New refuses a bad name, a built-in policy's name, an
	// unreadable or invalid file, a clairvoyant policy and a packed scored
	// one; with TrustKey, one without
	// its signature sidecar (PATH.sig).
	AllocationPolicies map[string]string
}

// NATSConfig names the JetStream object store bucket the trainer
// publishes policy files to. Empty URL: off.
type NATSConfig struct {
	Token string
	URL   string `flag:"nats" usage:"NATS URL to watch a JetStream object store for policy files (with --policy-bucket)"`
	// User and Password log in as a user of the server (tegrl broker
	// --users) instead of a token; the learner role may create the
	// bucket, the actor role may only read one that exists.
	User, Password string
	// Run scopes the connection (transport.DialConfig.RunID); default
	// "serve".
	Run string
	// Bucket is the object store bucket, created if missing.
	Bucket string `flag:"policy-bucket" default:"tegrl-policies" usage:"JetStream object store bucket of policy files (created if missing)"`
	// Arm receives the policies (default: the first arm).
	Arm string `flag:"nats-arm" default:"a" usage:"arm that the NATS bucket loads into"`
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
	tokens  [RoleAdmin + 1]tokenDigest
	handler http.Handler

	// mu guards the model, the random stream and every scheduler's
	// Decide (schedulers keep caches). Requests wait for it only until
	// their deadline (LockContext).
	mu        ctxMutex
	model     *model
	haveModel atomic.Bool  // model != nil, read without mu (readiness)
	machines  atomic.Int64 // the model's machines, read without mu (checkScale)
	rng       *rand.Rand
	seq       uint64
	wallStart time.Time
	// alloc holds the learned allocation policies (allocpolicies.go).
	alloc *allocPolicies
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

// ctxMutex is a mutex whose Lock can give up when a context ends.
type ctxMutex struct{ ch chan struct{} }

func newCtxMutex() ctxMutex { return ctxMutex{ch: make(chan struct{}, 1)} }

// Lock locks m.
func (m *ctxMutex) Lock() { m.ch <- struct{}{} }

// Unlock unlocks m.
func (m *ctxMutex) Unlock() { <-m.ch }

// LockContext locks m, or gives up with errCancelled when ctx ends first.
func (m *ctxMutex) LockContext(ctx context.Context) error {
	select {
	case m.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return errCancelled
	}
}

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
	if cfg.DecisionTTL == 0 {
		cfg.DecisionTTL = 24 * time.Hour
	}
	if cfg.MaxMachines == 0 {
		cfg.MaxMachines = 100_000
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
	case cfg.MaxBodyBytes < 0 || cfg.MaxPolicyBytes < 0 || cfg.RequestTimeout < 0 || cfg.DecisionLog < 0 || cfg.WatchInterval < 0 ||
		cfg.DecisionTTL < 0 || cfg.MaxMachines < 0:
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
	s := &Service{cfg: cfg, log: log, met: newMetrics(), router: r, canary: cv, decided: newDecisionLog(cfg.DecisionLog, cfg.DecisionTTL),
		mu: newCtxMutex(), rng: rand.New(rand.NewPCG(cfg.Seed, 0x73657276))}
	s.tokens[RoleRead], s.tokens[RoleWrite], s.tokens[RoleAdmin] = digest(cfg.ReadToken), digest(cfg.WriteToken), digest(cfg.AdminToken)
	if s.alloc, err = newAllocPolicies(cfg.AllocationPolicies, cfg.TrustKey, s.met.reg); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
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

func splitmix(x uint64) uint64 { return env.SplitMix64(x) }

// initArm loads an arm's configured scheduler.
func (s *Service) initArm(a *arm) error {
	spec := a.cfg.Spec
	if spec == "hot" {
		return nil
	}
	src, err := rl.ResolveScheduler(spec)
	if err != nil {
		return err
	}
	if src.Builtin {
		p, err := s.canary.builtin(spec)
		if err != nil {
			return err
		}
		s.swap(a, p, "builtin", spec)
		return nil
	}
	c, err := readPolicyFile(spec) // the payload again, with its .sha256 sidecar
	if err != nil {
		return err
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
	s.haveModel.Store(true)
	s.wallStart = time.Now()
	s.observeModel()
	s.machines.Store(int64(len(m.live.Cluster().Machines)))
	for _, a := range s.router.arms {
		if p := a.cur.Load(); p != nil {
			s.checkScale(a.cfg.Name, p)
		}
	}
}

// checkScale warns when a policy file was trained on a cluster more than
// rl.ScaleWarnFactor times smaller or larger than the live one
// (rl.PolicyFit.Check); built-ins, files of an unknown training scale and
// a service without a cluster yet pass silently.
func (s *Service) checkScale(armName string, p *Policy) {
	if n := int(s.machines.Load()); n > 0 && p.fit.Machines > 0 {
		p.fit.Check(rl.EnvCluster, n, s.log.With("arm", armName, "version", p.Version))
	}
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
	if !s.haveModel.Load() {
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
	return s.LoadContext(context.Background(), armName, name, source, payload, sha)
}

// LoadContext is Load for a request: a candidate that passes validation
// replaces the arm's policy only if ctx is still live then (an upload
// answered 503 never replaces the policy later).
func (s *Service) LoadContext(ctx context.Context, armName, name, source string, payload []byte, sha string) (*Policy, error) {
	return s.load(ctx, armName, name, source, payload, sha, nil)
}

// load is LoadContext with the signature sidecar that came with the
// candidate (a POST header, an object NAME.sig), nil when none did.
func (s *Service) load(ctx context.Context, armName, name, source string, payload []byte, sha string, sidecar []byte) (*Policy, error) {
	a := s.router.arms[0]
	if armName != "" {
		if a = s.router.byName(armName); a == nil {
			return nil, fmt.Errorf("unknown arm %q", armName)
		}
	}
	start := time.Now()
	if err := checkTrust(s.cfg.TrustKey, candidate{name: name, source: source, payload: payload}, sidecar, s.cfg.MaxPolicyBytes); err != nil {
		s.refuse(a.cfg.Name, source, name, reasonSignature, err, time.Since(start))
		s.met.loadTime.WithLabelValues("refused").Observe(time.Since(start).Seconds())
		return nil, fmt.Errorf("policy %s from %s refused: %w", name, source, err)
	}
	p, err := s.canary.validate(candidate{name: name, source: source, payload: payload, sha256: sha}, s.cfg.MaxPolicyBytes)
	if err != nil {
		reason := reasonPolicy
		var rf *refusal
		if errors.As(err, &rf) {
			reason = rf.reason
		}
		s.refuse(a.cfg.Name, source, name, reason, err, time.Since(start))
		s.met.loadTime.WithLabelValues("refused").Observe(time.Since(start).Seconds())
		return nil, fmt.Errorf("policy %s from %s refused: %w", name, source, err)
	}
	if !commit(ctx) {
		s.refuse(a.cfg.Name, source, name, reasonCancelled, errCancelled, time.Since(start))
		s.met.loadTime.WithLabelValues("cancelled").Observe(time.Since(start).Seconds())
		return nil, fmt.Errorf("policy %s from %s: %w", name, source, errCancelled)
	}
	s.swap(a, p, source, name)
	s.met.loadTime.WithLabelValues("accepted").Observe(time.Since(start).Seconds())
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
	s.checkScale(a.cfg.Name, p)
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

// Serve serves on ln (with TLS when Config.TLS is set) until ctx ends,
// then shuts down gracefully: the listener closes, in-flight requests
// drain (up to ShutdownTimeout), the watchers stop. It returns nil after a
// clean shutdown.
func (s *Service) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		// Each API request sets its own read deadline (its request
		// deadline); these bound the rest.
		ReadTimeout:  s.cfg.RequestTimeout + 5*time.Second,
		WriteTimeout: s.cfg.RequestTimeout + 5*time.Second,
		IdleTimeout:  2 * time.Minute,
		TLSConfig:    s.cfg.TLS,
		ErrorLog:     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
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
	s.log.Info("serving", "addr", ln.Addr().String(), "clock", s.cfg.Clock, "tls", s.cfg.TLS != nil)
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
			s.wallTick()
		}
	}
}

func (s *Service) wallTick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.model != nil {
		s.model.live.AdvanceTo(time.Since(s.wallStart).Seconds())
		s.observeModel()
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

// Unwrap lets http.ResponseController reach the connection (read
// deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument counts and times a handler's requests. Policy uploads are
// timed by tegrl_serve_policy_load_seconds instead: their seconds would
// drown the decisions' milliseconds.
func (s *Service) instrument(name string, h http.HandlerFunc) http.Handler {
	var obs prometheus.Observer
	if name != "policy_load" {
		obs = s.met.requestTime.WithLabelValues(name)
	}
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h(sw, r)
		if obs != nil {
			obs.Observe(time.Since(start).Seconds())
		}
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		counter(sw.code).Inc()
	})
}

func (s *Service) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/state", s.WithRole(RoleWrite, "state", s.handleState))
	mux.Handle("POST /v1/decide", s.WithRole(RoleRead, "decide", s.handleDecide))
	mux.Handle("POST /v1/outcome", s.WithRole(RoleWrite, "outcome", s.handleOutcome))
	mux.Handle("GET /v1/ab", s.withAdminRead("ab", s.handleAB))
	mux.Handle("GET /v1/policies", s.withAdminRead("policies", s.handlePolicies))
	mux.Handle("POST /v1/policies", s.WithRole(RoleAdmin, "policy_load", s.handlePolicyLoad))
	mux.Handle("POST /filter", s.WithRole(RoleRead, "filter", s.handleFilter))
	mux.Handle("POST /prioritize", s.WithRole(RoleRead, "prioritize", s.handlePrioritize))
	mux.Handle("POST /bind", s.WithRole(RoleWrite, "bind", s.handleBind))
	mux.Handle("GET /v1/cluster", s.WithRole(RoleRead, "cluster", s.handleCluster))
	mux.Handle("POST /v1/allocate", s.WithRole(RoleRead, "allocate", s.handleAllocate))
	mux.Handle("GET /v1/allocation-policies", s.withAdminRead("allocation_policies", s.handleAllocationPolicies))
	mux.Handle("PUT /v1/allocation-policies/{name}", s.WithRole(RoleAdmin, "allocation_policy_load", s.handleAllocationPolicyPut))
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, why := s.Ready() // takes no lock: answers at once however busy the model
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		io.WriteString(w, why+"\n")
	})
	return mux
}

// withAdminRead wraps a read-only admin view (the A/B summary, the
// policies): it needs the admin token when the service has one, and is
// open otherwise.
func (s *Service) withAdminRead(name string, h http.HandlerFunc) http.Handler {
	if s.tokens[RoleAdmin].set {
		return s.WithRole(RoleAdmin, name, h)
	}
	return s.instrument(name, s.bounded(name, h))
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

// internalError is a failure inside the service (a scheduler's panic):
// 500.
type internalError struct{ msg string }

func (e *internalError) Error() string { return e.msg }

// writeError maps an error to its status: 400 for bodies and fields, 413
// for bodies over the cap, 408 for a body that did not arrive in time,
// 409 for conflicts, 503 when not ready or cancelled, 500 otherwise.
func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var be *bodyError
	var fe *fieldError
	var ce *conflictError
	var mbe *http.MaxBytesError
	var te *bodyTimeoutError
	switch {
	case errors.As(err, &mbe):
		code = http.StatusRequestEntityTooLarge
		err = fmt.Errorf("body larger than the limit of %d bytes", mbe.Limit)
	case errors.As(err, &te):
		code = http.StatusRequestTimeout
		w.Header().Set("Connection", "close")
	case errors.As(err, &be), errors.As(err, &fe):
		code = http.StatusBadRequest
	case errors.As(err, &ce):
		code = http.StatusConflict
	case errors.Is(err, errNotReady):
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, apiError{Error: err.Error()})
}

// maxSmallBody caps the bodies of decisions and outcomes.
const maxSmallBody = 64 << 10

func (s *Service) body(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeStrict(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes), v)
}

func (s *Service) smallBody(w http.ResponseWriter, r *http.Request, v any) error {
	return decodeStrict(http.MaxBytesReader(w, r.Body, min(s.cfg.MaxBodyBytes, maxSmallBody)), v)
}
