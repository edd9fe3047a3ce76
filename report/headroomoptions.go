package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/tegrl/tegrl/env"
)

// HeadroomOptions is tegrl headroom as its command line gives it. Run turns
// it into a HeadroomConfig (or reads earlier JSON points), runs it and
// writes the tables or JSON lines; its errors name the command's flags.
type HeadroomOptions struct {
	Scenarios string `flag:"scenarios" default:"gavel-single,gavel-multi,openb-single,openb-multi,openb-philly,spot-single,spot-multi,spot-philly" usage:"comma-separated CLUSTER-WORKLOAD (clusters gavel, openb, spot; workloads single, multi, philly)"`
	// Schedulers is a flag whose help is computed (the policy names), so
	// the command declares it itself.
	Schedulers      string
	Seeds           string  `flag:"seeds" default:"0" usage:"seeds: one (\"7\"), a range (\"0-2\") or a list"`
	GavelRates      string  `flag:"gavel-rates" default:"0.8-5.6:0.8" usage:"arrival rates (jobs/h) on the gavel cluster, single-GPU workloads"`
	GavelMultiRates string  `flag:"gavel-multi-rates" default:"0.4-2.8:0.4" usage:"arrival rates (jobs/h) on the gavel cluster, multi-GPU workloads"`
	Loads           string  `flag:"loads" default:"0.6-1.4:0.2" usage:"offered GPU loads on the openb and spot clusters"`
	Sample          int     `flag:"sample" default:"8" usage:"openb and spot: keep every k-th server of each GPU model (1: the whole cluster)"`
	Horizon         int     `flag:"horizon" default:"16" usage:"lookahead: rounds each candidate is tried for"`
	Warmup          float64 `flag:"warmup-h" default:"200" usage:"openb and spot: hours of arrivals before the measured jobs (more than the longest generated job, 167 h on a V100)"`
	Measure         int     `flag:"measure-jobs" default:"1000" usage:"openb and spot: measured jobs"`
	Grace           float64 `flag:"grace-h" default:"500" usage:"stop a run at the bound when its measured jobs are not done this many hours after the last arrived (negative: no time bound)"`
	Models          string  `flag:"gpu-models" usage:"GPU model mapping (JSON; the bundled env/gpumodels.json if empty)"`
	Workers         int     `flag:"workers" usage:"runs at once; 0 = GOMAXPROCS"`
	JSON            bool    `flag:"json" usage:"write one JSON object per scenario, policy and rate to stdout instead of the tables"`
	OutMD           string  `flag:"out-md" usage:"also write the Markdown tables and the command line to this file"`
	FromJSON        string  `flag:"from-json" usage:"run nothing: merge the points of earlier --json runs (comma-separated files) into the tables"`

	Command string
	Logger  *slog.Logger
}

// DefaultHeadroomSchedulers is the default of tegrl headroom --scheduler.
const DefaultHeadroomSchedulers = "fifo,fifo_perf,max_min_fairness,max_min_fairness_perf,gandiva,tiresias,srtf_oracle,lookahead"

func (o *HeadroomOptions) config() (HeadroomConfig, error) {
	c := HeadroomConfig{Horizon: o.Horizon, WarmupHours: o.Warmup, MeasureJobs: o.Measure, Workers: o.Workers, GraceHours: o.Grace}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	var err error
	if c.Seeds, err = ParseSeeds(o.Seeds); err != nil {
		return c, fmt.Errorf("--seeds: %w", err)
	}
	for _, p := range strings.Split(o.Schedulers, ",") {
		c.Policies = append(c.Policies, strings.TrimSpace(p))
	}
	rates, err1 := ParseRates(o.GavelRates)
	multiRates, err2 := ParseRates(o.GavelMultiRates)
	loads, err3 := ParseRates(o.Loads)
	if err1 != nil || err2 != nil || err3 != nil {
		return c, fmt.Errorf("--gavel-rates, --gavel-multi-rates, --loads: %v %v %v", err1, err2, err3)
	}
	for _, s := range strings.Split(o.Scenarios, ",") {
		cl, wl, ok := strings.Cut(strings.TrimSpace(s), "-")
		if !ok {
			return c, fmt.Errorf("--scenarios: %q is not CLUSTER-WORKLOAD", s)
		}
		sc := HeadroomScenario{Cluster: cl, Workload: wl, Loads: loads}
		switch {
		case cl == "gavel" && wl == "single":
			sc.Rates = rates
		case cl == "gavel":
			sc.Rates = multiRates
		default:
			sc.Sample = o.Sample
		}
		c.Scenarios = append(c.Scenarios, sc)
	}
	if o.Models != "" {
		r, err := os.Open(o.Models)
		if err != nil {
			return c, fmt.Errorf("--gpu-models: %w", err)
		}
		defer r.Close()
		if c.Models, err = env.LoadGPUModels(r); err != nil {
			return c, fmt.Errorf("--gpu-models %s: %w", o.Models, err)
		}
	}
	return c, nil
}

// Run runs the scenarios, or merges --from-json's points, and writes the
// tables or JSON lines to stdout.
func (o *HeadroomOptions) Run(ctx context.Context, stdout io.Writer) error {
	if o.FromJSON != "" {
		cfg, pts, err := ReadHeadroomJSON(strings.Split(o.FromJSON, ","))
		if err != nil {
			return err
		}
		return o.write(stdout, cfg, pts)
	}
	cfg, err := o.config()
	if err != nil {
		return err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	var mu sync.Mutex
	cfg.OnRun = func(sc, p string, r float64, s uint64, res env.RoundResult, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		log.Info("run done", "scenario", sc, "scheduler", p, "rate", r, "seed", s, "avg_jct_h", res.AvgJCTHours,
			"at_bound", res.Saturated, "rounds", res.Rounds, "took", took.Round(time.Millisecond))
	}
	pts, err := RunHeadroom(ctx, cfg)
	if err != nil {
		return err
	}
	log.Info("headroom done", "points", len(pts), "workers", cfg.Workers, "took", time.Since(start).Round(time.Second))
	return o.write(stdout, cfg, pts)
}

func (o *HeadroomOptions) write(stdout io.Writer, cfg HeadroomConfig, pts []HeadroomPoint) error {
	if o.OutMD != "" {
		var b bytes.Buffer
		fmt.Fprintf(&b, "```\n%s\n```\n", o.Command)
		if err := WriteHeadroom(&b, cfg, pts); err != nil {
			return err
		}
		if err := os.WriteFile(o.OutMD, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out-md: %w", err)
		}
	}
	if !o.JSON {
		return WriteHeadroom(stdout, cfg, pts)
	}
	return WriteJSONLines(stdout, pts)
}
