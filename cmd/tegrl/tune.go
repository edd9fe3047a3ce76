package main

import (
	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

func init() { addCommand(newTuneCmd) }

// tuneFlags are the options of tegrl tune.
type tuneFlags struct {
	report.TuneOptions
	gpu gpuFlags
}

func newTuneCmd(a *app) *cobra.Command {
	f := &tuneFlags{TuneOptions: report.DefaultTuneOptions()}
	cmd := &cobra.Command{
		Use:     "tune",
		Short:   "Grid-search a scheduler's TEG parameters on training seeds, ranked by mean reward",
		Long:    helpText("tune"),
		Example: exampleText("tune"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Command, f.Logger, f.Bar = report.CommandLine(a.argv), a.log, a.stderr
			if err := f.gpu.unused(cmd); err != nil {
				return err
			}
			if err := f.CheckGrid(); err != nil || f.gpu.scenario == "" {
				return f.Run(cmd.Context(), a.stdout)
			}
			return runTuneGPU(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	flagtag.Bind(fl, &f.TuneOptions)
	fl.StringVar(&f.Seeds, "seeds", f.Seeds, "training seeds: "+report.SeedsHelp)
	fl.StringVar(&f.Cluster, "cluster", f.Cluster, env.ClusterSpecHelp)
	f.TEG = addTEGFlag(fl).apply
	f.gpu.addFlags(fl)
	return cmd
}
