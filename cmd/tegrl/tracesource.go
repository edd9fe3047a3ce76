package main

import (
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
// (without its TEG part) and describes them on f.info (env.SourceSpec).
func (f *runSource) build() (*env.Cluster, *env.Workload, env.SimConfig, error) {
	s := env.SourceSpec{Machines: f.machines, Ticks: f.ticks, MaxInstances: f.maxInstances, Cluster: f.cluster, Workload: f.workload,
		Duration: f.duration, Tick: f.tick, Load: f.load, Compress: f.compress, MTBF: f.mtbf, Seed: f.seed}
	if f.fs != nil {
		s.Cut = &env.TraceCut{ClusterSeed: f.clusterSeed, Start: f.start, Window: f.window, TickSet: f.fs.Changed("tick"), LoadSet: f.fs.Changed("load")}
	}
	return s.Build(f.info)
}
