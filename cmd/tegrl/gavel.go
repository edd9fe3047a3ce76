package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

func init() { addCommand(newGavelCmd) }

// gavelFlags are the options of tegrl gavel.
type gavelFlags struct {
	schedulers, rates, seeds, cluster string
	multi, json, locality             bool
	gpusPerServer, workers, maxActive int
	restore, maxHours                 float64
	plot, outMD                       string
}

func newGavelCmd(a *app) *cobra.Command {
	f := &gavelFlags{}
	cmd := &cobra.Command{
		Use:     "gavel",
		Short:   "Run Gavel's continuous-jobs experiment on GPU training clusters and compare allocation policies",
		Long:    helpText("gavel"),
		Example: exampleText("gavel"),
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runGavel(cmd, a, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.schedulers, "scheduler", "fifo,fifo_perf,max_min_fairness,max_min_fairness_perf,gandiva", "comma-separated allocation policies: "+fmt.Sprint(env.AllocationPolicyNames()))
	fl.StringVar(&f.rates, "rates", "0.4-6.0:0.4", `arrival rates in jobs per hour: "LO-HI:STEP", one rate or a list`)
	fl.StringVar(&f.seeds, "seeds", "0-2", `seeds: one ("7"), a range ("0-2"), a list ("0,1,5") or a mix`)
	fl.StringVar(&f.cluster, "cluster", "36:36:36", "GPUs: V:P:K (v100:p100:k80) or type=count,...")
	fl.IntVar(&f.gpusPerServer, "gpus-per-server", 1, "GPUs per server (each type's count must be a multiple)")
	fl.BoolVar(&f.multi, "multi-gpu", false, "continuous-multiple trace: jobs on 1, 2, 4 or 8 GPUs (else every job on 1 GPU)")
	fl.BoolVar(&f.locality, "locality", false, "run gangs spread over servers at the table's unconsolidated throughput (Gavel's simulator runs every gang consolidated)")
	fl.Float64Var(&f.restore, "restore-s", 0, "checkpoint/restore seconds charged to a job that resumes on other GPUs (Gavel's simulator: 0)")
	fl.IntVar(&f.maxActive, "max-active", 4000, "stop a run (at the bound) once more jobs than this are in the system")
	fl.Float64Var(&f.maxHours, "max-hours", 0, "also stop a run after this many simulated hours (0: no time bound)")
	fl.IntVar(&f.workers, "workers", 0, "runs at once; 0 = GOMAXPROCS")
	fl.BoolVar(&f.json, "json", false, "write one JSON object per policy and rate (JSON lines) to stdout instead of the table")
	fl.StringVar(&f.plot, "plot", "", "also write a PNG of average JCT against rate to this file")
	fl.StringVar(&f.outMD, "out-md", "", "also write the Markdown table and the command line to this file")
	return cmd
}

func gavelConfig(f *gavelFlags) (report.GavelSweepConfig, error) {
	var c report.GavelSweepConfig
	var err error
	for _, p := range strings.Split(f.schedulers, ",") {
		c.Policies = append(c.Policies, strings.TrimSpace(p))
	}
	for _, p := range c.Policies {
		if _, err := env.AllocationPolicyByName(p); err != nil {
			return c, fmt.Errorf("--scheduler: %w", err)
		}
	}
	if c.Rates, err = report.ParseRates(f.rates); err != nil {
		return c, fmt.Errorf("--rates: %w", err)
	}
	if c.Seeds, err = report.ParseSeeds(f.seeds); err != nil {
		return c, fmt.Errorf("--seeds: %w", err)
	}
	if f.workers < 0 || f.maxActive < 1 || f.maxHours < 0 {
		return c, fmt.Errorf("--workers, --max-active and --max-hours: want >= 0, >= 1 and >= 0")
	}
	c.Workers = f.workers
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	c.Multi, c.Cluster, c.GPUsPerServer = f.multi, f.cluster, f.gpusPerServer
	c.Round = env.RoundConfig{Locality: f.locality, RestoreSeconds: f.restore, MaxActive: f.maxActive, MaxSeconds: f.maxHours * 3600}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return c, err
	}
	if _, err := env.ParseGPUClusterSpec(f.cluster, tab, f.gpusPerServer); err != nil {
		return c, fmt.Errorf("--cluster: %w", err)
	}
	return c, nil
}

func runGavel(cmd *cobra.Command, a *app, f *gavelFlags) error {
	cfg, err := gavelConfig(f)
	if err != nil {
		return err
	}
	start := time.Now()
	bar := newProgress(a.stderr, len(cfg.Policies)*len(cfg.Rates)*len(cfg.Seeds), "gavel")
	var mu sync.Mutex
	cfg.OnRun = func(p string, r float64, s uint64, res env.RoundResult, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		a.log.Info("run done", "scheduler", p, "rate", r, "seed", s, "avg_jct_h", res.AvgJCTHours,
			"at_bound", res.Saturated, "rounds", res.Rounds, "took", took.Round(time.Millisecond))
		_ = bar.Add(1)
	}
	sums, err := report.RunGavelSweep(cmd.Context(), cfg)
	_ = bar.Finish()
	if err != nil {
		return err
	}
	a.log.Info("gavel done", "runs", len(cfg.Policies)*len(cfg.Rates)*len(cfg.Seeds), "workers", cfg.Workers,
		"took", time.Since(start).Round(time.Millisecond))
	return writeGavel(cmd, a, f, cfg, sums)
}

func writeGavel(cmd *cobra.Command, a *app, f *gavelFlags, cfg report.GavelSweepConfig, sums []report.GavelSummary) error {
	if f.plot != "" {
		trace := map[bool]string{false: "continuous-single", true: "continuous-multiple"}[f.multi]
		title := fmt.Sprintf("Gavel %s, %s GPUs, seeds %s", trace, f.cluster, report.FormatSeeds(cfg.Seeds))
		if err := report.SaveGavelPlot(f.plot, cfg.Policies, cfg.Rates, sums, title); err != nil {
			return err
		}
		a.log.Info("wrote plot", "path", f.plot)
	}
	if f.outMD != "" {
		var b bytes.Buffer
		fmt.Fprintf(&b, "```\n%s\n```\n\n", report.CommandLine(a.argv))
		if err := report.WriteGavelTable(&b, cfg.Policies, cfg.Rates, sums, true); err != nil {
			return err
		}
		if err := os.WriteFile(f.outMD, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out-md: %w", err)
		}
	}
	out := cmd.OutOrStdout()
	if !f.json {
		return report.WriteGavelTable(out, cfg.Policies, cfg.Rates, sums, false)
	}
	return printJSONLines(out, sums)
}
