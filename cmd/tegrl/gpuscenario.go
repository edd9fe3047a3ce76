package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/replay"
	"github.com/tegrl/tegrl/report"
)

const gpuScenarioHelp = `clusters gavel (36:36:36), openb and spot (the bundled node lists;
openb/8: every 8th server of each GPU model); workloads single, multi
(gangs of 1-8 GPUs) and philly`

// gpuFlags select a GPU training scenario on the simulating commands.
type gpuFlags struct {
	scenario, placement string
	rate, restore       float64
}

func (g *gpuFlags) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&g.scenario, "scenario", "", "simulate a GPU training cluster: CLUSTER-WORKLOAD, e.g. gavel-single, openb/8-multi, spot-philly")
	fl.Float64Var(&g.rate, "rate", 0, "--scenario: arrival rate in jobs per hour (else --load sets it)")
	fl.Float64Var(&g.restore, "restore-s", 0, "--scenario: checkpoint/restore seconds charged to a job that resumes on other GPUs")
	fl.StringVar(&g.placement, "placement", "", "--scenario: gang placement, "+strings.Join(env.GangPlacerNames(), ", ")+` ("": gavel, its worker order)`)
}

// machineFlags are the flags of the machine-level simulator that mean
// nothing on a GPU scenario.
var machineFlags = []string{"machines", "cluster", "workload", "duration", "ticks", "tick", "compress",
	"max-instances", "mtbf", "cluster-seed", "start", "window", "teg", "series-every",
	"run-id", "episode", "batch-rows", "max-bytes"}

// config checks that no machine-level flag was given and returns the run.
func (g *gpuFlags) config(cmd *cobra.Command, load float64, seed uint64) (report.GPURunConfig, error) {
	for _, name := range machineFlags {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			return report.GPURunConfig{}, fmt.Errorf("--%s has no meaning with --scenario (a GPU training cluster)", name)
		}
	}
	c := report.GPURunConfig{Scenario: g.scenario, Rate: g.rate, Seed: seed, RestoreSeconds: g.restore, Placement: g.placement}
	if fl := cmd.Flags().Lookup("load"); fl != nil && fl.Changed {
		if g.rate > 0 {
			return c, fmt.Errorf("--rate and --load both set the arrival rate: give one")
		}
		c.Load = load
	} else if g.rate == 0 {
		return c, fmt.Errorf("--scenario %s: give --rate (jobs per hour) or --load (offered GPU load)", g.scenario)
	}
	return c, nil
}

func runSimulateGPU(cmd *cobra.Command, a *app, f *simFlags) error {
	cfg, err := f.gpu.config(cmd, f.load, f.seed)
	if err != nil {
		return err
	}
	list := f.schedulers
	if !cmd.Flags().Changed("scheduler") {
		list = "fifo_perf"
	}
	policies, err := report.GPUPolicies(list)
	if err != nil {
		return err
	}
	a.log.Info("simulate", "scenario", cfg.Scenario, "rate", cfg.Rate, "load", cfg.Load, "schedulers", strings.Join(policies, ","))
	bar := newProgress(a.stderr, len(policies), "simulate")
	ms, err := report.SimulateGPU(cmd.Context(), cfg, policies, 0, func() { _ = bar.Add(1) })
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if !f.jsonOut {
		return report.WriteGPUTable(a.stdout, ms)
	}
	return printJSONLines(a.stdout, ms)
}

func runABGPU(cmd *cobra.Command, a *app, f *abFlags) error {
	run, err := f.gpu.config(cmd, f.Load, 0)
	if err != nil {
		return err
	}
	return f.RunGPU(cmd.Context(), run, a.stdout)
}

func runRecordGPU(cmd *cobra.Command, a *app, f *recordFlags) error {
	run, err := f.gpu.config(cmd, f.load, f.seed)
	if err != nil {
		return err
	}
	run.Policy = f.scheduler
	if !cmd.Flags().Changed("scheduler") {
		run.Policy = "fifo_perf"
	}
	if _, err := report.GPUPolicies(run.Policy); err != nil {
		return err
	}
	a.log.Info("record", "scenario", run.Scenario, "scheduler", run.Policy, "rate", run.Rate, "load", run.Load, "out", f.out)
	rec, err := replay.RecordGPU(f.out, replay.GPURunConfig{Scenario: run.Scenario, Rate: run.Rate, Load: run.Load,
		Policy: run.Policy, Seed: run.Seed, RestoreSeconds: run.RestoreSeconds, Placement: run.Placement})
	if err != nil {
		return err
	}
	if f.jsonOut {
		return printJSON(a.stdout, rec)
	}
	for _, name := range []string{replay.GPUJobsFile, replay.GPUAllocationsFile, replay.GPURunFile} {
		fmt.Fprintln(a.stdout, filepath.Join(f.out, name))
	}
	fmt.Fprintf(a.stdout, "%d jobs, %d allocation rows (%s on %s)\n", rec.Jobs, rec.Allocations, run.Policy, rec.Metrics.Scenario)
	return report.WriteGPUTable(a.stdout, []report.GPUMetrics{rec.Metrics})
}

func runReplayGPU(a *app, f *replayFlags) error {
	if f.diff != "" {
		return fmt.Errorf("--diff: a GPU-cluster recording replays one scheduler at a time (--scheduler)")
	}
	rep, err := replay.ReplayGPU(f.trace, f.scheduler)
	if err != nil {
		return err
	}
	if f.jsonOut {
		err = rep.WriteJSON(a.stdout)
	} else {
		err = rep.WriteText(a.stdout)
	}
	return errors.Join(err, rep.Failure())
}

func runTuneGPU(cmd *cobra.Command, a *app, f *tuneFlags) error {
	run, err := f.gpu.config(cmd, f.Load, 0)
	if err != nil {
		return err
	}
	return f.RunGPU(cmd.Context(), run, a.stdout)
}
