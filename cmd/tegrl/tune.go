package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

func init() { addCommand(newTuneCmd) }

// tuneFlags are the options of tegrl tune.
type tuneFlags struct {
	scheduler string
	grid      string
	seeds     string
	machines  int
	cluster   string
	load      float64
	duration  string
	top       int
	outMD     string
	workers   int
	teg       *tegFlag
	gpu       gpuFlags
}

func newTuneCmd(a *app) *cobra.Command {
	f := &tuneFlags{}
	cmd := &cobra.Command{
		Use:     "tune",
		Short:   "Grid-search a scheduler's TEG parameters on training seeds, ranked by mean reward",
		Long:    helpText("tune"),
		Example: exampleText("tune"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTune(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scheduler, "scheduler", "langevin", "scheduler to tune")
	fl.StringVar(&f.grid, "grid", "", `parameter grid, "name=v1,v2;name2=v3" (required)`)
	fl.StringVar(&f.seeds, "seeds", "1-3", "training seeds: "+report.SeedsHelp)
	fl.IntVar(&f.machines, "machines", 500, "machines of the synthetic cluster")
	fl.StringVar(&f.cluster, "cluster", "synthetic", env.ClusterSpecHelp)
	fl.Float64Var(&f.load, "load", env.DefaultWorkload.Load, "offered load of the synthetic workload")
	fl.StringVar(&f.duration, "duration", "6h", "simulated time per run")
	fl.IntVar(&f.top, "top", 20, "rows to print (0: all)")
	fl.StringVar(&f.outMD, "out-md", "", "also write the ranked table as Markdown, with the command line, to this file")
	fl.IntVar(&f.workers, "workers", 0, "runs at once (0: GOMAXPROCS)")
	f.teg = addTEGFlag(fl)
	f.gpu.addFlags(fl)
	return cmd
}

func runTune(cmd *cobra.Command, a *app, f *tuneFlags) error {
	if f.grid == "" {
		return fmt.Errorf("--grid is required, e.g. \"temperature=0.01,0.05;w-frag=0,5\"")
	}
	if f.gpu.scenario != "" {
		return runTuneGPU(cmd, a, f)
	}
	grid, err := report.ParseGrid(f.grid)
	if err != nil {
		return err
	}
	seeds, err := report.ParseSeeds(f.seeds)
	if err != nil {
		return err
	}
	dur, err := env.ParseSeconds(f.duration)
	if err != nil {
		return err
	}
	cs, err := env.ParseClusterSpec(f.cluster)
	if err != nil {
		return err
	}
	cs.Machines, cs.Seed = f.machines, 1
	c, err := cs.Load()
	if err != nil {
		return fmt.Errorf("load cluster: %w", err)
	}
	tc := report.TuneConfig{Cluster: c, Scheduler: f.scheduler, Base: env.GovernorTEG(f.scheduler), Grid: grid, Seeds: seeds,
		Load: f.load, Duration: dur, Workers: f.workers}
	if err := f.teg.apply(&tc.Base); err != nil {
		return err
	}
	a.log.Info("tune", "scheduler", f.scheduler, "grid", f.grid, "points", tc.Runs()/len(seeds), "seeds", report.FormatSeeds(seeds), "machines", len(c.Machines))
	bar := newProgress(a.stderr, tc.Runs(), "tune")
	tc.OnRun = func() { _ = bar.Add(1) }
	points, err := report.Tune(cmd.Context(), tc)
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if err := report.WriteSweep(a.stdout, grid, points, f.top, false); err != nil {
		return err
	}
	if f.outMD != "" {
		var b bytes.Buffer
		if err := report.WriteSweepMarkdown(&b, report.CommandLine(a.argv), grid, points); err != nil {
			return err
		}
		if err := os.WriteFile(f.outMD, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.outMD, err)
		}
	}
	return nil
}
