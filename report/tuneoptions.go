package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/tegrl/tegrl/env"
)

// TuneOptions is tegrl tune as its command line gives it: the scheduler,
// the grid, the seeds, the cluster and the output. Run grid-searches the
// machine-level simulator and RunGPU a GPU training scenario; their
// errors name the command's flags.
type TuneOptions struct {
	Scheduler string `flag:"scheduler" default:"langevin" usage:"scheduler to tune"`
	Grid      string `flag:"grid" usage:"parameter grid, \"name=v1,v2;name2=v3\" (required)"`
	Machines  int    `flag:"machines" default:"500" usage:"machines of the synthetic cluster"`
	// Load takes its default from DefaultTuneOptions.
	Load     float64 `flag:"load" usage:"offered load of the synthetic workload"`
	Duration string  `flag:"duration" default:"6h" usage:"simulated time per run"`
	Top      int     `flag:"top" default:"20" usage:"rows to print (0: all)"`
	OutMD    string  `flag:"out-md" usage:"also write the ranked table as Markdown, with the command line, to this file"`
	Workers  int     `flag:"workers" usage:"runs at once (0: GOMAXPROCS)"`
	// Seeds and Cluster are flags whose help is computed (SeedsHelp,
	// env.ClusterSpecHelp), so the command declares them itself.
	Seeds   string
	Cluster string

	// TEG applies the --teg assignments over the scheduler's governor (nil:
	// none).
	TEG     func(*env.TEGConfig) error
	Command string
	Logger  *slog.Logger
	Bar     io.Writer // progress bar, drawn when it is a terminal
}

// DefaultTuneOptions is tegrl tune's defaults that are not literals.
func DefaultTuneOptions() TuneOptions {
	return TuneOptions{Seeds: "1-3", Cluster: "synthetic", Load: env.DefaultWorkload.Load}
}

func (o *TuneOptions) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// CheckGrid reports a missing --grid, before anything else is checked.
func (o *TuneOptions) CheckGrid() error {
	if o.Grid == "" {
		return fmt.Errorf("--grid is required, e.g. \"temperature=0.01,0.05;w-frag=0,5\"")
	}
	return nil
}

// Config checks the options and loads the cluster of the grid search.
func (o *TuneOptions) Config() (TuneConfig, error) {
	if err := o.CheckGrid(); err != nil {
		return TuneConfig{}, err
	}
	grid, err := ParseGrid(o.Grid)
	if err != nil {
		return TuneConfig{}, err
	}
	seeds, err := ParseSeeds(o.Seeds)
	if err != nil {
		return TuneConfig{}, err
	}
	dur, err := env.ParseSeconds(o.Duration)
	if err != nil {
		return TuneConfig{}, err
	}
	cs, err := env.ParseClusterSpec(o.Cluster)
	if err != nil {
		return TuneConfig{}, err
	}
	cs.Machines, cs.Seed = o.Machines, 1
	c, err := cs.Load()
	if err != nil {
		return TuneConfig{}, fmt.Errorf("load cluster: %w", err)
	}
	tc := TuneConfig{Cluster: c, Scheduler: o.Scheduler, Base: env.GovernorTEG(o.Scheduler), Grid: grid, Seeds: seeds,
		Load: o.Load, Duration: dur, Workers: o.Workers}
	if o.TEG != nil {
		if err := o.TEG(&tc.Base); err != nil {
			return tc, err
		}
	}
	return tc, nil
}

// Run grid-searches the machine-level simulator and prints the ranked
// points to stdout, writing --out-md when asked.
func (o *TuneOptions) Run(ctx context.Context, stdout io.Writer) error {
	tc, err := o.Config()
	if err != nil {
		return err
	}
	o.logger().Info("tune", "scheduler", o.Scheduler, "grid", o.Grid, "points", tc.Runs()/len(tc.Seeds), "seeds", FormatSeeds(tc.Seeds), "machines", len(tc.Cluster.Machines))
	bar := NewProgress(o.Bar, tc.Runs(), "tune")
	tc.OnRun = func() { _ = bar.Add(1) }
	points, err := Tune(ctx, tc)
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if err := WriteSweep(stdout, tc.Grid, points, o.Top, false); err != nil {
		return err
	}
	if o.OutMD != "" {
		var b bytes.Buffer
		if err := WriteSweepMarkdown(&b, o.Command, tc.Grid, points); err != nil {
			return err
		}
		if err := os.WriteFile(o.OutMD, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", o.OutMD, err)
		}
	}
	return nil
}

// RunGPU grid-searches the allocation policy --scheduler on the GPU
// training scenario run and prints the ranked points as Run does.
func (o *TuneOptions) RunGPU(ctx context.Context, run GPURunConfig, stdout io.Writer) error {
	if err := o.CheckGrid(); err != nil {
		return err
	}
	run.Policy = o.Scheduler
	grid, err := ParseGPUGrid(o.Grid, run.Policy)
	if err != nil {
		return err
	}
	seeds, err := ParseSeeds(o.Seeds)
	if err != nil {
		return fmt.Errorf("--seeds: %w", err)
	}
	runs := len(seeds)
	for _, g := range grid {
		runs *= len(g.Values)
	}
	o.logger().Info("tune", "scenario", run.Scenario, "scheduler", run.Policy, "grid", o.Grid, "runs", runs)
	bar := NewProgress(o.Bar, runs, "tune")
	points, err := TuneGPU(ctx, run, grid, seeds, o.Workers, func() { _ = bar.Add(1) })
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if o.OutMD != "" {
		var b bytes.Buffer
		fmt.Fprintf(&b, "Command:\n\n```sh\n%s\n```\n\n", o.Command)
		if err := WriteGPUTune(&b, grid, points, 0); err != nil {
			return err
		}
		if err := os.WriteFile(o.OutMD, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out-md: %w", err)
		}
	}
	return WriteGPUTune(stdout, grid, points, o.Top)
}
