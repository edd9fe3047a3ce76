package env

import (
	"math"
	"slices"
)

// metricsAcc accumulates a run's counters and time integrals.
type metricsAcc struct {
	submitted, completed, failed, rejected int
	judged, violations                     int
	starved, evictions, machineFailures    int
	invalidDecisions                       int
	jct, waits                             []float64
	slowdown                               float64
	cpu, mem, gpu, energyJ, queue, time    float64
	damping, tokens                        float64
	fragRate, fragRatio                    float64
	fragSamples                            int

	migrations, oomKills, preemptions int
	safetyViolations, safetyActions   int
	taxed                             int
	replicasAdded, replicasRemoved    int
	nashMax, nashMean                 float64
	nashSamples                       int
	reward, rewardSuccess             float64
	rewardEnergy, rewardLatency       float64
	rewardTicks                       int
}

// Metrics summarises a run. JSON keys are stable: snake_case with units.
type Metrics struct {
	Scheduler        string  `json:"scheduler"`
	Seed             uint64  `json:"seed"`
	Workload         string  `json:"workload"`
	Machines         int     `json:"machines"`
	GPUs             int     `json:"gpus"`
	SimTimeS         float64 `json:"sim_time_s"`
	Ticks            int     `json:"ticks"`
	JobsSubmitted    int     `json:"jobs_submitted"`
	JobsCompleted    int     `json:"jobs_completed"`
	JobsFailed       int     `json:"jobs_failed"`
	JobsRejected     int     `json:"jobs_rejected"`  // fit no machine of the cluster
	JobsRunning      int     `json:"jobs_running"`   // at the end of the run
	JobsQueued       int     `json:"jobs_queued"`    // at the end of the run
	JobsCancelled    int     `json:"jobs_cancelled"` // replicas removed by scale-down
	MeanJCTS         float64 `json:"mean_jct_s"`
	P95JCTS          float64 `json:"p95_jct_s"`
	MeanSlowdown     float64 `json:"mean_slowdown"`
	MeanWaitS        float64 `json:"mean_wait_s"`
	P95WaitS         float64 `json:"p95_wait_s"`
	MeanQueueLen     float64 `json:"mean_queue_len"`
	SLAViolationRate float64 `json:"sla_violation_rate"`
	UtilCPU          float64 `json:"util_cpu"`
	UtilMem          float64 `json:"util_mem"`
	UtilGPU          float64 `json:"util_gpu"`
	GPUFragRate      float64 `json:"gpu_frag_rate"`  // mean F(M) / GPU capacity
	GPUFragRatio     float64 `json:"gpu_frag_ratio"` // mean F(M) / idle GPU
	EnergyKWh        float64 `json:"energy_kwh"`
	StarvedJobs      int     `json:"starved_jobs"`
	Evictions        int     `json:"evictions"`
	MachineFailures  int     `json:"machine_failures"`
	InvalidDecisions int     `json:"invalid_decisions"`

	// TEG dynamics.
	Migrations       int     `json:"migrations"`
	OOMKills         int     `json:"oom_kills"`
	SafetyViolations int     `json:"safety_violations"` // caps exceeded: memory (OOM) or rack power
	SafetyActions    int     `json:"safety_actions"`    // placements projected or refused, jobs moved by the barrier
	Preemptions      int     `json:"preemptions"`       // jobs checkpointed back to the queue by the barrier
	AdmissionTaxed   int     `json:"admission_taxed"`   // offers held back by the damping tax
	NashGap          float64 `json:"nash_gap"`          // mean over samples of the largest unilateral gain
	NashGapMean      float64 `json:"nash_gap_mean"`     // mean over samples of the mean gain
	MeanDamping      float64 `json:"mean_damping"`
	TokenSupply      float64 `json:"token_supply"`       // time-averaged total balance
	TokenSupplyBound float64 `json:"token_supply_bound"` // capacity rate / λ (0 without evaporation)
	RewardMean       float64 `json:"reward_mean"`
	RewardSuccess    float64 `json:"reward_success"`
	RewardEnergy     float64 `json:"reward_energy"`
	RewardLatency    float64 `json:"reward_latency"`
	ReplicasAdded    int     `json:"replicas_added"`
	ReplicasRemoved  int     `json:"replicas_removed"`
}

// Metrics returns the metrics of the run so far. Jobs still queued count
// as SLA violations once their wait exceeds their SLA, and as starved once
// it exceeds StarveAfter.
func (s *Sim) Metrics() Metrics {
	a := &s.acc
	m := Metrics{
		Scheduler:        s.sched.Name(),
		Seed:             s.cfg.Seed,
		Workload:         s.w.Name,
		Machines:         len(s.c.Machines),
		GPUs:             s.c.TotalGPUs(),
		SimTimeS:         s.now,
		Ticks:            s.ticks,
		JobsSubmitted:    a.submitted,
		JobsCompleted:    a.completed,
		JobsFailed:       a.failed,
		JobsRejected:     a.rejected,
		JobsRunning:      s.nrunning,
		JobsQueued:       s.tq.n,
		JobsCancelled:    a.replicasRemoved,
		Migrations:       a.migrations,
		OOMKills:         a.oomKills,
		SafetyViolations: a.safetyViolations,
		SafetyActions:    a.safetyActions,
		Preemptions:      a.preemptions,
		AdmissionTaxed:   a.taxed,
		ReplicasAdded:    a.replicasAdded,
		ReplicasRemoved:  a.replicasRemoved,
		MeanJCTS:         mean(a.jct),
		P95JCTS:          percentile(a.jct, 0.95),
		MeanWaitS:        mean(a.waits),
		P95WaitS:         percentile(a.waits, 0.95),
		StarvedJobs:      a.starved,
		Evictions:        a.evictions,
		MachineFailures:  a.machineFailures,
		InvalidDecisions: a.invalidDecisions,
		EnergyKWh:        a.energyJ / 3.6e6,
	}
	if a.completed > 0 {
		m.MeanSlowdown = a.slowdown / float64(a.completed)
	}
	judged, violations := a.judged, a.violations
	for _, q := range s.tq.q {
		for _, id := range q {
			if id < 0 {
				continue
			}
			j := &s.w.Jobs[id]
			wait := s.now - j.Arrival
			if sla := max(j.Deadline, j.LatencySLO); sla > 0 && wait > sla {
				judged++
				violations++
			}
			if r := &s.jobs[id]; !r.starved && s.now-r.queuedAt > s.cfg.StarveAfter {
				m.StarvedJobs++
			}
		}
	}
	if judged > 0 {
		m.SLAViolationRate = float64(violations) / float64(judged)
	}
	if a.time > 0 {
		m.UtilCPU = a.cpu / a.time
		m.UtilMem = a.mem / a.time
		m.UtilGPU = a.gpu / a.time
		m.MeanQueueLen = a.queue / a.time
		m.MeanDamping = a.damping / a.time
		m.TokenSupply = a.tokens / a.time
	}
	if b := s.tok.SupplyBound(); !math.IsInf(b, 0) {
		m.TokenSupplyBound = b
	}
	if a.nashSamples > 0 {
		m.NashGap = a.nashMax / float64(a.nashSamples)
		m.NashGapMean = a.nashMean / float64(a.nashSamples)
	}
	if a.rewardTicks > 0 {
		n := float64(a.rewardTicks)
		m.RewardMean = a.reward / n
		m.RewardSuccess = a.rewardSuccess / n
		m.RewardEnergy = a.rewardEnergy / n
		m.RewardLatency = a.rewardLatency / n
	}
	if a.fragSamples > 0 {
		m.GPUFragRate = a.fragRate / float64(a.fragSamples)
		m.GPUFragRatio = a.fragRatio / float64(a.fragSamples)
	}
	return m
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// percentile returns the q-quantile by the nearest-rank method.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	k := int(math.Ceil(q*float64(len(ys)))) - 1
	return ys[max(0, min(k, len(ys)-1))]
}
