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
		Use:   "saturate",
		Short: "Run the FGD GPU saturation experiment and compare schedulers",
		Long: `saturate runs the GPU saturation experiment of the FGD paper (Weng et al.,
ATC'23) on the Alibaba GPU cluster trace.

The cluster is the trace's machines that have GPUs. For each seed the pods
are shuffled and topped up (drawn with replacement) until their GPU demand
reaches --tune x the GPU capacity; they are submitted one at a time, never
finish, and a pod that fits nowhere is dropped. After each pod the GPU
allocation ratio (allocated / capacity) and the fragmentation are recorded
at arrival bins of 1% of capacity, 0% to 130%.

Output, per scheduler: the allocation curve every 10% of arrival and at 130%
(mean ± std over seeds), the headline allocation at 130% arrival, the
fragmentation F(M) as % of capacity and the fragmentation ratio (F(M) / idle
GPU) at 130%; then a summary table sorted by allocation at 130%. Std is the
sample standard deviation (divisor n-1; 0 with one seed).

With --json, stdout has one JSON object per scheduler, one per line, with
keys scheduler, seeds, alloc_at_130_mean, alloc_at_130_std,
frag_at_130_mean, frag_at_130_std, frag_ratio_at_130_mean,
frag_ratio_at_130_std, pods_mean, dropped_mean, dropped_std and bins (131
objects: arrival_pct, alloc_mean, alloc_std, frag_pct_mean,
frag_ratio_pct_mean). All values are percentages except seeds, pods and
dropped (counts).

Runs for different seeds and schedulers go in parallel (--workers); the
results do not depend on it.`,
		Example: `  tegrl saturate --scheduler all --seeds 42-51 --plot docs/saturation.png --out-md docs/saturation.md
  tegrl saturate --scheduler fgd,bestfit --seeds 42,43,50 --json
  tegrl saturate --scheduler kube --seeds 7 --tune 1.0`,
		Args: cobra.NoArgs,
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
