package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newTrainCmd) }

func newTrainCmd(a *app) *cobra.Command {
	f := new(rl.TrainOptions)
	*f = rl.DefaultTrainOptions()
	cmd := &cobra.Command{
		Use:     "train",
		Short:   "Train a placement + damping policy with PPO and IMPALA-style actors over NATS",
		Long:    helpText("train"),
		Example: exampleText("train"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Set, f.Command, f.Logger, f.Bar = cmd.Flags().Changed, report.CommandLine(a.argv), a.log, a.stderr
			return f.Run(cmd.Context(), a.stdout)
		},
	}
	addTrainFlags(cmd.Flags(), f)
	return cmd
}

// addTrainFlags declares the flags of `tegrl train` on fl.
func addTrainFlags(fl *pflag.FlagSet, f *rl.TrainOptions) {
	flagtag.Bind(fl, f)
	fl.StringVar(&f.EvalSeeds, "eval-seeds", rl.EvalSeeds, "held-out seeds of the final evaluation (\"\" skips it; --preset saturate: "+rl.SaturateEvalSeeds+" unless given)")
}
