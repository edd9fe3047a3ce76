package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newABCmd) }

// abFlags are the options of tegrl ab.
type abFlags struct {
	a, b         string
	ref          string
	seeds        string
	seed         uint64
	machines     int
	cluster      string
	workload     string
	duration     string
	ticks        int
	tick         float64
	load         float64
	compress     float64
	maxInstances int
	mtbf         float64
	seriesEvery  int
	resamples    int
	level        float64
	workers      int
	jsonOut      bool
	out          string
	teg          *tegFlag
	gpu          gpuFlags
}

func newABCmd(a *app) *cobra.Command {
	f := &abFlags{}
	cmd := &cobra.Command{
		Use:     "ab",
		Short:   "Paired A/B evaluation of a scheduler against pure Langevin, with bootstrap confidence intervals",
		Long:    helpText("ab"),
		Example: exampleText("ab"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAB(cmd, a, f)
		},
	}
	addABFlags(cmd.Flags(), f)
	return cmd
}

// addABFlags declares ab's flags on fl.
func addABFlags(fl *pflag.FlagSet, f *abFlags) {
	fl.StringVar(&f.a, "a", "langevin", "scheduler A, the baseline: a built-in name or a policy file")
	fl.StringVar(&f.b, "b", "", "scheduler B, compared with A: a built-in name or a policy file (required)")
	fl.StringVar(&f.ref, "ref", "kube,bestfit,fgd", `reference schedulers, comma-separated ("" for none)`)
	fl.StringVar(&f.seeds, "seeds", "1-20", "seeds: "+report.SeedsHelp+"; at least two")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the synthetic cluster and of the bootstrap resampling")
	fl.IntVar(&f.machines, "machines", 1000, "machines of the synthetic cluster")
	fl.StringVar(&f.cluster, "cluster", "synthetic", env.ClusterSpecHelp)
	fl.StringVar(&f.workload, "workload", "synthetic", "workload: synthetic (one per seed), alibaba-gpu:PATH (pods.csv) or alibaba-batch:PATH (2018 jobs.csv)")
	fl.StringVar(&f.duration, "duration", "", "simulated time per run (Go duration such as 6h, or seconds); default: the synthetic horizon (6h), or until a trace drains")
	fl.IntVar(&f.ticks, "ticks", 0, "stop each run after this many ticks (0: no limit beyond --duration)")
	fl.Float64Var(&f.tick, "tick", env.DefaultSimConfig.Tick, "seconds per tick")
	fl.Float64Var(&f.load, "load", env.DefaultWorkload.Load, "offered load of the synthetic workload (fraction of the busier of CPU and GPU capacity)")
	fl.Float64Var(&f.compress, "compress", 1, "time-compression factor for trace workloads")
	fl.IntVar(&f.maxInstances, "max-instances", 1, "instances per 2018 batch task turned into jobs (0: all)")
	fl.Float64Var(&f.mtbf, "mtbf", env.DefaultSimConfig.MTBF, "mean time between failures of one machine, seconds (negative: no failures)")
	fl.IntVar(&f.seriesEvery, "series-every", report.DefaultABSeriesEvery, "ticks between samples of the time series plotted for A and B")
	fl.IntVar(&f.resamples, "resamples", report.DefaultResamples, "bootstrap resamples of the seeds")
	fl.Float64Var(&f.level, "level", report.DefaultLevel, "confidence level of the intervals")
	fl.IntVar(&f.workers, "workers", 0, "runs at once; 0 = GOMAXPROCS")
	fl.BoolVar(&f.jsonOut, "json", false, "print the report as one JSON object instead of a table")
	f.teg = addTEGFlag(fl)
	f.gpu.addFlags(fl)
	fl.StringVar(&f.out, "out", "", "write report.md, report.json and the PNG plots to this directory (created if needed)")
}

// contender resolves a scheduler spec with rl.SchedulerFactory.
func contender(flag, spec string) (report.Contender, error) {
	mk, err := rl.SchedulerFactory(spec)
	if err == nil {
		err = rl.CheckSchedulerFit(spec, rl.EnvCluster, 0, nil) // ab runs cluster simulations
	}
	if err != nil {
		return report.Contender{}, fmt.Errorf("--%s: %w", flag, err)
	}
	return report.Contender{Name: spec, New: mk}, nil
}

func runAB(cmd *cobra.Command, a *app, f *abFlags) error {
	if f.gpu.scenario != "" {
		return runABGPU(cmd, a, f)
	}
	cfg, err := abConfig(f)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := abWorkload(f, &cfg); err != nil {
		return err
	}
	for _, spec := range []string{f.a, f.b} {
		_ = rl.CheckSchedulerFit(spec, rl.EnvCluster, len(cfg.Cluster.Machines), a.log) // the scale warning; the environment is checked above
	}
	runs := cfg.Runs()
	a.log.Info("ab", "a", f.a, "b", f.b, "ref", f.ref, "seeds", report.FormatSeeds(cfg.Seeds), "cluster", f.cluster,
		"machines", len(cfg.Cluster.Machines), "gpus", cfg.Cluster.TotalGPUs(), "workload", f.workload, "duration_s", cfg.Sim.Duration, "runs", runs)
	bar := newProgress(a.stderr, runs, "ab")
	cfg.OnRun = func() { _ = bar.Add(1) }
	res, err := report.RunAB(cmd.Context(), cfg)
	_ = bar.Finish()
	if err != nil {
		return err
	}
	a.log.Info("ab done", "runs", runs, "took", time.Since(start).Round(time.Millisecond))

	var js bytes.Buffer
	if err := report.WriteABJSON(&js, &res.Report); err != nil {
		return err
	}
	if f.out != "" {
		n, err := report.WriteABFiles(f.out, res, js.Bytes(), report.CommandLine(a.argv))
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		a.log.Info("wrote report", "dir", f.out, "files", n)
	}
	out := cmd.OutOrStdout()
	if f.jsonOut {
		_, err := out.Write(js.Bytes())
		return err
	}
	return report.WriteABText(out, &res.Report)
}

// abConfig checks the flags and resolves the schedulers; the cluster,
// workload and duration are left to runAB.
func abConfig(f *abFlags) (report.ABConfig, error) {
	if f.b == "" {
		return report.ABConfig{}, fmt.Errorf("--b is required: the scheduler or policy file to compare with --a %s", f.a)
	}
	cfg := report.ABConfig{ClusterName: f.cluster, Sim: env.SimConfig{Tick: f.tick, MaxTicks: f.ticks, MTBF: f.mtbf},
		SeriesEvery: f.seriesEvery, Resamples: f.resamples, Level: f.level, BootstrapSeed: f.seed, Workers: f.workers, TEG: f.teg.forSched}
	var err error
	if cfg.A, err = contender("a", f.a); err != nil {
		return cfg, err
	}
	if cfg.B, err = contender("b", f.b); err != nil {
		return cfg, err
	}
	if strings.TrimSpace(f.ref) != "" {
		var names []string
		for name := range strings.SplitSeq(f.ref, ",") {
			name = strings.TrimSpace(name)
			if name == "" || slices.Contains(names, name) {
				return cfg, fmt.Errorf("--ref %q: empty or repeated name %q", f.ref, name)
			}
			names = append(names, name)
			r, err := contender("ref", name)
			if err != nil {
				return cfg, err
			}
			cfg.Reference = append(cfg.Reference, r)
		}
	}
	if cfg.Seeds, err = report.ParseABSeeds(f.seeds); err != nil {
		return cfg, fmt.Errorf("--seeds: %w", err)
	}
	switch {
	case f.seriesEvery < 1:
		return cfg, fmt.Errorf("--series-every %d: want at least 1 tick", f.seriesEvery)
	case f.resamples < 1:
		return cfg, fmt.Errorf("--resamples %d: want at least 1", f.resamples)
	case !(f.level > 0 && f.level < 1):
		return cfg, fmt.Errorf("--level %v: want a number in (0, 1), e.g. 0.95", f.level)
	case f.workers < 0:
		return cfg, fmt.Errorf("--workers %d: want 0 (GOMAXPROCS) or more", f.workers)
	}
	return cfg, nil
}

// abWorkload loads the cluster of --cluster and sets the workload of each
// seed and the runs' duration.
func abWorkload(f *abFlags, cfg *report.ABConfig) error {
	cs, err := env.ParseClusterSpec(f.cluster)
	if err != nil {
		return fmt.Errorf("--cluster: %w", err)
	}
	cs.Machines, cs.Seed = f.machines, f.seed
	ws, err := env.ParseWorkloadSpec(f.workload)
	if err != nil {
		return fmt.Errorf("--workload: %w", err)
	}
	ws.Config.Load, ws.Compress, ws.MaxInstances = f.load, f.compress, f.maxInstances
	if cfg.Cluster, err = cs.Load(); err != nil {
		return fmt.Errorf("load cluster %s: %w", f.cluster, err)
	}
	switch {
	case f.duration != "":
		if cfg.Sim.Duration, err = env.ParseSeconds(f.duration); err != nil {
			return fmt.Errorf("--duration: %w", err)
		}
	case ws.Source == "synthetic":
		cfg.Sim.Duration = ws.Config.Horizon
	}
	if cfg.Workload, err = report.SeedWorkloads(cfg.Cluster, ws); err != nil {
		return fmt.Errorf("load workload %s: %w", f.workload, err)
	}
	return nil
}
