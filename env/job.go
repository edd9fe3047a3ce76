package env

import "fmt"

// Kind is the shape of a job.
type Kind uint8

const (
	// Batch is a run-to-completion task (CPU or GPU).
	Batch Kind = iota
	// Training is a gang job: several GPUs on one machine that want NVLink
	// locality; it runs until its work is done.
	Training
	// Service is one replica of an inference service: long running, judged by
	// its latency (queue wait) target rather than its completion time.
	Service
)

var kindNames = [...]string{"batch", "training", "service"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// QoS is the Kubernetes-style quality-of-service class of a job.
type QoS uint8

const (
	BestEffort       QoS = iota // BE: may be preempted, no guarantees
	Burstable                   // requests < limits
	Guaranteed                  // requests == limits
	LatencySensitive            // LS: latency critical (Alibaba's LS class)
)

var qosNames = [...]string{"BE", "Burstable", "Guaranteed", "LS"}

func (q QoS) String() string {
	if int(q) < len(qosNames) {
		return qosNames[q]
	}
	return fmt.Sprintf("qos(%d)", q)
}

// ParseQoS maps a trace's QoS string to a QoS; ok is false when unknown.
func ParseQoS(s string) (q QoS, ok bool) {
	for i, n := range qosNames {
		if n == s {
			return QoS(i), true
		}
	}
	return 0, false
}

// Job is one schedulable unit (a pod): a batch task, a training gang on one
// machine, or one replica of a service.
type Job struct {
	ID       int // index in the workload, stable across runs
	Name     string
	Kind     Kind
	QoS      QoS
	Arrival  float64 // submission time, s
	Duration float64 // work at nominal speed, s
	CPU      int64   // millicores
	Mem      int64   // MiB
	// GPUs and GPUMilli follow docs/fgd.md: GPUs == 1 with GPUMilli < 1000
	// is a share pod (a fraction of one GPU); GPUs == k with GPUMilli == 1000
	// needs k fully free GPUs; GPUs == 0 is CPU-only (GPUMilli 0).
	GPUs     int
	GPUMilli int
	// GPUModels lists the allowed GPU models; empty means any.
	GPUModels []string
	// Deadline is the completion-time SLA in seconds after arrival (0: none).
	Deadline float64
	// LatencySLO is the queue-wait SLA in seconds (0: none); used by services.
	LatencySLO float64
	// Service groups the replicas of one inference service (-1: none).
	Service int
	// Tenant owns the job (fair share and tokens); QoS class when unknown.
	Tenant int
	// Migratable jobs may be moved by the TEG dynamics.
	Migratable bool
	// NetGbps is the job's network traffic through its rack's uplink
	// (rack congestion in the potential field).
	NetGbps float64
}

// defaultNetGbps is the traffic model for sources without one: training
// gangs exchange gradients (1 Gbit/s per GPU), services serve requests
// (0.5), batch tasks read input (0.05 per core).
func defaultNetGbps(j *Job) float64 {
	switch j.Kind {
	case Training:
		return float64(j.GPUs)
	case Service:
		return 0.5
	}
	return 0.05 * float64(j.CPU) / 1000
}

// IsShare reports whether j takes a fraction of one GPU.
func (j *Job) IsShare() bool { return j.GPUs == 1 && j.GPUMilli < MilliGPU && j.GPUMilli > 0 }

// GPUDemand is the total GPU milli the job requests (k·d).
func (j *Job) GPUDemand() int64 { return int64(j.GPUs) * int64(j.GPUMilli) }

// Validate checks one job's fields.
func (j *Job) Validate() error {
	switch {
	case j.CPU < 0 || j.Mem < 0:
		return fmt.Errorf("job %d (%s): negative cpu %d or memory %d", j.ID, j.Name, j.CPU, j.Mem)
	case j.GPUs < 0 || j.GPUs > MaxGPUsPerMachine:
		return fmt.Errorf("job %d (%s): %d GPUs outside [0, %d]", j.ID, j.Name, j.GPUs, MaxGPUsPerMachine)
	case j.GPUs == 0 && j.GPUMilli != 0:
		return fmt.Errorf("job %d (%s): gpu_milli %d without GPUs", j.ID, j.Name, j.GPUMilli)
	case j.GPUs > 0 && (j.GPUMilli <= 0 || j.GPUMilli > MilliGPU):
		return fmt.Errorf("job %d (%s): gpu_milli %d outside (0, 1000]", j.ID, j.Name, j.GPUMilli)
	case j.GPUs > 1 && j.GPUMilli != MilliGPU:
		return fmt.Errorf("job %d (%s): %d GPUs with gpu_milli %d: multi-GPU jobs take whole GPUs", j.ID, j.Name, j.GPUs, j.GPUMilli)
	case j.NetGbps < 0 || j.NetGbps != j.NetGbps:
		return fmt.Errorf("job %d (%s): network %v Gbit/s must be >= 0", j.ID, j.Name, j.NetGbps)
	case j.Duration < 0 || j.Arrival < 0:
		return fmt.Errorf("job %d (%s): negative arrival %.0f or duration %.0f", j.ID, j.Name, j.Arrival, j.Duration)
	}
	return nil
}

// Workload is a list of jobs sorted by arrival time.
type Workload struct {
	Name string
	Jobs []Job
}
