package main

import (
	"strings"
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
		Use:   "fetch NAME|all",
		Short: "Download the full public traces into a cache folder (resumable, SHA-256 checked)",
		Long: `fetch downloads a public trace from its publisher into --dir/NAME: the
repository bundles only part of each (package data). Datasets: ` + strings.Join(datasets.CatalogNames(), ", ") + `.

Downloads resume where they stopped (HTTP Range; a .part file holds the
bytes so far), a download that receives nothing for --stall is retried
from where it stopped, and every file is checked against its SHA-256: the
publisher's where one is published, else the sum recorded in
--dir/SHA256SUMS at its first download (reported "unverified" then). A
progress bar shows on a terminal. Read a fetched table with a trace spec,
e.g. --workload alibaba-gpu:DIR/alibaba-gpu-v2023/openb_pod_list_default.csv.`,
		Example: `  tegrl dataset fetch alibaba-gpu-v2023
  tegrl dataset fetch all --dir /data/traces`,
		Args: cobra.ExactArgs(1),
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
