package serve

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the service's Prometheus collectors, on a registry of its
// own (several services in one process, as in tests, do not collide).
type metrics struct {
	reg *prometheus.Registry

	decisions   *prometheus.CounterVec   // arm, endpoint, verdict
	decideTime  *prometheus.HistogramVec // arm: the scheduler's decision, in-process
	requestTime *prometheus.HistogramVec // handler
	requests    *prometheus.CounterVec   // handler, code
	policyInfo  *prometheus.GaugeVec     // arm, version, source
	swaps       *prometheus.CounterVec   // arm, source
	refused     *prometheus.CounterVec   // arm, source, reason
	swapTime    prometheus.Histogram     // validation + swap of a candidate
	outcomes    *prometheus.CounterVec   // arm
	rewardSum   *prometheus.GaugeVec     // arm
	stateUpd    prometheus.Counter
	rejected    prometheus.Counter
	unknownNode prometheus.Counter
	machines    prometheus.Gauge
	machinesUp  prometheus.Gauge
	running     prometheus.Gauge
	modelTime   prometheus.Gauge
	ready       prometheus.Gauge
}

// decisionBuckets span 5 µs to 0.5 s: the 1 ms goal sits in the middle.
var decisionBuckets = prometheus.ExponentialBuckets(5e-6, 2, 17)

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_decisions_total",
		Help: "Scheduling decisions by arm, endpoint (decide, prioritize) and verdict (placed, waited, projected, invalid)."},
		[]string{"arm", "endpoint", "verdict"})
	m.decideTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tegrl_serve_decision_seconds",
		Help: "Time of one scheduler decision in the process (model lock held), by arm.", Buckets: decisionBuckets}, []string{"arm"})
	m.requestTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tegrl_serve_request_seconds",
		Help: "HTTP request handling time by handler.", Buckets: decisionBuckets}, []string{"handler"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_requests_total",
		Help: "HTTP requests by handler and status code."}, []string{"handler", "code"})
	m.policyInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tegrl_serve_policy_info",
		Help: "1 for the policy version each arm serves."}, []string{"arm", "version", "source"})
	m.swaps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_policy_swaps_total",
		Help: "Policy versions that passed validation and now serve, by arm and source."}, []string{"arm", "source"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_policy_refused_total",
		Help: "Policy candidates refused, by arm, source and reason (checksum, decode, nan, schema, policy, smoke, size)."},
		[]string{"arm", "source", "reason"})
	m.swapTime = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tegrl_serve_policy_load_seconds",
		Help: "Validation and swap time of a policy candidate that was accepted.", Buckets: prometheus.ExponentialBuckets(1e-3, 2, 14)})
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tegrl_serve_ab_outcomes_total",
		Help: "Outcomes reported for decisions, by arm."}, []string{"arm"})
	m.rewardSum = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tegrl_serve_ab_reward_sum",
		Help: "Sum of the rewards reported for decisions, by arm."}, []string{"arm"})
	m.stateUpd = prometheus.NewCounter(prometheus.CounterOpts{Name: "tegrl_serve_state_updates_total", Help: "State updates applied."})
	m.rejected = prometheus.NewCounter(prometheus.CounterOpts{Name: "tegrl_serve_state_rejections_total",
		Help: "Parts of state updates that could not apply (a job that does not fit its machine)."})
	m.unknownNode = prometheus.NewCounter(prometheus.CounterOpts{Name: "tegrl_serve_extender_unknown_nodes_total",
		Help: "Nodes named by kube-scheduler that the model does not know (passed by filter, scored 0)."})
	m.machines = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_machines", Help: "Machines in the model."})
	m.machinesUp = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_machines_up", Help: "Machines up in the model."})
	m.running = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_running_jobs", Help: "Running jobs in the model."})
	m.modelTime = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_model_time_seconds", Help: "The model's simulated clock."})
	m.ready = prometheus.NewGauge(prometheus.GaugeOpts{Name: "tegrl_serve_ready", Help: "1 when every arm serves a validated policy and the model has a cluster."})
	for _, c := range []prometheus.Collector{m.decisions, m.decideTime, m.requestTime, m.requests, m.policyInfo, m.swaps,
		m.refused, m.swapTime, m.outcomes, m.rewardSum, m.stateUpd, m.rejected, m.unknownNode, m.machines, m.machinesUp,
		m.running, m.modelTime, m.ready, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m
}
