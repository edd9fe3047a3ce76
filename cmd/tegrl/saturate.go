package main

import (
	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newSaturateCmd) }

// Default trace tables: the bundled Alibaba GPU trace (a trace spec, as
// --cluster and --workload take: alibaba-gpu:FILE reads a file).
const (
	defaultGPUNodes = "alibaba-gpu"
	defaultGPUPods  = "alibaba-gpu"
)

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
	fl.StringVar(&f.Nodes, "nodes", defaultGPUNodes, "Alibaba GPU trace node table: alibaba-gpu (bundled nodes.csv) or alibaba-gpu:FILE; only machines with GPUs are used")
	fl.StringVar(&f.Pods, "pods", defaultGPUPods, "Alibaba GPU trace pod table: alibaba-gpu (bundled pods.csv) or alibaba-gpu:FILE")
	fl.StringVar(&f.Schedulers, "scheduler", "all", "comma-separated schedulers: random, bestfit, dotprod, packing, clustering, fgd, kube, p2c, or policy files (tegrl train --preset saturate); \"all\" = the FGD protocol's six (random through fgd)")
	fl.StringVar(&f.Seeds, "seeds", "42-51", "seeds: "+report.SeedsHelp)
	fl.Float64Var(&f.Tune, "tune", 1.3, "stop submitting pods when their GPU demand reaches this multiple of the GPU capacity")
	fl.IntVar(&f.Workers, "workers", 0, "runs at once; 0 = GOMAXPROCS (the number of usable CPUs)")
	fl.BoolVar(&f.JSON, "json", false, "write one JSON object per scheduler (JSON lines) to stdout instead of tables")
	fl.StringVar(&f.Plot, "plot", "", "also write a PNG plot of GPU allocation against arrived demand, one curve per scheduler, to this file")
	fl.StringVar(&f.OutMD, "out-md", "", "also write the Markdown summary table and the command line to this file")
	return cmd
}
