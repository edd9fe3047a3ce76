package serve

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the service's Prometheus collectors, on a registry of its
// own (several services in one process, as in tests, do not collide).
type metrics struct {
	reg *prometheus.Registry

	decisions      *prometheus.CounterVec   // arm, endpoint, verdict
	decideTime     *prometheus.HistogramVec // arm: the scheduler's decision, in-process
	requestTime    *prometheus.HistogramVec // handler
	requests       *prometheus.CounterVec   // handler, code
	policyInfo     *prometheus.GaugeVec     // arm, version, source
	swaps          *prometheus.CounterVec   // arm, source
	refused        *prometheus.CounterVec   // arm, source, reason
	loadTime       *prometheus.HistogramVec // result: validation (+ swap) of a candidate
	outcomes       *prometheus.CounterVec   // arm
	rewardMean     *prometheus.GaugeVec     // arm
	panics         *prometheus.CounterVec   // handler
	authFailed     *prometheus.CounterVec   // role
	stateUpd       prometheus.Counter
	rejected       prometheus.Counter
	unknownNode    prometheus.Counter
	extenderErrors *prometheus.CounterVec // verb
	machines       prometheus.Gauge
	machinesUp     prometheus.Gauge
	running        prometheus.Gauge
	modelTime      prometheus.Gauge
	ready          prometheus.Gauge
}

// decisionBuckets span 5 µs to 0.33 s: the 1 ms decision budget sits in the middle.
var decisionBuckets = prometheus.ExponentialBuckets(5e-6, 2, 17)

// requestBuckets span 5 µs to 10.5 s: up to the default request deadline.
var requestBuckets = prometheus.ExponentialBuckets(5e-6, 2, 22)

// loadBuckets span 1 ms to 65 s: a policy's decode and smoke test.
var loadBuckets = prometheus.ExponentialBuckets(1e-3, 2, 17)

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_decisions_total",
		Help: "Scheduling decisions by arm, endpoint (decide, prioritize) and verdict (placed, waited, projected, invalid)."},
		[]string{"arm", "endpoint", "verdict"})
	m.decideTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tegrl_serve_decision_seconds",
		Help: "Time of one scheduler decision in the process (model lock held), by arm.", Buckets: decisionBuckets}, []string{"arm"})
	m.requestTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tegrl_serve_request_seconds",
		Help: "HTTP request handling time by handler (policy uploads: tegrl_serve_policy_load_seconds).", Buckets: requestBuckets}, []string{"handler"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_requests_total",
		Help: "HTTP requests by handler and status code."}, []string{"handler", "code"})
	m.policyInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tegrl_serve_policy_info",
		Help: "1 for the policy version each arm serves."}, []string{"arm", "version", "source"})
	m.swaps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_policy_swaps_total",
		Help: "Policy versions that passed validation and now serve, by arm and source."}, []string{"arm", "source"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_policy_refused_total",
		Help: "Policy candidates refused, by arm, source and reason (checksum, decode, nan, schema, policy, smoke, size)."},
		[]string{"arm", "source", "reason"})
	m.loadTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tegrl_serve_policy_load_seconds",
		Help: "Validation (and swap) time of a policy candidate, by result (accepted, refused, cancelled).", Buckets: loadBuckets},
		[]string{"result"})
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_ab_outcomes_total",
		Help: "Outcomes reported for decisions, by arm."}, []string{"arm"})
	m.rewardMean = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tegrl_serve_ab_reward_mean",
		Help: "Mean of the rewards reported for decisions, by arm."}, []string{"arm"})
	m.panics = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_panics_total",
		Help: "Requests answered 500 because a handler or scheduler panicked, by handler."}, []string{"handler"})
	m.authFailed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_auth_failures_total",
		Help: "Requests refused for a missing or wrong bearer token, by the role asked for."}, []string{"role"})
	m.stateUpd = prometheus.NewCounter(prometheus.CounterOpts{Name: "tegrl_serve_state_updates_total", Help: "State updates applied."})
	m.rejected = prometheus.NewCounter(prometheus.CounterOpts{Name: "tegrl_serve_state_rejections_total",
		Help: "Parts of state updates that could not apply (a job that does not fit its machine)."})
	m.unknownNode = prometheus.NewCounter(prometheus.CounterOpts{Name: "tegrl_serve_extender_unknown_nodes_total",
		Help: "Nodes named by kube-scheduler that the model does not know (failed by filter, scored 0)."})
	m.extenderErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_extender_errors_total",
		Help: "Extender calls answered with an error (filter: in the result's Error; prioritize: every node scored 0), by verb."},
		[]string{"verb"})
	m.machines = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_machines", Help: "Machines in the model."})
	m.machinesUp = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_machines_up", Help: "Machines up in the model."})
	m.running = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_running_jobs", Help: "Running jobs in the model."})
	m.modelTime = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_model_time_seconds", Help: "The model's simulated clock."})
	m.ready = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_ready", Help: "1 when every arm serves a validated policy and the model has a cluster."})
	for _, c := range []prometheus.Collector{m.decisions, m.decideTime, m.requestTime, m.requests, m.policyInfo, m.swaps,
		m.refused, m.loadTime, m.outcomes, m.rewardMean, m.panics, m.authFailed, m.stateUpd, m.rejected, m.unknownNode, m.extenderErrors, m.machines, m.machinesUp,
		m.running, m.modelTime, m.ready, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m
}
