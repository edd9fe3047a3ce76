package main

import (
	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/cmd/internal/flagtag"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newLookaheadCmd) }

func newLookaheadCmd(a *app) *cobra.Command {
	f := &rl.LookaheadRun{}
	cmd := &cobra.Command{
		Use:     "lookahead",
		Short:   "Measure how much a placement among the policy's candidates could gain over a scheduler, knowing the future",
		Long:    helpText("lookahead"),
		Example: exampleText("lookahead"),
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return rl.RunLookahead(cmd.Context(), *f, a.stdout) },
	}
	fl := cmd.Flags()
	flagtag.Bind(fl, f)
	fl.StringVar(&f.Seeds, "seeds", "1", "seeds: "+report.SeedsHelp+"; each seeds its cluster, workload and run")
	fl.IntVar(&f.Candidates, "candidates", rl.DefaultPolicyConfig().Candidates, "candidate machines per decision, drawn as the learned policy draws them")
	f.TEG = addTEGFlag(fl).forSched
	fl.IntVar(&f.Source.Machines, "machines", 96, "machines of the synthetic cluster")
	fl.StringVar(&f.Source.Cluster, "cluster", "synthetic", env.ClusterSpecHelp)
	fl.StringVar(&f.Source.Workload, "workload", "synthetic", env.WorkloadSpecHelp)
	fl.StringVar(&f.Source.Duration, "duration", "1h", "simulated time per episode (Go duration or seconds)")
	fl.Float64Var(&f.Source.Tick, "tick", env.DefaultSimConfig.Tick, "seconds per tick")
	fl.Float64Var(&f.Source.Load, "load", env.DefaultWorkload.Load, "offered load of the synthetic workload")
	fl.Float64Var(&f.Source.Compress, "compress", 1, "time-compression factor for trace workloads")
	fl.IntVar(&f.Source.MaxInstances, "max-instances", 1, "instances per 2018 batch task turned into jobs (0: all)")
	fl.Float64Var(&f.Source.MTBF, "mtbf", env.DefaultSimConfig.MTBF, "mean time between failures of one machine, seconds (negative: no failures)")
	return cmd
}
