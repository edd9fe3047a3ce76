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

func init() { addCommand(newHeadroomCmd) }

type headroomFlags struct {
	scenarios, schedulers, seeds, gavelRates, gavelMultiRates, loads, models, outMD, fromJSON string
	sample, horizon, measure, workers                                                         int
	warmup, grace                                                                             float64
	json                                                                                      bool
}

func newHeadroomCmd(a *app) *cobra.Command {
	f := &headroomFlags{}
	cmd := &cobra.Command{
		Use:     "headroom",
		Short:   "Measure how far the GPU-cluster heuristics are from the zero-wait floor and from clairvoyant bounds",
		Long:    helpText("headroom"),
		Example: exampleText("headroom"),
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runHeadroom(cmd, a, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scenarios, "scenarios", "gavel-single,gavel-multi,openb-single,openb-multi,openb-philly,spot-single,spot-multi,spot-philly", "comma-separated CLUSTER-WORKLOAD (clusters gavel, openb, spot; workloads single, multi, philly)")
	fl.StringVar(&f.schedulers, "scheduler", "fifo,fifo_perf,max_min_fairness,max_min_fairness_perf,gandiva,tiresias,srtf_oracle,lookahead", "policies: "+fmt.Sprint(env.AllocationPolicyNames())+" and lookahead")
	fl.StringVar(&f.seeds, "seeds", "0", `seeds: one ("7"), a range ("0-2") or a list`)
	fl.StringVar(&f.gavelRates, "gavel-rates", "0.8-5.6:0.8", "arrival rates (jobs/h) on the gavel cluster, single-GPU workloads")
	fl.StringVar(&f.gavelMultiRates, "gavel-multi-rates", "0.4-2.8:0.4", "arrival rates (jobs/h) on the gavel cluster, multi-GPU workloads")
	fl.StringVar(&f.loads, "loads", "0.6-1.4:0.2", "offered GPU loads on the openb and spot clusters")
	fl.IntVar(&f.sample, "sample", 8, "openb and spot: keep every k-th server of each GPU model (1: the whole cluster)")
	fl.IntVar(&f.horizon, "horizon", 16, "lookahead: rounds each candidate is tried for")
	fl.Float64Var(&f.warmup, "warmup-h", 200, "openb and spot: hours of arrivals before the measured jobs (more than the longest generated job, 167 h on a V100)")
	fl.IntVar(&f.measure, "measure-jobs", 1000, "openb and spot: measured jobs")
	fl.Float64Var(&f.grace, "grace-h", 500, "stop a run at the bound when its measured jobs are not done this many hours after the last arrived (negative: no time bound)")
	fl.StringVar(&f.models, "gpu-models", "", "GPU model mapping (JSON; the bundled env/gpumodels.json if empty)")
	fl.IntVar(&f.workers, "workers", 0, "runs at once; 0 = GOMAXPROCS")
	fl.BoolVar(&f.json, "json", false, "write one JSON object per scenario, policy and rate to stdout instead of the tables")
	fl.StringVar(&f.outMD, "out-md", "", "also write the Markdown tables and the command line to this file")
	fl.StringVar(&f.fromJSON, "from-json", "", "run nothing: merge the points of earlier --json runs (comma-separated files) into the tables")
	return cmd
}

func headroomConfig(f *headroomFlags) (report.HeadroomConfig, error) {
	c := report.HeadroomConfig{Horizon: f.horizon, WarmupHours: f.warmup, MeasureJobs: f.measure, Workers: f.workers, GraceHours: f.grace}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	var err error
	if c.Seeds, err = report.ParseSeeds(f.seeds); err != nil {
		return c, fmt.Errorf("--seeds: %w", err)
	}
	for _, p := range strings.Split(f.schedulers, ",") {
		c.Policies = append(c.Policies, strings.TrimSpace(p))
	}
	rates, err1 := report.ParseRates(f.gavelRates)
	multiRates, err2 := report.ParseRates(f.gavelMultiRates)
	loads, err3 := report.ParseRates(f.loads)
	if err1 != nil || err2 != nil || err3 != nil {
		return c, fmt.Errorf("--gavel-rates, --gavel-multi-rates, --loads: %v %v %v", err1, err2, err3)
	}
	for _, s := range strings.Split(f.scenarios, ",") {
		cl, wl, ok := strings.Cut(strings.TrimSpace(s), "-")
		if !ok {
			return c, fmt.Errorf("--scenarios: %q is not CLUSTER-WORKLOAD", s)
		}
		sc := report.HeadroomScenario{Cluster: cl, Workload: wl, Loads: loads}
		switch {
		case cl == "gavel" && wl == "single":
			sc.Rates = rates
		case cl == "gavel":
			sc.Rates = multiRates
		default:
			sc.Sample = f.sample
		}
		c.Scenarios = append(c.Scenarios, sc)
	}
	if f.models != "" {
		r, err := os.Open(f.models)
		if err != nil {
			return c, fmt.Errorf("--gpu-models: %w", err)
		}
		defer r.Close()
		if c.Models, err = env.LoadGPUModels(r); err != nil {
			return c, fmt.Errorf("--gpu-models %s: %w", f.models, err)
		}
	}
	return c, nil
}

func runHeadroom(cmd *cobra.Command, a *app, f *headroomFlags) error {
	if f.fromJSON != "" {
		cfg, pts, err := report.ReadHeadroomJSON(strings.Split(f.fromJSON, ","))
		if err != nil {
			return err
		}
		return writeHeadroom(cmd, a, f, cfg, pts)
	}
	cfg, err := headroomConfig(f)
	if err != nil {
		return err
	}
	start := time.Now()
	var mu sync.Mutex
	cfg.OnRun = func(sc, p string, r float64, s uint64, res env.RoundResult, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		a.log.Info("run done", "scenario", sc, "scheduler", p, "rate", r, "seed", s, "avg_jct_h", res.AvgJCTHours,
			"at_bound", res.Saturated, "rounds", res.Rounds, "took", took.Round(time.Millisecond))
	}
	pts, err := report.RunHeadroom(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	a.log.Info("headroom done", "points", len(pts), "workers", cfg.Workers, "took", time.Since(start).Round(time.Second))
	return writeHeadroom(cmd, a, f, cfg, pts)
}

func writeHeadroom(cmd *cobra.Command, a *app, f *headroomFlags, cfg report.HeadroomConfig, pts []report.HeadroomPoint) error {
	if f.outMD != "" {
		var b bytes.Buffer
		fmt.Fprintf(&b, "```\n%s\n```\n", report.CommandLine(a.argv))
		if err := report.WriteHeadroom(&b, cfg, pts); err != nil {
			return err
		}
		if err := os.WriteFile(f.outMD, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out-md: %w", err)
		}
	}
	if !f.json {
		return report.WriteHeadroom(cmd.OutOrStdout(), cfg, pts)
	}
	return printJSONLines(cmd.OutOrStdout(), pts)
}
