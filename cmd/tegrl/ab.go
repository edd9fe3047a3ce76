package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newABCmd) }

// abFlags are the options of tegrl ab.
type abFlags struct {
	report.ABOptions
	gpu gpuFlags
}

func newABCmd(a *app) *cobra.Command {
	f := &abFlags{ABOptions: report.DefaultABOptions()}
	cmd := &cobra.Command{
		Use:     "ab",
		Short:   "Paired A/B evaluation of a scheduler against pure Langevin, with bootstrap confidence intervals",
		Long:    helpText("ab"),
		Example: exampleText("ab"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Set, f.Command, f.Logger, f.Bar = cmd.Flags().Changed, report.CommandLine(a.argv), a.log, a.stderr
			f.CheckScale = func(spec string, machines int) { _ = rl.CheckSchedulerFit(spec, rl.EnvCluster, machines, a.log) }
			if f.gpu.scenario != "" {
				run, err := f.gpu.config(cmd, f.Load, 0)
				if err != nil {
					return err
				}
				return f.RunGPU(cmd.Context(), run, a.stdout)
			}
			if err := f.gpu.unused(cmd); err != nil {
				return err
			}
			return f.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	addABFlags(cmd.Flags(), f)
	return cmd
}

// addABFlags declares ab's flags on fl.
func addABFlags(fl *pflag.FlagSet, f *abFlags) {
	flagtag.Bind(fl, &f.ABOptions)
	fl.StringVar(&f.Seeds, "seeds", f.Seeds, "seeds: "+report.SeedsHelp+"; at least two")
	fl.StringVar(&f.Cluster, "cluster", f.Cluster, env.ClusterSpecHelp)
	f.TEG = addTEGFlag(fl).forSched
	f.Resolve = contender
	f.gpu.addFlags(fl)
}

// contender resolves a scheduler spec with rl.SchedulerFactory for a
// cluster simulation.
func contender(spec string) (report.Contender, error) {
	mk, err := rl.SchedulerFactory(spec)
	if err == nil {
		err = rl.CheckSchedulerFit(spec, rl.EnvCluster, 0, nil)
	}
	if err != nil {
		return report.Contender{}, err
	}
	return report.Contender{Name: spec, New: mk}, nil
}
