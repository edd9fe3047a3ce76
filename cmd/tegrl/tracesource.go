package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/env"
)

// traceFlags are the flags that cut and scale a trace workload and seed
// the synthetic cluster apart from the workload, shared by the commands
// that build a runSource.
type traceFlags struct {
	clusterSeed   uint64
	start, window string
	fs            *pflag.FlagSet
	info          io.Writer // where the run's cluster and workload line goes
}

// addTraceFlags declares --cluster-seed, --start and --window on fl, keeps
// fl to tell which flags the user set, and sends the run's description to
// info.
func (t *traceFlags) addTraceFlags(fl *pflag.FlagSet, info io.Writer) {
	t.info = info
	fl.Uint64Var(&t.clusterSeed, "cluster-seed", 1, "seed of the synthetic cluster's machines (apart from --seed, so that runs of different seeds compare schedulers on one cluster)")
	fl.StringVar(&t.start, "start", "", "trace workloads: keep the jobs arriving from this trace time on (seconds or a Go duration such as 72h); time starts at the first job kept")
	fl.StringVar(&t.window, "window", "", "trace workloads: keep this much trace time from --start (seconds or a Go duration); the run stops at its end unless --duration says otherwise")
	t.fs = fl
}

func (t *traceFlags) changed(name string) bool {
	return t.fs != nil && t.fs.Changed(name)
}

// applyTrace sets the trace parts of the specs from the flags: the cluster
// seed, the window, and for trace workloads --load as a target offered
// load (the synthetic workload reads --load itself).
func (f *runSource) applyTrace(cs *env.ClusterSpec, ws *env.WorkloadSpec) error {
	if f.fs != nil {
		cs.Seed = f.clusterSeed
	}
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
		if ws.Window.Length, err = parseSeconds(f.window); err != nil {
			return fmt.Errorf("--window: %w", err)
		}
		if ws.Window.Length == 0 {
			return fmt.Errorf("--window 0: want a positive length (leave it out for the whole trace)")
		}
	}
	if f.changed("load") {
		ws.TraceLoad = f.load
	}
	return nil
}

// traceConfig fills the run's tick and duration for a trace workload: the
// tick scales with --compress unless --tick was given, and a --window run
// stops at the window's end unless --duration was given.
func (f *runSource) traceConfig(ws env.WorkloadSpec, cfg *env.SimConfig) {
	if ws.Source == "synthetic" {
		return
	}
	if !f.changed("tick") {
		cfg.Tick = ws.Tick(cfg.Tick)
	}
	if f.duration == "" && ws.Window.Length > 0 {
		cfg.Duration = ws.Window.Length / ws.Compress
	}
}

// describeRun writes the line every run prints to stderr: the cluster's
// machines and GPUs, and for a trace workload its jobs, active window and
// offered load (the target when --load set one).
func describeRun(w io.Writer, cs env.ClusterSpec, ws env.WorkloadSpec, c *env.Cluster, wl *env.Workload) {
	if w == nil {
		return
	}
	fmt.Fprintln(w, cs.Describe(c))
	if ws.Source == "synthetic" {
		return
	}
	l := env.OfferedLoad(wl, c)
	target := ""
	if ws.TraceLoad > 0 {
		target = fmt.Sprintf(" (--load %g)", ws.TraceLoad)
	}
	fmt.Fprintf(w, "workload: %d jobs over %.0f s, offered load %.3f%s (CPU %.3f, GPU %.3f)\n",
		len(wl.Jobs), l.SpanS, l.Offered(), target, l.CPU, l.GPU)
}
