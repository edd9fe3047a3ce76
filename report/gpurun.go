package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tegrl/tegrl/env"
)

// ParseGPUScenario parses a GPU training scenario's name, CLUSTER-WORKLOAD:
// clusters gavel (Gavel's 36:36:36), openb and spot (the bundled node
// lists; "openb/8" keeps every 8th server of each GPU model), workloads
// single, multi and philly (see HeadroomScenario).
func ParseGPUScenario(name string) (HeadroomScenario, error) {
	cl, wl, ok := strings.Cut(strings.TrimSpace(name), "-")
	if !ok {
		return HeadroomScenario{}, fmt.Errorf("scenario %q is not CLUSTER-WORKLOAD (e.g. gavel-single, openb-multi, spot/8-philly)", name)
	}
	sc := HeadroomScenario{Cluster: cl, Workload: wl, Sample: 1}
	if c, k, ok := strings.Cut(cl, "/"); ok {
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 {
			return sc, fmt.Errorf("scenario %q: sample %q is not a positive integer", name, k)
		}
		sc.Cluster, sc.Sample = c, n
	}
	switch sc.Cluster {
	case "gavel":
		if sc.Sample != 1 {
			return sc, fmt.Errorf("scenario %q: the gavel cluster is not sampled", name)
		}
	case "openb", "spot":
	default:
		return sc, fmt.Errorf("scenario %q: unknown cluster %q (gavel, openb, spot)", name, sc.Cluster)
	}
	switch sc.Workload {
	case "single", "multi", "philly":
	default:
		return sc, fmt.Errorf("scenario %q: unknown workload %q (single, multi, philly)", name, sc.Workload)
	}
	return sc, nil
}

// GPURunConfig is one run of an allocation policy on a GPU training
// scenario at one arrival rate.
type GPURunConfig struct {
	// Scenario is CLUSTER-WORKLOAD (ParseGPUScenario).
	Scenario string
	// Rate is the arrival rate in jobs per hour; when 0, Load (the offered
	// GPU load: rate x mean GPU-hours per job on a V100 / the cluster's
	// capacity in V100s) sets it.
	Rate, Load float64
	// Policy is a registered allocation policy (env.AllocationPolicyNames)
	// and Params its parameters (a TunablePolicy's), set in order.
	Policy string
	Params []env.PolicyParam
	// New, when set, makes the policy in place of Policy's registered one
	// (Policy then only names it in the metrics): a candidate in training.
	New func() env.AllocationPolicy
	// Seed draws the jobs (the same as Gavel's simulator with that seed)
	// and seeds the mechanism and seeded policies.
	Seed uint64
	// RestoreSeconds is charged to a job that resumes on other GPUs.
	RestoreSeconds float64
	// AllocationSeconds is the least time between two allocation
	// recomputations (env.RoundConfig.AllocationInterval; 0: Gavel's
	// 1,920 s).
	AllocationSeconds float64
	// Placement is the gang placer (env.GangPlacerNames; "" for Gavel's
	// worker order).
	Placement string
	// WarmupHours, MeasureJobs and GraceHours are HeadroomConfig's.
	WarmupHours float64
	MeasureJobs int
	GraceHours  float64
	// Jobs, when set, replaces the scenario's generator (a replayed
	// recording); the rate then only sets the measured window and bound.
	Jobs env.JobSource
	// OnJob sees every job the run draws; OnAllocate every allocation.
	OnJob      func(env.DLJob)
	OnAllocate func(s *env.RoundState, x []float64)
}

// GPUMetrics is the outcome of one GPU-scenario run; its JSON form is a
// line of `tegrl simulate --scenario --json`. Times are hours.
type GPUMetrics struct {
	Scenario  string  `json:"scenario"`
	Scheduler string  `json:"scheduler"`
	Seed      uint64  `json:"seed"`
	Rate      float64 `json:"rate_jobs_per_h"`
	Load      float64 `json:"offered_gpu_load"`
	Jobs      int     `json:"jobs_arrived"`
	Measured  int     `json:"jobs_measured"`
	// AvgJCT, P99JCT and MaxJCT are over the measured jobs; nil when the
	// run stopped at the bound (AtBound) before they all finished.
	AvgJCT   *float64 `json:"avg_jct_h"`
	P99JCT   *float64 `json:"p99_jct_h"`
	MaxJCT   *float64 `json:"max_jct_h"`
	FloorJCT float64  `json:"floor_jct_h"`
	// FluidJCT is env.FluidBoundHours of the measured jobs at the rate: no
	// policy that keeps up has a lower long-run average JCT. nil when the
	// cluster cannot keep up with them under any allocation, or when the
	// run stopped at the bound before the first of them arrived.
	FluidJCT    *float64 `json:"fluid_jct_h"`
	Utilisation float64  `json:"utilisation"`
	AtBound     bool     `json:"at_bound"`
	Rounds      int      `json:"rounds"`
	Moves       int      `json:"moves"`
	SimHours    float64  `json:"sim_hours"`
}

// gpuTables are the bundled inputs every GPU scenario reads.
func gpuTables() (*env.ThroughputTable, []env.PhillySample, error) {
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return nil, nil, err
	}
	philly, err := env.GavelPhillyDistribution()
	return tab, philly, err
}

// RunGPU runs cfg to the end of its measured jobs or the bound.
func RunGPU(cfg GPURunConfig) (GPUMetrics, error) {
	sc, err := ParseGPUScenario(cfg.Scenario)
	if err != nil {
		return GPUMetrics{}, err
	}
	switch {
	case cfg.Rate < 0 || math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0):
		return GPUMetrics{}, fmt.Errorf("rate %v jobs/h: want a positive number", cfg.Rate)
	case cfg.AllocationSeconds < 0 || math.IsNaN(cfg.AllocationSeconds) || math.IsInf(cfg.AllocationSeconds, 0):
		return GPUMetrics{}, fmt.Errorf("allocation interval %v s: want a positive number of seconds (0: Gavel's 1920)", cfg.AllocationSeconds)
	case cfg.Rate == 0 && !(cfg.Load > 0 && cfg.Load < 100):
		return GPUMetrics{}, fmt.Errorf("scenario %s: give a rate (jobs/h) or an offered GPU load in (0, 100), got load %v", cfg.Scenario, cfg.Load)
	}
	var pol env.AllocationPolicy
	if cfg.New != nil {
		pol = cfg.New()
	} else if pol, err = env.NewAllocationPolicy(cfg.Policy, cfg.Params); err != nil {
		return GPUMetrics{}, err
	}
	tab, philly, err := gpuTables()
	if err != nil {
		return GPUMetrics{}, err
	}
	if cfg.Rate > 0 {
		sc.Rates = []float64{cfg.Rate}
	} else {
		sc.Loads = []float64{cfg.Load}
	}
	p, err := prepare(sc, tab, env.BundledGPUModels(), philly)
	if err != nil {
		return GPUMetrics{}, err
	}
	rate := p.rates[0]
	src := cfg.Jobs
	if src == nil {
		wl := p.wl
		wl.Rate, wl.Seed = rate, cfg.Seed
		if src, err = env.NewGavelGenerator(tab, wl); err != nil {
			return GPUMetrics{}, err
		}
	}
	if cfg.OnJob != nil {
		src = &observedSource{JobSource: src, on: cfg.OnJob}
	}
	rc := p.roundConfig(cfg.WarmupHours, cfg.MeasureJobs, cfg.GraceHours, rate, cfg.Seed)
	rc.RestoreSeconds, rc.OnAllocate, rc.Placement = cfg.RestoreSeconds, cfg.OnAllocate, cfg.Placement
	rc.AllocationInterval = cfg.AllocationSeconds
	var sim *env.RoundSim
	if p.servers != nil {
		sim, err = env.NewRoundSimServers(&env.ServerCluster{Cluster: p.cluster, Servers: p.servers}, pol, src, rc)
	} else {
		sim, err = env.NewRoundSim(p.cluster, pol, src, rc)
	}
	if err != nil {
		return GPUMetrics{}, err
	}
	res, err := sim.Run()
	if err != nil {
		return GPUMetrics{}, fmt.Errorf("%s %s at %.3f jobs/h seed %d: %w", sc.Name(), cfg.Policy, rate, cfg.Seed, err)
	}
	st := sim.Stats(res)
	m := GPUMetrics{Scenario: sc.Name(), Scheduler: cfg.Policy, Seed: cfg.Seed, Rate: rate,
		Load: math.Round(p.loads[0]*1000) / 1000, Jobs: res.Jobs, Measured: rc.MeasureTo - rc.MeasureFrom,
		FloorJCT: res.FloorHours, Utilisation: st.Utilisation, AtBound: res.Saturated, Rounds: res.Rounds,
		Moves: res.Moves, SimHours: res.SimSeconds / 3600}
	switch fb, err := sim.FluidBoundHours(rate); {
	case err == nil:
		m.FluidJCT = &fb
	case !errors.Is(err, env.ErrOverCapacity) && !errors.Is(err, env.ErrNoMeasuredJobs):
		return GPUMetrics{}, fmt.Errorf("%s at %.3f jobs/h seed %d: %w", sc.Name(), rate, cfg.Seed, err)
	}
	if !res.Saturated && len(res.JCT) > 0 {
		avg, p99, most := res.AvgJCTHours, st.P99JCTHours, slices.Max(res.JCT)/3600
		m.AvgJCT, m.P99JCT, m.MaxJCT = &avg, &p99, &most
	}
	return m, nil
}

// observedSource shows each drawn job to on, keeping the source's
// cluster check.
type observedSource struct {
	env.JobSource
	on func(env.DLJob)
}

func (o *observedSource) Next() env.DLJob {
	j := o.JobSource.Next()
	if !math.IsInf(j.Arrival, 1) {
		o.on(j)
	}
	return j
}

func (o *observedSource) CheckCluster(c *env.GPUCluster) error {
	if cc, ok := o.JobSource.(env.ClusterChecker); ok {
		return cc.CheckCluster(c)
	}
	return nil
}

// GPUPolicies expands a --scheduler list for GPU scenarios: "all" is
// every registered allocation policy; names are checked.
func GPUPolicies(list string) ([]string, error) {
	if strings.TrimSpace(list) == "all" {
		return env.AllocationPolicyNames(), nil
	}
	var out []string
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if _, err := env.AllocationPolicyByName(p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// SimulateGPU runs cfg under each policy, in parallel (workers; the
// results do not depend on it), calling onRun after each run.
func SimulateGPU(ctx context.Context, cfg GPURunConfig, policies []string, workers int, onRun func()) ([]GPUMetrics, error) {
	out := make([]GPUMetrics, len(policies))
	err := ForEach(ctx, len(policies), workers, func(i int) error {
		c := cfg
		c.Policy = policies[i]
		m, err := RunGPU(c)
		out[i] = m
		if err == nil && onRun != nil {
			onRun()
		}
		return err
	})
	return out, err
}

// WriteGPUTable writes one row per run: JCTs (hours), floor, fluid
// bound, utilisation, rounds and moves; "bound" where a run stopped above
// capacity.
func WriteGPUTable(w io.Writer, ms []GPUMetrics) error {
	h := func(v *float64) string {
		if v == nil {
			return "bound"
		}
		return strconv.FormatFloat(*v, 'f', 2, 64)
	}
	if len(ms) > 0 {
		fmt.Fprintf(w, "%s at %.3f jobs/h (offered GPU load %.3f), seed %d, %d measured jobs\n",
			ms[0].Scenario, ms[0].Rate, ms[0].Load, ms[0].Seed, ms[0].Measured)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scheduler\tavg JCT h\tp99 JCT h\tmax JCT h\tfloor h\tfluid bound h\tGPU util %\tjobs\trounds\tmoves\t")
	for _, m := range ms {
		fluid := "over capacity"
		if m.FluidJCT != nil {
			fluid = strconv.FormatFloat(*m.FluidJCT, 'f', 2, 64)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%.1f\t%d\t%d\t%d\t\n", m.Scheduler, h(m.AvgJCT), h(m.P99JCT), h(m.MaxJCT),
			m.FloorJCT, fluid, 100*m.Utilisation, m.Jobs, m.Rounds, m.Moves)
	}
	return tw.Flush()
}
