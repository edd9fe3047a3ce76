package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/report"
)

func newDatasetFetchCmd(a *app) *cobra.Command {
	var (
		dir     string
		stall   time.Duration
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:     "fetch NAME|all",
		Short:   "Download the full public traces into a cache folder (resumable, SHA-256 checked)",
		Long:    helpText("dataset-fetch"),
		Example: exampleText("dataset-fetch"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			got, err := datasets.FetchDefault(cmd.Context(), args[0], datasets.FetchOptions{Dir: dir, Stall: stall, Bar: report.ByteBar(a.stderr), Log: a.log})
			if jsonOut && err == nil {
				return printJSON(a.stdout, got)
			}
			datasets.WriteFetched(a.stdout, got)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", "", "cache folder (default: the user cache folder's tegrl/traces)")
	fl.DurationVar(&stall, "stall", 30*time.Second, "retry a download that receives nothing for this long")
	fl.BoolVar(&jsonOut, "json", false, "print a JSON array (one object per file) instead of a table")
	return cmd
}
