package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

func init() { addCommand(newHeadroomCmd) }

func newHeadroomCmd(a *app) *cobra.Command {
	f := &report.HeadroomOptions{}
	cmd := &cobra.Command{
		Use:     "headroom",
		Short:   "Measure how far the GPU-cluster heuristics are from the zero-wait floor and from clairvoyant bounds",
		Long:    helpText("headroom"),
		Example: exampleText("headroom"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Command, f.Logger = report.CommandLine(a.argv), a.log
			return f.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	flagtag.Bind(fl, f)
	fl.StringVar(&f.Schedulers, "scheduler", report.DefaultHeadroomSchedulers, "policies: "+fmt.Sprint(env.AllocationPolicyNames())+", lookahead, or learned policy files (tegrl train --preset gavel: DIR/policy.json or DIR)")
	return cmd
}
