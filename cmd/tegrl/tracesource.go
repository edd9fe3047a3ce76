package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/env"
)

// runSource are the flags that say what to simulate and for how long,
// shared by simulate, lookahead and dataset record.
type runSource struct {
	machines, ticks, maxInstances int
	cluster, workload, duration   string
	tick, load, compress, mtbf    float64
	seed                          uint64
	traceFlags
}

// traceFlags cut and scale a trace workload and seed the synthetic
// cluster apart from the workload.
type traceFlags struct {
	clusterSeed   uint64
	start, window string
	fs            *pflag.FlagSet // the flags the user set; nil: cluster seed = --seed
	info          io.Writer      // where the run's cluster and workload line goes
}

// addFlags declares runSource's flags on fl (all but --seed) with the
// command's default machines and duration; the run's description goes to info.
func (f *runSource) addFlags(fl *pflag.FlagSet, machines int, duration string, info io.Writer) {
	fl.IntVar(&f.machines, "machines", machines, "machines of the synthetic cluster")
	fl.StringVar(&f.cluster, "cluster", "synthetic", env.ClusterSpecHelp)
	fl.StringVar(&f.workload, "workload", "synthetic", env.WorkloadSpecHelp)
	fl.StringVar(&f.duration, "duration", duration, `simulated time to run (Go duration such as 6h, or seconds); "": the synthetic horizon (6h), a trace's --window, or until a trace drains`)
	fl.IntVar(&f.ticks, "ticks", 0, "stop after this many ticks (0: no limit beyond --duration)")
	fl.Float64Var(&f.tick, "tick", env.DefaultSimConfig.Tick, "seconds per tick (trace workloads: divided by --compress unless given)")
	fl.Float64Var(&f.load, "load", env.DefaultWorkload.Load, "offered load (fraction of the busier of CPU and GPU capacity): the synthetic workload's; for a trace, when given, its jobs are resampled or thinned (seeded) to it")
	fl.Float64Var(&f.compress, "compress", 1, "time-compression factor for trace workloads (arrivals and durations divided by it)")
	f.addTraceFlags(fl, info)
	fl.IntVar(&f.maxInstances, "max-instances", 1, "instances per 2018 batch task turned into jobs (0: all 2.5M)")
	fl.Float64Var(&f.mtbf, "mtbf", env.DefaultSimConfig.MTBF, "mean time between failures of one machine, seconds (negative: no failures)")
}

// addTraceFlags declares --cluster-seed, --start and --window on fl.
func (t *traceFlags) addTraceFlags(fl *pflag.FlagSet, info io.Writer) {
	t.info, t.fs = info, fl
	fl.Uint64Var(&t.clusterSeed, "cluster-seed", 1, "seed of the synthetic cluster's machines (apart from --seed, so that runs of different seeds compare schedulers on one cluster)")
	fl.StringVar(&t.start, "start", "", "trace workloads: keep the jobs arriving from this trace time on (seconds or a Go duration such as 72h); time starts at the first job kept")
	fl.StringVar(&t.window, "window", "", "trace workloads: keep this much trace time from --start (seconds or a Go duration); the run stops at its end unless --duration says otherwise")
}

// build builds the cluster, the workload and the run's configuration
// (without its TEG part) and describes them on f.info.
func (f *runSource) build() (*env.Cluster, *env.Workload, env.SimConfig, error) {
	cfg := env.SimConfig{Seed: f.seed, Tick: f.tick, MaxTicks: f.ticks, MTBF: f.mtbf}
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
	switch {
	case f.duration != "":
		if cfg.Duration, err = parseSeconds(f.duration); err != nil {
			return nil, nil, cfg, err
		}
	case ws.Source == "synthetic":
		cfg.Duration = ws.Config.Horizon
	}
	if ws.Source != "synthetic" {
		if f.fs == nil || !f.fs.Changed("tick") { // the tick scales with --compress unless given
			cfg.Tick = ws.Tick(cfg.Tick)
		}
		if f.duration == "" && ws.Window.Length > 0 {
			cfg.Duration = ws.Window.Length / ws.Compress
		}
	}
	if f.info != nil {
		fmt.Fprintln(f.info, cs.Describe(c))
		if ws.Source != "synthetic" {
			fmt.Fprintln(f.info, env.DescribeTraceLoad(w, c, ws.TraceLoad))
		}
	}
	return c, w, cfg, nil
}

// applyTrace sets the cluster seed, the window, and for trace workloads
// --load as a target offered load (the synthetic workload reads --load).
func (f *runSource) applyTrace(cs *env.ClusterSpec, ws *env.WorkloadSpec) error {
	if f.fs == nil {
		return nil
	}
	cs.Seed = f.clusterSeed
	if ws.Source == "synthetic" {
		if f.start != "" || f.window != "" {
			return fmt.Errorf("--start and --window cut trace workloads; the synthetic workload has --duration")
		}
		return nil
	}
	var err error
	if f.start != "" {
		if ws.Window.Start, err = parseSeconds(f.start); err != nil {
			return fmt.Errorf("--start: %w", err)
		}
	}
	if f.window != "" {
		if ws.Window.Length, err = parseSeconds(f.window); err != nil || ws.Window.Length == 0 {
			return fmt.Errorf("--window %q: want a positive length (leave it out for the whole trace)", f.window)
		}
	}
	if f.fs.Changed("load") {
		ws.TraceLoad = f.load
	}
	return nil
}
