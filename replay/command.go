package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// Command is tegrl replay as its command line gives it, for a recording
// of a machine cluster. Run re-runs the recording (Evaluate), optionally
// against a second scheduler, and prints the report; its errors name the
// command's flags.
type Command struct {
	Trace     string `flag:"trace" usage:"recorded run: a transitions.arrow, or the folder tegrl dataset record wrote"`
	Scheduler string `flag:"scheduler" usage:"scheduler to replay: a built-in name or a policy file (default: the recorded one)"`
	Diff      string `flag:"diff" usage:"second scheduler (name or policy file): list the decisions where it differs and the metric consequences"`
	Limit     int    `flag:"limit" default:"20" usage:"differing decisions listed with --diff, first by time (0: all)"`
	Governor  string `flag:"governor" default:"own" usage:"TEG configuration of a replayed scheduler: own (its governor plus the recording's overrides) or recorded"`
	JSON      bool   `flag:"json" usage:"print one JSON object instead of text"`

	// NewScheduler resolves Scheduler and Diff: rl's, which imports this
	// package.
	NewScheduler func(spec string) (func() env.Scheduler, error)
	Logger       *slog.Logger
	Bar          io.Writer // progress bar, drawn when it is a terminal
}

// Run replays Trace and prints the report to w. The error joins a failed
// write with the replay's own failure (Report.Failure).
func (c Command) Run(ctx context.Context, w io.Writer) error {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	if c.Limit < 0 {
		return fmt.Errorf("--limit %d: want 0 (all) or more", c.Limit)
	}
	mode, err := ParseGovernorMode(c.Governor)
	if err != nil {
		return fmt.Errorf("--governor: %w", err)
	}
	t, err := Open(c.Trace)
	if err != nil {
		return err
	}
	spec := c.Scheduler
	if spec == "" {
		spec = t.Config.SchedulerSpec
	}
	newA, err := c.NewScheduler(spec)
	if err != nil {
		return fmt.Errorf("--scheduler: %w", err)
	}
	info := t.Info()
	log.Info("replay", "trace", t.Dir, "recorded", info.Scheduler, "machines", info.Machines, "jobs", info.Jobs,
		"duration_s", info.DurationS, "scheduler", spec, "diff", c.Diff, "governor", mode)

	var b env.Scheduler
	if c.Diff != "" {
		newB, err := c.NewScheduler(c.Diff)
		if err != nil {
			return fmt.Errorf("--diff: %w", err)
		}
		b = newB()
	}
	var bar report.Progress = report.NoProgress{}
	opt := DiffOptions{Governor: mode, Limit: c.Limit}
	if tick := t.Config.TickS; t.Config.DurationS > 0 {
		runs := map[bool]int{false: 1, true: 2}[b != nil]
		bar = report.NewProgress(c.Bar, runs*int(t.Config.DurationS/tick), "replay")
		opt.Progress = report.TickProgress(bar, runs, tick)
	}
	rep, err := Evaluate(ctx, t, newA(), b, opt)
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if c.JSON {
		err = rep.WriteJSON(w)
	} else {
		err = rep.WriteText(w)
	}
	return errors.Join(err, rep.Failure())
}
