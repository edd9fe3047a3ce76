package env

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// machineType is a server SKU of the synthetic cluster.
type machineType struct {
	weight float64 // share of machines
	cores  int64
	memGiB int64
	gpus   int
	model  string
}

// syntheticMix is a realistic large-cluster mix: mostly CPU servers, a
// quarter GPU servers dominated by 8-GPU training boxes, some inference
// boxes with small GPUs.
var syntheticMix = []machineType{
	{0.30, 64, 256, 0, ""},
	{0.25, 96, 384, 0, ""},
	{0.12, 128, 512, 0, ""},
	{0.08, 32, 128, 0, ""},
	{0.10, 96, 1024, 8, "A100"},
	{0.04, 64, 512, 8, "V100M32"},
	{0.05, 48, 192, 4, "T4"},
	{0.04, 32, 128, 2, "A10"},
	{0.02, 16, 64, 1, "T4"},
}

// NewSyntheticCluster builds n machines drawn from a realistic mix of CPU
// and GPU servers (seeded). Machines of one rack share a SKU, as in real
// deployments, so GPU locality and rack power differ across racks.
func NewSyntheticCluster(n int, seed uint64) (*Cluster, error) {
	if n <= 0 {
		return nil, fmt.Errorf("synthetic cluster: %d machines, want > 0", n)
	}
	rng := rand.New(rand.NewPCG(seed, 0x7465672d636c7573)) // "teg-clus"
	c := &Cluster{Machines: make([]Machine, 0, n)}
	total := 0.0
	for _, t := range syntheticMix {
		total += t.weight
	}
	nracks := (n + defaultRackSize - 1) / defaultRackSize
	for r := 0; r < nracks; r++ {
		u := rng.Float64() * total
		t := syntheticMix[len(syntheticMix)-1]
		for _, cand := range syntheticMix {
			if u < cand.weight {
				t = cand
				break
			}
			u -= cand.weight
		}
		for k := 0; k < defaultRackSize && len(c.Machines) < n; k++ {
			i := len(c.Machines)
			c.Machines = append(c.Machines, newMachine(fmt.Sprintf("m%06d", i), t.cores*1000, t.memGiB*1024, t.gpus, t.model, r))
		}
	}
	layoutTopology(c, nracks)
	return c, c.Validate()
}

// WorkloadConfig parameterises the synthetic workload generator.
type WorkloadConfig struct {
	// Horizon is the span of arrivals in seconds.
	Horizon float64
	// Load is the offered load: the long-run demand of the busier of CPU and
	// GPU as a fraction of the cluster's capacity (1 = saturated).
	Load float64
	// BurstFactor multiplies the arrival rate in the burst state of the
	// Markov-modulated Poisson process (AI bursts: sweeps, retries).
	BurstFactor float64
	// CalmMean and BurstMean are the mean sojourn times (s) of the two states.
	CalmMean, BurstMean float64
	// Mix is the share of batch, training and service arrivals.
	Mix [3]float64
	SLA SLAPolicy
}

// DefaultWorkload is a bursty AI-heavy mix at 90% offered load over six hours.
var DefaultWorkload = WorkloadConfig{
	Horizon:     6 * 3600,
	Load:        0.9,
	BurstFactor: 4,
	CalmMean:    3600,
	BurstMean:   600,
	Mix:         [3]float64{0.6, 0.15, 0.25},
	SLA:         DefaultSLA,
}

func (w *WorkloadConfig) validate() error {
	switch {
	case !(w.Horizon > 0) || math.IsInf(w.Horizon, 0):
		return fmt.Errorf("workload horizon %v s must be positive", w.Horizon)
	case !(w.Load > 0) || w.Load > 100:
		return fmt.Errorf("workload load %v must be in (0, 100]", w.Load)
	case !(w.BurstFactor >= 1):
		return fmt.Errorf("burst factor %v must be >= 1", w.BurstFactor)
	case !(w.CalmMean > 0) || !(w.BurstMean > 0):
		return fmt.Errorf("burst sojourn means %v/%v must be positive", w.CalmMean, w.BurstMean)
	case w.Mix[0] < 0 || w.Mix[1] < 0 || w.Mix[2] < 0 || w.Mix[0]+w.Mix[1]+w.Mix[2] <= 0:
		return fmt.Errorf("job mix %v must be non-negative and not all zero", w.Mix)
	}
	return nil
}

// jobDraw draws one job shape; services return their replica count.
func drawJob(rng *rand.Rand, kind Kind, hasGPU bool, maxGPUs int) (j Job, replicas int) {
	j.Kind = kind
	j.Service = -1
	switch kind {
	case Batch:
		j.QoS = BestEffort
		j.Duration = lognormal(rng, 180, 1.2)
		if hasGPU && rng.Float64() < 0.3 {
			j.GPUs = 1
			j.GPUMilli = []int{100, 250, 500, 1000}[rng.IntN(4)]
			j.CPU = int64(2000 + 2000*rng.IntN(4))
			j.Mem = int64(8192 * (1 + rng.IntN(4)))
		} else {
			j.CPU = int64(500 * (1 + rng.IntN(16)))
			j.Mem = int64(1024 * (1 + rng.IntN(32)))
		}
		j.Migratable = true
	case Training:
		j.QoS = Guaranteed
		j.Duration = lognormal(rng, 1800, 1.0)
		k := []int{1, 2, 4, 8}[pickWeighted(rng, []float64{0.4, 0.3, 0.2, 0.1})]
		k = min(k, maxGPUs)
		j.GPUs, j.GPUMilli = k, MilliGPU
		j.CPU = int64(8000 * k)
		j.Mem = int64(32768 * k)
	case Service:
		j.QoS = LatencySensitive
		j.Duration = lognormal(rng, 3600, 0.5)
		if hasGPU && rng.Float64() < 0.5 {
			j.GPUs = 1
			j.GPUMilli = []int{200, 300, 500}[rng.IntN(3)]
			j.CPU, j.Mem = 4000, 16384
		} else {
			j.CPU = int64(1000 * (1 + rng.IntN(4)))
			j.Mem = int64(2048 * (1 + rng.IntN(8)))
		}
		j.Migratable = true
		replicas = 2 + rng.IntN(5)
	}
	return j, replicas
}

func lognormal(rng *rand.Rand, median, sigma float64) float64 {
	return max(1, median*math.Exp(sigma*rng.NormFloat64()))
}

func pickWeighted(rng *rand.Rand, w []float64) int {
	total := 0.0
	for _, x := range w {
		total += x
	}
	u := rng.Float64() * total
	for i, x := range w {
		if u < x {
			return i
		}
		u -= x
	}
	return len(w) - 1
}

// NewSyntheticWorkload generates jobs for cluster c: a Markov-modulated
// Poisson arrival process (calm and burst states), heavy-tailed
// (log-normal) durations, and a batch/training/service mix. The arrival
// rate is set so the busier of CPU and GPU is offered cfg.Load of its
// capacity on average. Clusters without GPUs get CPU-only jobs.
func NewSyntheticWorkload(c *Cluster, cfg WorkloadConfig, seed uint64) (*Workload, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.SLA == (SLAPolicy{}) {
		cfg.SLA = DefaultSLA
	}
	var capCPU, capGPU float64
	maxGPUs := 0
	for i := range c.Machines {
		capCPU += float64(c.Machines[i].CPU)
		capGPU += float64(c.Machines[i].GPUs * MilliGPU)
		maxGPUs = max(maxGPUs, c.Machines[i].GPUs)
	}
	hasGPU := capGPU > 0
	mix := cfg.Mix
	if !hasGPU {
		mix[1] = 0 // no training without GPUs
	}
	// Estimate the mean demand per arrival by sampling the shape
	// distribution with its own stream, then set the base rate.
	est := rand.New(rand.NewPCG(seed, 0x7465672d65737469)) // "teg-esti"
	var cpuSec, gpuSec float64
	const samples = 20000
	for k := 0; k < samples; k++ {
		j, reps := drawJob(est, Kind(pickWeighted(est, mix[:])), hasGPU, maxGPUs)
		n := float64(max(reps, 1))
		cpuSec += n * float64(j.CPU) * j.Duration
		gpuSec += n * float64(j.GPUDemand()) * j.Duration
	}
	cpuSec /= samples
	gpuSec /= samples
	// Long-run fraction of time in burst, and the mean rate multiplier.
	pBurst := cfg.BurstMean / (cfg.BurstMean + cfg.CalmMean)
	meanMult := (1 - pBurst) + pBurst*cfg.BurstFactor
	rate := cfg.Load * capCPU / cpuSec
	if hasGPU && gpuSec > 0 {
		rate = min(rate, cfg.Load*capGPU/gpuSec)
	}
	rate /= meanMult

	// The burst chain has its own stream, so runs that differ only in load
	// see the same calm and burst periods.
	chain := rand.New(rand.NewPCG(seed, 0x7465672d62757273)) // "teg-burs"
	rng := rand.New(rand.NewPCG(seed, 0x7465672d776f726b))   // "teg-work"
	w := &Workload{Name: "synthetic"}
	t, burst := 0.0, false
	switchAt := chain.ExpFloat64() * cfg.CalmMean
	service := 0
	for {
		r := rate
		if burst {
			r *= cfg.BurstFactor
		}
		dt := rng.ExpFloat64() / r
		if t+dt > switchAt { // state change before the next arrival: memoryless restart
			t = switchAt
			burst = !burst
			mean := cfg.CalmMean
			if burst {
				mean = cfg.BurstMean
			}
			switchAt = t + chain.ExpFloat64()*mean
			if t >= cfg.Horizon {
				break
			}
			continue
		}
		t += dt
		if t >= cfg.Horizon {
			break
		}
		j, reps := drawJob(rng, Kind(pickWeighted(rng, mix[:])), hasGPU, maxGPUs)
		j.Arrival = t
		j.Tenant = rng.IntN(8)
		j.NetGbps = defaultNetGbps(&j)
		cfg.SLA.apply(&j)
		if j.Kind == Service {
			j.Service = service
			service++
			for k := 0; k < reps; k++ {
				r := j
				r.Name = fmt.Sprintf("svc%d-r%d", j.Service, k)
				r.ID = len(w.Jobs)
				w.Jobs = append(w.Jobs, r)
			}
			continue
		}
		j.ID = len(w.Jobs)
		j.Name = fmt.Sprintf("%s%d", j.Kind, j.ID)
		w.Jobs = append(w.Jobs, j)
	}
	return w, nil
}
