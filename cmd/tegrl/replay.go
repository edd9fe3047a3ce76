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
		Use:     "replay",
		Short:   "Re-run a recorded run with any scheduler; check that it reproduces, or diff two schedulers' decisions",
		Long:    helpText("replay"),
		Example: exampleText("replay"),
		Args:    cobra.NoArgs,
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
