package main

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newDatasetCmd) }

func newDatasetCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Convert traces, generate workloads, record transitions and inspect Arrow datasets",
		Long:  helpText("dataset"),
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newDatasetConvertCmd(a), newDatasetGenCmd(a), newDatasetRecordCmd(a), newDatasetInspectCmd(a), newDatasetFetchCmd(a))
	return cmd
}

func printJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

func newDatasetConvertCmd(a *app) *cobra.Command {
	f := datasets.DefaultConvertCommand()
	cmd := &cobra.Command{
		Use:     "convert",
		Short:   "Convert Alibaba cluster traces into machines.arrow, jobs.arrow and usage.arrow",
		Long:    helpText("dataset-convert"),
		Example: exampleText("dataset-convert"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Logger = a.log
			return f.Run(a.stdout)
		},
	}
	flagtag.Bind(cmd.Flags(), &f)
	cmd.MarkFlagRequired("from")
	cmd.MarkFlagRequired("out")
	return cmd
}

func newDatasetGenCmd(a *app) *cobra.Command {
	f := datasets.DefaultGenCommand()
	cmd := &cobra.Command{
		Use:     "gen",
		Short:   "Write a synthetic cluster and workload as machines.arrow and jobs.arrow",
		Long:    helpText("dataset-gen"),
		Example: exampleText("dataset-gen"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Logger = a.log
			return f.Run(a.stdout)
		},
	}
	flagtag.Bind(cmd.Flags(), &f)
	cmd.MarkFlagRequired("out")
	return cmd
}

// recordFlags are the flags of `tegrl dataset record`: simulate's cluster,
// workload, run and TEG switch flags, plus the output (datasets.RecordCommand).
// scheduler, out and jsonOut are their copies that runRecordGPU reads.
type recordFlags struct {
	runSource
	datasets.RecordCommand
	teg *tegFlag
	gpu gpuFlags
}

func newDatasetRecordCmd(a *app) *cobra.Command {
	f := &recordFlags{RecordCommand: datasets.DefaultRecordCommand()}
	cmd := &cobra.Command{
		Use:     "record",
		Short:   "Run a scheduler in the simulator and record one transition per decision",
		Long:    helpText("dataset-record"),
		Example: exampleText("dataset-record"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.gpu.scenario != "" {
				return runRecordGPU(cmd, a, f)
			}
			if err := f.gpu.unused(cmd); err != nil {
				return err
			}
			r := f.RecordCommand
			r.Build, r.Cluster, r.Workload, r.Seed, r.TEG = f.build, f.cluster, f.workload, f.seed, f.teg.set
			r.NewScheduler, r.Logger, r.Bar = rl.SchedulerFactory, a.log, a.stderr
			r.CheckFit = func(spec string, machines int) error {
				return rl.CheckSchedulerFit(spec, rl.EnvCluster, machines, a.log)
			}
			return r.Run(cmd.Context(), a.stdout)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Scheduler, "scheduler", "fgd", "scheduler: a built-in name ("+strings.Join(env.SchedulerNames, ", ")+") or a policy file")
	f.addFlags(fl, 100, "1h", a.stderr)
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the workload, failures and scheduler randomness (the synthetic cluster has --cluster-seed)")
	f.teg = addTEGFlag(fl)
	flagtag.Bind(fl, &f.RecordCommand)
	f.gpu.addFlags(fl)
	cmd.MarkFlagRequired("out")
	return cmd
}

func newDatasetInspectCmd(a *app) *cobra.Command {
	var f datasets.InspectCommand
	cmd := &cobra.Command{
		Use:     "inspect FILE",
		Short:   "Print a dataset's kind, schema, metadata, row and batch counts and column statistics",
		Long:    helpText("dataset-inspect"),
		Example: exampleText("dataset-inspect"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.Run(args[0], a.stdout)
		},
	}
	flagtag.Bind(cmd.Flags(), &f)
	return cmd
}
