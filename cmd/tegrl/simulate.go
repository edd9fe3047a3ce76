package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

// simFlags are the flags of `tegrl simulate`.
type simFlags struct {
	runSource
	schedulers string
	jsonOut    bool
	teg        *tegFlag
	gpu        gpuFlags
}

func init() { addCommand(newSimulateCmd) }

func newSimulateCmd(a *app) *cobra.Command {
	f := &simFlags{}
	cmd := &cobra.Command{
		Use:     "simulate",
		Short:   "Run schedulers on a simulated cluster and report job, utilisation, fragmentation and energy metrics",
		Long:    helpText("simulate"),
		Example: exampleText("simulate"),
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runSimulate(cmd, a, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.schedulers, "scheduler", "fgd", "scheduler name, a comma-separated list, or all")
	f.addFlags(fl, 1000, "", a.stderr)
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the workload, failures and scheduler randomness (the synthetic cluster has --cluster-seed)")
	fl.BoolVar(&f.jsonOut, "json", false, "print one JSON object per scheduler (JSON lines) instead of a table")
	f.teg = addTEGFlag(fl)
	f.gpu.addFlags(fl)
	return cmd
}

func runSimulate(cmd *cobra.Command, a *app, f *simFlags) error {
	if f.gpu.scenario != "" {
		return runSimulateGPU(cmd, a, f)
	}
	if err := f.gpu.unused(cmd); err != nil {
		return err
	}
	names, factories, err := rl.SchedulerFactories(f.schedulers)
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
	bar := newProgress(a.stderr, len(names), "simulate")
	results, err := report.Simulate(cmd.Context(), report.SimulateConfig{Cluster: c, Workload: w, Sim: cfg,
		New: factories, TEG: f.teg.forSched, OnRun: func() { _ = bar.Add(1) }})
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if !f.jsonOut {
		return report.WriteMetricsTable(a.stdout, results)
	}
	return report.WriteJSONLines(a.stdout, results)
}
