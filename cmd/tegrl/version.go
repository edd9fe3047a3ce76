package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/report"
)

func init() { addCommand(newVersionCmd) }

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print tegrl's version: module version, commit, build time and Go version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(a.stdout, "tegrl %s\n", report.Version())
			return nil
		},
	}
}
