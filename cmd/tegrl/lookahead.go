package main

import (
	"context"
	"fmt"
	"runtime"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newLookaheadCmd) }

// lookaheadSeed is one seed's line of tegrl lookahead --json.
type lookaheadSeed struct {
	Seed         uint64  `json:"seed"`
	Decisions    int     `json:"decisions"`
	Evaluated    int     `json:"evaluated"`
	Changed      int     `json:"changed"`
	Rollouts     int     `json:"rollouts"`
	BaseSlowdown float64 `json:"base_mean_slowdown"`
	LookSlowdown float64 `json:"lookahead_mean_slowdown"`
	BaseAccrued  float64 `json:"base_accrued_slowdown"`
	LookAccrued  float64 `json:"lookahead_accrued_slowdown"`
	BaseSLA      float64 `json:"base_sla_violation_rate"`
	LookSLA      float64 `json:"lookahead_sla_violation_rate"`
}

func newLookaheadCmd(a *app) *cobra.Command {
	var (
		f          runSource
		base       string
		seeds      string
		every      int
		candidates int
		workers    int
		support    float64
		jsonOut    bool
	)
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if every < 1 || candidates < 2 || !(support >= 0 && support <= 1) {
				return fmt.Errorf("--every must be >= 1, --candidates >= 2 and --support in [0, 1]")
			}
			mk, err := rl.SchedulerFactory(base)
			if err != nil {
				return fmt.Errorf("--base: %w", err)
			}
			ss, err := report.ParseSeeds(seeds)
			if err != nil {
				return fmt.Errorf("--seeds: %w", err)
			}
			if workers <= 0 {
				workers = runtime.GOMAXPROCS(0)
			}
			rows, err := runLookahead(cmd.Context(), f, mk, ss, rl.LookaheadConfig{Every: every, Candidates: candidates, Support: support}, workers)
			if err != nil {
				return err
			}
			if jsonOut {
				return printJSON(a.stdout, map[string]any{"base": base, "every": every, "candidates": candidates, "support": support, "seeds": rows})
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintf(tw, "seed\tdecisions\tevaluated\tchanged\t%s slowdown\tlookahead slowdown\tdiff\taccrued %s\taccrued lookahead\tdiff\t\n", base, base)
			var sb, sl float64
			for _, r := range rows {
				fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.4f\t%.4f\t%+.2f%%\t%.1f\t%.1f\t%+.2f%%\t\n", r.Seed, r.Decisions, r.Evaluated, r.Changed,
					r.BaseSlowdown, r.LookSlowdown, 100*(r.LookSlowdown/r.BaseSlowdown-1), r.BaseAccrued, r.LookAccrued, 100*(r.LookAccrued/r.BaseAccrued-1))
				sb += r.BaseSlowdown
				sl += r.LookSlowdown
			}
			if len(rows) > 1 {
				n := float64(len(rows))
				fmt.Fprintf(tw, "mean\t\t\t\t%.4f\t%.4f\t%+.2f%%\t\t\t\t\n", sb/n, sl/n, 100*(sl/sb-1))
			}
			return tw.Flush()
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&base, "base", "langevin", "scheduler improved upon: a built-in name or a policy file")
	fl.StringVar(&seeds, "seeds", "1", "seeds: "+report.SeedsHelp+"; each seeds its cluster, workload and run")
	fl.IntVar(&every, "every", 1, "evaluate every n-th decision (the others follow the base)")
	fl.IntVar(&candidates, "candidates", rl.DefaultPolicyConfig().Candidates, "candidate machines per decision, drawn as the learned policy draws them")
	fl.IntVar(&workers, "workers", 0, "simulations at once (seeds, then each seed's rollouts); 0 = GOMAXPROCS")
	fl.Float64Var(&support, "support", 0, "try only the base's choice and candidates with at least this probability under the governor's placement distribution (0: all)")
	fl.BoolVar(&jsonOut, "json", false, "print one JSON object (base, every, candidates, support, seeds: one object per seed)")
	fl.IntVar(&f.machines, "machines", 96, "machines of the synthetic cluster")
	fl.StringVar(&f.cluster, "cluster", "synthetic", "cluster: synthetic, alibaba-gpu:PATH (nodes.csv) or alibaba-2018:PATH (machine_meta.csv)")
	fl.StringVar(&f.workload, "workload", "synthetic", "workload: synthetic, alibaba-gpu:PATH (pods.csv) or alibaba-batch:PATH (2018 jobs.csv)")
	fl.StringVar(&f.duration, "duration", "1h", "simulated time per episode (Go duration or seconds)")
	fl.Float64Var(&f.tick, "tick", env.DefaultSimConfig.Tick, "seconds per tick")
	fl.Float64Var(&f.load, "load", env.DefaultWorkload.Load, "offered load of the synthetic workload")
	fl.Float64Var(&f.compress, "compress", 1, "time-compression factor for trace workloads")
	fl.IntVar(&f.maxInstances, "max-instances", 1, "instances per 2018 batch task turned into jobs (0: all)")
	fl.Float64Var(&f.mtbf, "mtbf", env.DefaultSimConfig.MTBF, "mean time between failures of one machine, seconds (negative: no failures)")
	return cmd
}

// runLookahead runs rl.Lookahead with la's Every, Candidates and Support
// on each seed, workers at a time, in seed order in the result.
func runLookahead(ctx context.Context, f runSource, mk func() env.Scheduler, seeds []uint64, la rl.LookaheadConfig, workers int) ([]lookaheadSeed, error) {
	rows := make([]lookaheadSeed, len(seeds))
	// Seeds in parallel first; the workers left over run each seed's
	// rollouts in parallel.
	seedWorkers := min(workers, len(seeds))
	rollWorkers := max(1, workers/max(seedWorkers, 1))
	err := report.ForEach(ctx, len(seeds), seedWorkers, func(i int) error {
		src := f
		src.seed = seeds[i]
		c, w, cfg, err := src.build()
		if err != nil {
			return err
		}
		lc := la
		lc.Base, lc.Seed, lc.Workers = mk, seeds[i], rollWorkers
		res, err := rl.Lookahead(ctx, c, w, cfg, lc)
		if err != nil {
			return fmt.Errorf("seed %d: %w", seeds[i], err)
		}
		rows[i] = lookaheadSeed{Seed: seeds[i], Decisions: res.Decisions, Evaluated: res.Evaluated, Changed: res.Changed, Rollouts: res.Rollouts,
			BaseSlowdown: res.Base.MeanSlowdown, LookSlowdown: res.Lookahead.MeanSlowdown,
			BaseAccrued: res.BaseAccrued, LookAccrued: res.LookaheadAccrued,
			BaseSLA: res.Base.SLAViolationRate, LookSLA: res.Lookahead.SLAViolationRate}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}
