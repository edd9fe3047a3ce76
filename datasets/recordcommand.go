package datasets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// RecordCommand is tegrl dataset record as its command line gives it,
// for a run on a machine cluster. Run resolves the scheduler, builds the
// run, records it into Out (RecordRun) and prints the files and a summary;
// its errors name the command's flags.
type RecordCommand struct {
	// Scheduler is a flag whose help is computed (the scheduler names), so
	// the command declares it itself.
	Scheduler string
	Out       string `flag:"out" usage:"output folder (created if missing)"`
	RunID     string `flag:"run-id" usage:"run ID stored in every row (default SCHEDULER-seedSEED)"`
	Episode   int32  `flag:"episode" usage:"episode number stored in every row"`
	BatchRows int    `flag:"batch-rows" usage:"rows per Arrow record batch (batches also close at 64 MiB)"`
	JSON      bool   `flag:"json" usage:"print one JSON object (files, transitions, run metrics) instead of text"`
	MaxBytes  int64  `flag:"max-bytes" usage:"stop before transitions.arrow exceeds this many bytes, keeping it valid (0: no cap)"`

	// Build builds the run's cluster, workload and configuration (without
	// its TEG part); Cluster, Workload and Seed are the specs and seed it
	// was built from, for the log and the recording's source line.
	Build             func() (*env.Cluster, *env.Workload, env.SimConfig, error)
	Cluster, Workload string
	Seed              uint64
	// TEG is applied over the scheduler's governor.
	TEG env.TEGSettings
	// NewScheduler resolves Scheduler and CheckFit checks a policy file
	// against the cluster's size: rl's, which imports this package.
	NewScheduler func(spec string) (func() env.Scheduler, error)
	CheckFit     func(spec string, machines int) error

	Logger *slog.Logger
	Bar    io.Writer // progress bar, drawn when it is a terminal
}

// DefaultRecordCommand is tegrl dataset record's defaults for the flags
// it declares from RecordCommand's tags: the default batch size and a
// 4 GiB cap.
func DefaultRecordCommand() RecordCommand {
	return RecordCommand{BatchRows: DefaultBatchRows, MaxBytes: 4 << 30}
}

// Run records the run and prints the files written and a summary to w.
func (c RecordCommand) Run(ctx context.Context, w io.Writer) error {
	log := logger(c.Logger)
	newSched, err := c.NewScheduler(c.Scheduler)
	if err != nil {
		return err
	}
	sched := newSched()
	cl, wl, cfg, err := c.Build()
	if err != nil {
		return err
	}
	if err := c.CheckFit(c.Scheduler, len(cl.Machines)); err != nil {
		return err
	}
	teg := env.GovernorFor(sched)
	if err := c.TEG.Apply(&teg); err != nil {
		return err
	}
	cfg.TEG = &teg
	runID := c.RunID
	if runID == "" {
		runID = fmt.Sprintf("%s-seed%d", sched.Name(), c.Seed)
	}
	log.Info("record", "scheduler", sched.Name(), "cluster", c.Cluster, "machines", len(cl.Machines), "gpus", cl.TotalGPUs(),
		"workload", wl.Name, "jobs", len(wl.Jobs), "duration_s", cfg.Duration, "out", c.Out)
	rc := RecordConfig{RunID: runID, Episode: c.Episode, Sim: cfg, SchedulerSpec: c.Scheduler, Writer: WriterOptions{BatchRows: c.BatchRows,
		Source: fmt.Sprintf("record scheduler=%s cluster=%s workload=%s seed=%d", c.Scheduler, c.Cluster, c.Workload, c.Seed)}, MaxBytes: c.MaxBytes}
	if cfg.Duration > 0 {
		tick := cfg.Tick
		if tick == 0 {
			tick = env.DefaultSimConfig.Tick
		}
		bar := report.NewProgress(c.Bar, int(cfg.Duration/tick), "record")
		defer bar.Finish()
		p := report.TickProgress(bar, 1, tick)
		rc.Progress = func(now float64) { p(0, now) }
	}
	if c.MaxBytes < 0 {
		return fmt.Errorf("--max-bytes %d: want >= 0 (0: no cap)", c.MaxBytes)
	}
	res, err := RecordRun(ctx, c.Out, cl, wl, sched, rc)
	if errors.Is(err, ErrMaxBytes) {
		return fmt.Errorf("%w (raise --max-bytes, or shorten --duration)", err)
	}
	if err != nil {
		return err
	}
	log.Info("recorded", "transitions", res.Transitions, "reward_mean", res.Metrics.RewardMean)
	if c.JSON {
		return json.NewEncoder(w).Encode(res)
	}
	for _, p := range res.Files {
		fmt.Fprintln(w, p)
	}
	fmt.Fprintf(w, "%d transitions (%s, %d machines, %d jobs, %.0f simulated s, reward mean %.3f)\n",
		res.Transitions, sched.Name(), res.Machines, res.Jobs, res.Metrics.SimTimeS, res.Metrics.RewardMean)
	return nil
}
