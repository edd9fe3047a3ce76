package main

import (
	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newSaturateCmd) }

func newSaturateCmd(a *app) *cobra.Command {
	f := &rl.SaturateRun{}
	cmd := &cobra.Command{
		Use:     "saturate",
		Short:   "Run the FGD GPU saturation experiment and compare schedulers",
		Long:    helpText("saturate"),
		Example: exampleText("saturate"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Command, f.Logger, f.Bar = report.CommandLine(a.argv), a.log, a.stderr
			return rl.RunSaturate(cmd.Context(), *f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	flagtag.Bind(fl, f)
	fl.StringVar(&f.Seeds, "seeds", "42-51", "seeds: "+report.SeedsHelp)
	return cmd
}
