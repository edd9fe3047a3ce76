package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/replay"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newReplayCmd) }

// replayFlags are the flags of `tegrl replay`.
type replayFlags struct {
	trace, scheduler, diff, governor string
	limit                            int
	jsonOut                          bool
}

func newReplayCmd(a *app) *cobra.Command {
	f := &replayFlags{}
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Re-run a recorded run with any scheduler; check that it reproduces, or diff two schedulers' decisions",
		Long: `replay re-runs a run recorded by tegrl dataset record (its cluster, workload,
seed, hence its arrivals and machine failures, tick, duration and TEG
configuration) deterministically under a scheduler, built-in or a policy
file, logging each decision (time, job, action).

Under the recorded scheduler, the default, every decision is compared with
the recorded one as transitions.arrow is streamed, and the final metrics'
JSON with the recorded run.json byte for byte: the command says whether
the replay reproduced the recording, and where it first diverged (step,
job, time, recorded and replayed actions) if not, and then fails.

With --diff OTHER it replays under both schedulers, aligns their decisions
by job and occurrence (the k-th decision for each job), lists where they
differ (the first --limit by time) and compares every metric (A, B, B - A,
which is better).

--governor own (default) runs each scheduler under its own TEG governor, as
tegrl simulate would, with the recording's TEG overrides (--safety,
--moves... given to record) applied; recorded runs every scheduler under
the recorded TEG configuration. Either way the recorded scheduler gets
exactly the recorded configuration.

A GPU-cluster recording (dataset record --scenario) is re-run on its
recorded jobs: under the recorded allocation policy every allocation and
the final metrics are compared byte for byte; under another --scheduler
its metrics are shown next to the recorded ones.`,
		Example: `  tegrl dataset record --scheduler fgd --machines 64 --duration 1h --mtbf 7200 --out data/fgd
  tegrl replay --trace data/fgd
  tegrl replay --trace data/fgd/transitions.arrow --scheduler fgd --diff langevin --limit 10
  tegrl replay --trace data/fgd --scheduler policy.safetensors --diff fgd --json
  tegrl replay --trace data/tiresias --scheduler max_min_fairness`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReplay(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.trace, "trace", "", "recorded run: a transitions.arrow, or the folder tegrl dataset record wrote")
	fl.StringVar(&f.scheduler, "scheduler", "", "scheduler to replay: a built-in name or a policy file (default: the recorded one)")
	fl.StringVar(&f.diff, "diff", "", "second scheduler (name or policy file): list the decisions where it differs and the metric consequences")
	fl.IntVar(&f.limit, "limit", 20, "differing decisions listed with --diff, first by time (0: all)")
	fl.StringVar(&f.governor, "governor", "own", "TEG configuration of a replayed scheduler: own (its governor plus the recording's overrides) or recorded")
	fl.BoolVar(&f.jsonOut, "json", false, "print one JSON object instead of text")
	cmd.MarkFlagRequired("trace")
	return cmd
}

func runReplay(cmd *cobra.Command, a *app, f *replayFlags) error {
	if replay.IsGPURecording(f.trace) {
		return runReplayGPU(a, f)
	}
	if f.limit < 0 {
		return fmt.Errorf("--limit %d: want 0 (all) or more", f.limit)
	}
	mode, err := replay.ParseGovernorMode(f.governor)
	if err != nil {
		return fmt.Errorf("--governor: %w", err)
	}
	t, err := replay.Open(f.trace)
	if err != nil {
		return err
	}
	spec := f.scheduler
	if spec == "" {
		spec = t.Config.SchedulerSpec
	}
	newA, err := rl.SchedulerFactory(spec)
	if err != nil {
		return fmt.Errorf("--scheduler: %w", err)
	}
	info := t.Info()
	a.log.Info("replay", "trace", t.Dir, "recorded", info.Scheduler, "machines", info.Machines, "jobs", info.Jobs,
		"duration_s", info.DurationS, "scheduler", spec, "diff", f.diff, "governor", mode)

	var b env.Scheduler
	if f.diff != "" {
		newB, err := rl.SchedulerFactory(f.diff)
		if err != nil {
			return fmt.Errorf("--diff: %w", err)
		}
		b = newB()
	}
	var bar progress = noProgress{}
	opt := replay.DiffOptions{Governor: mode, Limit: f.limit}
	if tick := t.Config.TickS; t.Config.DurationS > 0 {
		runs := map[bool]int{false: 1, true: 2}[b != nil]
		bar = newProgress(a.stderr, runs*int(t.Config.DurationS/tick), "replay")
		opt.Progress = tickProgress(bar, runs, tick)
	}
	rep, err := replay.Evaluate(cmd.Context(), t, newA(), b, opt)
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if f.jsonOut {
		err = rep.WriteJSON(a.stdout)
	} else {
		err = rep.WriteText(a.stdout)
	}
	return errors.Join(err, rep.Failure())
}
