package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/rl"
)

// runSource are the flags that say what to simulate and for how long,
// shared by simulate and dataset record.
type runSource struct {
	machines     int
	cluster      string
	workload     string
	duration     string
	ticks        int
	tick         float64
	seed         uint64
	load         float64
	compress     float64
	maxInstances int
	mtbf         float64
	traceFlags
}

// build builds the cluster, the workload and the run's configuration
// (without its TEG part).
func (f *runSource) build() (*env.Cluster, *env.Workload, env.SimConfig, error) {
	var cfg env.SimConfig
	cs, err := env.ParseClusterSpec(f.cluster)
	if err != nil {
		return nil, nil, cfg, err
	}
	cs.Machines, cs.Seed = f.machines, f.seed
	ws, err := env.ParseWorkloadSpec(f.workload)
	if err != nil {
		return nil, nil, cfg, err
	}
	ws.Seed, ws.Config.Load, ws.Compress, ws.MaxInstances = f.seed, f.load, f.compress, f.maxInstances
	if err := f.applyTrace(&cs, &ws); err != nil {
		return nil, nil, cfg, err
	}
	c, err := cs.Load()
	if err != nil {
		return nil, nil, cfg, fmt.Errorf("load cluster: %w", err)
	}
	w, err := ws.Load(c)
	if err != nil {
		return nil, nil, cfg, fmt.Errorf("load workload: %w", err)
	}
	cfg = env.SimConfig{Seed: f.seed, Tick: f.tick, MaxTicks: f.ticks, MTBF: f.mtbf}
	switch {
	case f.duration != "":
		if cfg.Duration, err = parseSeconds(f.duration); err != nil {
			return nil, nil, cfg, err
		}
	case ws.Source == "synthetic":
		cfg.Duration = ws.Config.Horizon
	}
	f.traceConfig(ws, &cfg)
	describeRun(f.info, cs, ws, c, w)
	return c, w, cfg, nil
}

// simulateFlags are the flags of `tegrl simulate`.
type simulateFlags struct {
	runSource
	schedulers string
	jsonOut    bool

	// TEG switches ("" = the scheduler's default) and parameters.
	safety, moves, controller, tokens, contention string
	teg                                           env.TEGConfig
	flags                                         *pflag.FlagSet
}

func init() { addCommand(newSimulateCmd) }

func newSimulateCmd(a *app) *cobra.Command {
	f := &simulateFlags{}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Run schedulers on a simulated cluster and report job, utilisation, fragmentation and energy metrics",
		Long: `simulate runs a deterministic cluster simulation: jobs arrive (synthetic
bursty AI workload or a real Alibaba trace), wait in a queue, are placed by
the scheduler, run and complete; machines fail and recover. It prints one
row of metrics per scheduler, or with --json one JSON object per line.
The same flags and seed always print the same bytes.

Schedulers: ` + strings.Join(env.SchedulerNames, ", ") + ` (or "all").`,
		Example: `  tegrl simulate --scheduler all --machines 1000 --duration 6h --seed 1
  tegrl simulate --scheduler all --cluster alibaba-gpu --workload alibaba-gpu --window 48h --load 1.0
  tegrl simulate --scheduler fgd --cluster alibaba-gpu --workload alibaba-gpu:pods.csv.gz --compress 100 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimulate(a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.schedulers, "scheduler", "fgd", "scheduler name, a comma-separated list, or all")
	fl.IntVar(&f.machines, "machines", 1000, "machines of the synthetic cluster")
	fl.StringVar(&f.cluster, "cluster", "synthetic", env.ClusterSpecHelp)
	fl.StringVar(&f.workload, "workload", "synthetic", env.WorkloadSpecHelp)
	fl.StringVar(&f.duration, "duration", "", "simulated time to run (Go duration such as 6h, or seconds); default: the synthetic horizon (6h), a trace's --window, or until a trace drains")
	fl.IntVar(&f.ticks, "ticks", 0, "stop after this many ticks (0: no limit beyond --duration)")
	fl.Float64Var(&f.tick, "tick", env.DefaultSimConfig.Tick, "seconds per tick (trace workloads: divided by --compress unless given)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the workload, failures and scheduler randomness (the synthetic cluster has --cluster-seed)")
	fl.Float64Var(&f.load, "load", env.DefaultWorkload.Load, "offered load (fraction of the busier of CPU and GPU capacity): the synthetic workload's; for a trace, when given, its jobs are resampled or thinned (seeded) to it")
	fl.Float64Var(&f.compress, "compress", 1, "time-compression factor for trace workloads (arrivals and durations divided by it)")
	f.addTraceFlags(fl, a.stderr)
	fl.IntVar(&f.maxInstances, "max-instances", 1, "instances per 2018 batch task turned into jobs (0: all 2.5M)")
	fl.Float64Var(&f.mtbf, "mtbf", env.DefaultSimConfig.MTBF, "mean time between failures of one machine, seconds (negative: no failures)")
	fl.BoolVar(&f.jsonOut, "json", false, "print one JSON object per scheduler (JSON lines) instead of a table")

	// TEG mechanisms: switches default to the scheduler's governor (moves
	// and the damping controller on for langevin only).
	fl.StringVar(&f.safety, "safety", "", "safety layer (control barrier on memory and rack power): on or off (default on)")
	fl.StringVar(&f.moves, "moves", "", "Langevin moves of running jobs: on or off (default on for langevin only)")
	fl.StringVar(&f.controller, "controller", "", "Landau damping controller: on or off (default on for langevin only)")
	fl.StringVar(&f.tokens, "tokens", "", "token fair-share queue priority: on or off (default on)")
	fl.StringVar(&f.contention, "contention", "", "CPU/GPU contention slowdowns: on or off (default on)")
	d := env.DefaultTEG
	t := &f.teg
	fl.Float64Var(&t.Mobility, "mobility", d.Mobility, "μ0: move attempts per running job per second at zero damping")
	fl.Float64Var(&t.Gamma0, "temperature", d.Gamma0, "γ0: base temperature of placements and moves (T_eff = γ0/(1+D)); 0 = drift only")
	fl.Float64Var(&t.MigrationCost, "migration-cost", d.MigrationCost, "m_j: energy cost of a move")
	fl.Float64Var(&t.MigrationDowntime, "migration-downtime", d.MigrationDowntime, "seconds of lost progress per move")
	fl.IntVar(&t.PlaceCandidates, "place-candidates", d.PlaceCandidates, "d: candidate machines per langevin placement")
	fl.IntVar(&t.MoveCandidates, "move-candidates", d.MoveCandidates, "d: candidate machines per move attempt")
	fl.IntVar(&t.FieldEvery, "field-every", d.FieldEvery, "K: ticks between recomputations of the potential field")
	fl.IntVar(&t.Staleness, "staleness", d.Staleness, "s: ticks the agents' copy of the field lags (gossip delay)")
	fl.Float64Var(&t.Weights.CPU, "w-cpu", d.Weights.CPU, "field weight of CPU pressure")
	fl.Float64Var(&t.Weights.Mem, "w-mem", d.Weights.Mem, "field weight of memory pressure")
	fl.Float64Var(&t.Weights.GPU, "w-gpu", d.Weights.GPU, "field weight of GPU pressure")
	fl.Float64Var(&t.Weights.Net, "w-net", d.Weights.Net, "field weight of rack network congestion")
	fl.Float64Var(&t.Weights.Pow, "w-pow", d.Weights.Pow, "field weight of rack power")
	fl.Float64Var(&t.Weights.Frag, "w-frag", d.Weights.Frag, "field weight of the GPU fragmentation a job adds (FGD's measure, in GPUs)")
	fl.Float64Var(&t.Alpha, "alpha", d.Alpha, "α of the control barrier h(t+1) >= (1-α)h(t)")
	fl.Float64Var(&t.Horizon, "horizon", d.Horizon, "H: seconds of memory growth the barrier predicts")
	fl.Float64Var(&t.DMax, "d-max", d.DMax, "largest damping the controller sets")
	fl.Float64Var(&t.PhiC, "phi-c", d.PhiC, "φ_c: critical order parameter (queued work / capacity)")
	fl.Float64Var(&t.HalfLife, "half-life", d.HalfLife, "token half-life in seconds (0: tokens never evaporate)")
	fl.Float64Var(&t.MemOveruse, "mem-overuse", d.MemOveruse, "largest memory use above request, as a fraction (usage model)")
	fl.Float64Var(&t.OveruseShare, "overuse-share", d.OveruseShare, "share of jobs whose memory use ends above their request (usage model)")
	f.flags = fl
	return cmd
}

// tegFor returns the TEG configuration of one scheduler: its governor's
// defaults with the flags the user set applied.
func (f *simulateFlags) tegFor(sched env.Scheduler) (env.TEGConfig, error) {
	t := env.GovernorFor(sched)
	for _, sw := range []struct {
		flag, val string
		dst       *bool
	}{{"safety", f.safety, &t.Safety}, {"moves", f.moves, &t.Moves}, {"controller", f.controller, &t.Controller},
		{"tokens", f.tokens, &t.Tokens}, {"contention", f.contention, &t.Contention}} {
		if sw.val == "" {
			continue
		}
		v, err := env.ParseOnOff(sw.val)
		if err != nil {
			return t, fmt.Errorf("--%s %w", sw.flag, err)
		}
		*sw.dst = v
	}
	// Parameters: apply the flags the user set, by the names env knows.
	for _, name := range env.TEGParamNames() {
		fl := f.flags.Lookup(name)
		if fl == nil || !fl.Changed || fl.Value.Type() == "string" {
			continue
		}
		v, err := strconv.ParseFloat(fl.Value.String(), 64)
		if err != nil {
			return t, fmt.Errorf("--%s: %w", name, err)
		}
		if err := t.Set(name, v); err != nil {
			return t, fmt.Errorf("--%s: %w", name, err)
		}
	}
	return t, nil
}

// parseSchedulers expands "all" and comma lists of built-in names and
// policy files, resolving each to a constructor.
func parseSchedulers(s string) ([]string, []func() env.Scheduler, error) {
	names := strings.Split(s, ",")
	if s == "all" {
		names = env.SchedulerNames
	}
	var out []string
	var fs []func() env.Scheduler
	for _, name := range names {
		name = strings.TrimSpace(name)
		f, err := rl.SchedulerFactory(name)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, name)
		fs = append(fs, f)
	}
	return out, fs, nil
}

// parseSeconds accepts a Go duration ("6h", "90m") or plain seconds.
func parseSeconds(s string) (float64, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if v < 0 {
			return 0, fmt.Errorf("duration %q is negative", s)
		}
		return v, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a Go duration such as 6h or a number of seconds", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d.Seconds(), nil
}

func runSimulate(a *app, f *simulateFlags) error {
	out := a.stdout
	names, factories, err := parseSchedulers(f.schedulers)
	if err != nil {
		return err
	}
	c, w, cfg, err := f.build()
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := rl.CheckSchedulerFit(name, rl.EnvCluster, len(c.Machines), a.log); err != nil {
			return err
		}
	}
	a.log.Info("simulate", "cluster", f.cluster, "machines", len(c.Machines), "gpus", c.TotalGPUs(),
		"workload", w.Name, "jobs", len(w.Jobs), "schedulers", strings.Join(names, ","), "duration_s", cfg.Duration)

	results := make([]env.Metrics, len(names))
	errs := make([]error, len(names))
	bar := newProgress(a.stderr, len(names), "simulate")
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for k := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sched := factories[k]()
			teg, err := f.tegFor(sched)
			if err != nil {
				errs[k] = err
				return
			}
			run := cfg
			run.TEG = &teg
			sim, err := env.NewSim(c, w, sched, run)
			if err != nil {
				errs[k] = err
				return
			}
			results[k] = sim.Run()
			bar.Add(1)
		}()
	}
	wg.Wait()
	bar.Finish()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if f.jsonOut {
		enc := json.NewEncoder(out)
		for _, m := range results {
			if err := enc.Encode(m); err != nil {
				return err
			}
		}
		return nil
	}
	return writeSimTable(out, results)
}

func writeSimTable(out io.Writer, ms []env.Metrics) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scheduler\tdone/submitted\tfailed\tmean JCT s\tp95 JCT s\tslowdown\tmean wait s\tSLA viol %\tCPU %\tGPU %\tGPU frag %\tenergy kWh\tstarved\tmigrations\tOOM\tsafety viol\treward\t")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%.0f\t%.0f\t%.2f\t%.1f\t%.2f\t%.1f\t%.1f\t%.1f\t%.0f\t%d\t%d\t%d\t%d\t%.3f\t\n",
			m.Scheduler, m.JobsCompleted, m.JobsSubmitted, m.JobsFailed, m.MeanJCTS, m.P95JCTS, m.MeanSlowdown,
			m.MeanWaitS, 100*m.SLAViolationRate, 100*m.UtilCPU, 100*m.UtilGPU, 100*m.GPUFragRate, m.EnergyKWh, m.StarvedJobs,
			m.Migrations, m.OOMKills, m.SafetyViolations, m.RewardMean)
	}
	return tw.Flush()
}
