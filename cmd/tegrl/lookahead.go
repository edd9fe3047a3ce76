package main

import (
	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newLookaheadCmd) }

func newLookaheadCmd(a *app) *cobra.Command {
	f := &rl.LookaheadRun{}
	cmd := &cobra.Command{
		Use:   "lookahead",
		Short: "Measure how much a placement among the policy's candidates could gain over a scheduler, knowing the future",
		Long: `lookahead runs the one-step rollout improvement of a base scheduler with
clairvoyant evaluation (Bertsekas' rollout algorithm, one step of policy
iteration): at each placement decision it tries every candidate machine the
learned policy would score (the base's choice among them) by simulating the
episode again from its start, with the choices made so far, that candidate,
and the base after it, to the end, and keeps the candidate whose episode
accrues the least slowdown. The result never accrues more slowdown than the
base: how far below it lands measures the headroom that a learned
placement policy has over the base on this workload.

It is a measurement, not a scheduler: it knows the workload's future, and
its cost is quadratic in the episode's length (one simulation per candidate
per decision, from the start): a 96-machine, two-hour episode at 90% load
takes 10-15 minutes of one core; --every N evaluates every N-th decision
only. Seeds run in parallel (--workers).

--support P tries only the base's choice and the candidates to which the
governor's placement distribution (langevin's: p ∝ exp(-E/T) over the
candidates) gives probability P or more: what a learner that can only
re-weight the actions in langevin's logs could gain, knowing the future.`,
		Example: `  tegrl lookahead --base langevin --machines 96 --load 0.9 --duration 2h --seeds 101-103
  tegrl lookahead --base kube --machines 96 --load 1.1 --duration 1h --seeds 201 --every 20 --json
  tegrl lookahead --base langevin --machines 96 --load 1.1 --duration 1h --seeds 201-206 --support 0.001`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return rl.RunLookahead(cmd.Context(), *f, a.stdout) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Base, "base", "langevin", "scheduler improved upon: a built-in name or a policy file")
	fl.StringVar(&f.Seeds, "seeds", "1", "seeds: "+report.SeedsHelp+"; each seeds its cluster, workload and run")
	fl.IntVar(&f.Every, "every", 1, "evaluate every n-th decision (the others follow the base)")
	fl.IntVar(&f.Candidates, "candidates", rl.DefaultPolicyConfig().Candidates, "candidate machines per decision, drawn as the learned policy draws them")
	fl.IntVar(&f.Workers, "workers", 0, "simulations at once (seeds, then each seed's rollouts); 0 = GOMAXPROCS")
	fl.Float64Var(&f.Support, "support", 0, "try only the base's choice and candidates with at least this probability under the governor's placement distribution (0: all)")
	f.TEG = addTEGFlag(fl).forSched
	fl.BoolVar(&f.JSON, "json", false, "print one JSON object (base, every, candidates, support, seeds: one object per seed)")
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
