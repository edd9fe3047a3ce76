package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/replay"
	"github.com/tegrl/tegrl/report"
)

const gpuScenarioHelp = report.GPUScenarioHelp

// gpuFlags select a GPU training scenario on the simulating commands.
type gpuFlags struct {
	scenario, placement       string
	rate, restore, allocation float64
}

func (g *gpuFlags) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&g.scenario, "scenario", "", "simulate a GPU training cluster: CLUSTER-WORKLOAD, e.g. gavel-single, openb/8-multi, spot-philly")
	fl.Float64Var(&g.rate, "rate", 0, "--scenario: arrival rate in jobs per hour (else --load sets it)")
	fl.Float64Var(&g.restore, "restore-s", 0, "--scenario: checkpoint/restore seconds charged to a job that resumes on other GPUs")
	fl.Float64Var(&g.allocation, "allocation-interval-s", 0, "--scenario: least seconds between two allocation recomputations, after a job arrived or finished (0: Gavel's 1920)")
	fl.StringVar(&g.placement, "placement", "", "--scenario: gang placement, "+strings.Join(env.GangPlacerNames(), ", ")+` ("": gavel, its worker order)`)
}

// scenarioOnly are gpuFlags' flags other than --scenario.
var scenarioOnly = []string{"rate", "restore-s", "allocation-interval-s", "placement"}

// unused refuses a flag of a GPU scenario on a run without --scenario,
// where it would be ignored.
func (g *gpuFlags) unused(cmd *cobra.Command) error {
	if g.scenario != "" {
		return nil
	}
	for _, name := range scenarioOnly {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s applies to a GPU training cluster: give --scenario too", name)
		}
	}
	return nil
}

// machineFlags are the flags that mean nothing on a GPU scenario.
var machineFlags = report.GPUMachineFlags

// config checks the flags of a GPU scenario run (report.GPUScenarioRun).
func (g *gpuFlags) config(cmd *cobra.Command, load float64, seed uint64) (report.GPURunConfig, error) {
	return report.GPUScenarioRun(cmd.Flags().Changed, report.GPURunConfig{Scenario: g.scenario, Rate: g.rate, Seed: seed,
		RestoreSeconds: g.restore, AllocationSeconds: g.allocation, Placement: g.placement}, load)
}

func runSimulateGPU(cmd *cobra.Command, a *app, f *simFlags) error {
	cfg, err := f.gpu.config(cmd, f.load, f.seed)
	if err != nil {
		return err
	}
	return report.SimulateGPUOptions{Config: cfg, Schedulers: f.schedulers, SchedulersSet: cmd.Flags().Changed("scheduler"),
		JSON: f.jsonOut, Logger: a.log, Bar: a.stderr}.Run(cmd.Context(), a.stdout)
}

func runRecordGPU(cmd *cobra.Command, a *app, f *recordFlags) error {
	run, err := f.gpu.config(cmd, f.load, f.seed)
	if err == nil {
		run.Policy, err = report.GPUPolicy(f.Scheduler, cmd.Flags().Changed("scheduler"))
	}
	if err != nil {
		return err
	}
	a.log.Info("record", "scenario", run.Scenario, "scheduler", run.Policy, "rate", run.Rate, "load", run.Load, "out", f.Out)
	rec, err := replay.RecordGPU(f.Out, replay.GPURunConfig{Scenario: run.Scenario, Rate: run.Rate, Load: run.Load,
		Policy: run.Policy, Seed: run.Seed, RestoreSeconds: run.RestoreSeconds, AllocationSeconds: run.AllocationSeconds, Placement: run.Placement})
	if err != nil {
		return err
	}
	if f.JSON {
		return printJSON(a.stdout, rec)
	}
	files := []string{replay.GPUJobsFile, replay.GPUAllocationsFile, replay.GPURunFile}
	return report.WriteGPURecording(a.stdout, f.Out, files, rec.Jobs, rec.Allocations, run.Policy, rec.Metrics)
}

func runReplayGPU(a *app, f *replayFlags) error {
	if f.Diff != "" {
		return errors.New("--diff: a GPU-cluster recording replays one scheduler at a time (--scheduler)")
	}
	rep, err := replay.ReplayGPU(f.Trace, f.Scheduler)
	if err != nil {
		return err
	}
	write := rep.WriteText
	if f.JSON {
		write = rep.WriteJSON
	}
	return errors.Join(write(a.stdout), rep.Failure())
}

func runTuneGPU(cmd *cobra.Command, a *app, f *tuneFlags) error {
	run, err := f.gpu.config(cmd, f.Load, 0)
	if err != nil {
		return err
	}
	return f.RunGPU(cmd.Context(), run, a.stdout)
}
