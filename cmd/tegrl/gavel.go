package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

func init() { addCommand(newGavelCmd) }

func newGavelCmd(a *app) *cobra.Command {
	f := &report.GavelOptions{}
	cmd := &cobra.Command{
		Use:     "gavel",
		Short:   "Run Gavel's continuous-jobs experiment on GPU training clusters and compare allocation policies",
		Long:    helpText("gavel"),
		Example: exampleText("gavel"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Command, f.Logger, f.Bar = report.CommandLine(a.argv), a.log, a.stderr
			return f.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	flagtag.Bind(fl, f)
	fl.StringVar(&f.Schedulers, "scheduler", report.DefaultGavelSchedulers, "comma-separated allocation policies: "+fmt.Sprint(env.AllocationPolicyNames())+", or learned policy files (tegrl train --preset gavel: DIR/policy.json or DIR)")
	return cmd
}
