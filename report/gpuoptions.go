package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
)

// GPUScenarioHelp describes the clusters and workloads of --scenario.
const GPUScenarioHelp = `clusters gavel (36:36:36), openb and spot (the bundled node lists;
openb/8: every 8th server of each GPU model); workloads single, multi
(gangs of 1-8 GPUs) and philly`

// GPUMachineFlags are the flags of the machine-level simulator that mean
// nothing on a GPU scenario.
var GPUMachineFlags = []string{"machines", "cluster", "workload", "duration", "ticks", "tick", "compress",
	"max-instances", "mtbf", "cluster-seed", "start", "window", "teg", "series-every",
	"run-id", "episode", "batch-rows", "max-bytes"}

// GPUScenarioRun checks the flags of a --scenario run: changed tells
// whether a flag was given. No machine-level flag may be, and the arrival
// rate comes from exactly one of --rate (run.Rate) and --load (load).
func GPUScenarioRun(changed func(flag string) bool, run GPURunConfig, load float64) (GPURunConfig, error) {
	for _, name := range GPUMachineFlags {
		if changed(name) {
			return GPURunConfig{}, fmt.Errorf("--%s has no meaning with --scenario (a GPU training cluster)", name)
		}
	}
	if changed("load") {
		if run.Rate > 0 {
			return run, fmt.Errorf("--rate and --load both set the arrival rate: give one")
		}
		run.Load = load
	} else if run.Rate == 0 {
		return run, fmt.Errorf("--scenario %s: give --rate (jobs per hour) or --load (offered GPU load)", run.Scenario)
	}
	return run, nil
}

// GPUPolicy is the allocation policy of --scheduler on a GPU scenario:
// spec when given, else fifo_perf; an unknown policy is an error.
func GPUPolicy(spec string, given bool) (string, error) {
	if !given {
		spec = "fifo_perf"
	}
	_, err := GPUPolicies(spec)
	return spec, err
}

// SimulateGPUOptions is tegrl simulate on a GPU training scenario.
type SimulateGPUOptions struct {
	Config     GPURunConfig
	Schedulers string // comma-separated allocation policies
	// SchedulersSet tells whether --scheduler was given: if not, the
	// default is fifo_perf.
	SchedulersSet bool
	JSON          bool // one JSON object per policy instead of the table
	Logger        *slog.Logger
	Bar           io.Writer // progress bar, drawn when it is a terminal
}

// Run simulates each policy on the scenario and prints the metrics.
func (o SimulateGPUOptions) Run(ctx context.Context, stdout io.Writer) error {
	list := o.Schedulers
	if !o.SchedulersSet {
		list = "fifo_perf"
	}
	policies, err := GPUPolicies(list)
	if err != nil {
		return err
	}
	if o.Logger != nil {
		o.Logger.Info("simulate", "scenario", o.Config.Scenario, "rate", o.Config.Rate, "load", o.Config.Load, "schedulers", strings.Join(policies, ","))
	}
	bar := NewProgress(o.Bar, len(policies), "simulate")
	ms, err := SimulateGPU(ctx, o.Config, policies, 0, func() { _ = bar.Add(1) })
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if !o.JSON {
		return WriteGPUTable(stdout, ms)
	}
	enc := json.NewEncoder(stdout)
	for i := range ms {
		if err := enc.Encode(&ms[i]); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	}
	return nil
}

// WriteGPURecording prints the files of a recording in dir, its counts
// and the metrics of its run.
func WriteGPURecording(w io.Writer, dir string, files []string, jobs, allocations int64, policy string, m GPUMetrics) error {
	for _, name := range files {
		fmt.Fprintln(w, filepath.Join(dir, name))
	}
	fmt.Fprintf(w, "%d jobs, %d allocation rows (%s on %s)\n", jobs, allocations, policy, m.Scenario)
	return WriteGPUTable(w, []GPUMetrics{m})
}
