package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/tegrl/tegrl/env"
)

// GavelOptions is tegrl gavel as its command line gives it. Run turns it
// into a GavelSweepConfig, runs the sweep and writes the table, JSON lines,
// plot and Markdown; its errors name the command's flags.
type GavelOptions struct {
	// Schedulers is a flag whose help is computed (the policy names), so
	// the command declares it itself.
	Schedulers    string
	Rates         string  `flag:"rates" default:"0.4-6.0:0.4" usage:"arrival rates in jobs per hour: \"LO-HI:STEP\", one rate or a list"`
	Seeds         string  `flag:"seeds" default:"0-2" usage:"seeds: one (\"7\"), a range (\"0-2\"), a list (\"0,1,5\") or a mix"`
	Cluster       string  `flag:"cluster" default:"36:36:36" usage:"GPUs: V:P:K (v100:p100:k80) or type=count,..."`
	GPUsPerServer int     `flag:"gpus-per-server" default:"1" usage:"GPUs per server (each type's count must be a multiple)"`
	Multi         bool    `flag:"multi-gpu" usage:"continuous-multiple trace: jobs on 1, 2, 4 or 8 GPUs (else every job on 1 GPU)"`
	Locality      bool    `flag:"locality" usage:"run gangs spread over servers at the table's unconsolidated throughput (Gavel's simulator runs every gang consolidated)"`
	Restore       float64 `flag:"restore-s" usage:"checkpoint/restore seconds charged to a job that resumes on other GPUs (Gavel's simulator: 0)"`
	Allocation    float64 `flag:"allocation-interval-s" usage:"least seconds between two allocation recomputations, after a job arrived or finished (0: Gavel's 1920)"`
	MaxActive     int     `flag:"max-active" default:"4000" usage:"stop a run (at the bound) once more jobs than this are in the system"`
	MaxHours      float64 `flag:"max-hours" usage:"also stop a run after this many simulated hours (0: no time bound)"`
	Workers       int     `flag:"workers" usage:"runs at once; 0 = GOMAXPROCS"`
	JSON          bool    `flag:"json" usage:"write one JSON object per policy and rate (JSON lines) to stdout instead of the table"`
	Plot          string  `flag:"plot" usage:"also write a PNG of average JCT against rate to this file"`
	OutMD         string  `flag:"out-md" usage:"also write the Markdown table and the command line to this file"`

	Command string
	Logger  *slog.Logger
	Bar     io.Writer // progress bar, drawn when it is a terminal
}

// DefaultGavelSchedulers is the default of tegrl gavel --scheduler.
const DefaultGavelSchedulers = "fifo,fifo_perf,max_min_fairness,max_min_fairness_perf,gandiva"

func (o *GavelOptions) config() (GavelSweepConfig, error) {
	var c GavelSweepConfig
	var err error
	for _, p := range strings.Split(o.Schedulers, ",") {
		c.Policies = append(c.Policies, strings.TrimSpace(p))
	}
	for _, p := range c.Policies {
		if _, err := env.AllocationPolicyByName(p); err != nil {
			return c, fmt.Errorf("--scheduler: %w", err)
		}
	}
	if c.Rates, err = ParseRates(o.Rates); err != nil {
		return c, fmt.Errorf("--rates: %w", err)
	}
	if c.Seeds, err = ParseSeeds(o.Seeds); err != nil {
		return c, fmt.Errorf("--seeds: %w", err)
	}
	if o.Workers < 0 || o.MaxActive < 1 || o.MaxHours < 0 {
		return c, fmt.Errorf("--workers, --max-active and --max-hours: want >= 0, >= 1 and >= 0")
	}
	if !(o.Allocation >= 0) || math.IsInf(o.Allocation, 0) {
		return c, fmt.Errorf("--allocation-interval-s %v: want a number of seconds >= 0 (0: Gavel's 1920)", o.Allocation)
	}
	c.Workers = o.Workers
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	c.Multi, c.Cluster, c.GPUsPerServer = o.Multi, o.Cluster, o.GPUsPerServer
	c.Round = env.RoundConfig{Locality: o.Locality, RestoreSeconds: o.Restore, AllocationInterval: o.Allocation, MaxActive: o.MaxActive, MaxSeconds: o.MaxHours * 3600}
	tab, err := env.GavelThroughputTable()
	if err != nil {
		return c, err
	}
	if _, err := env.ParseGPUClusterSpec(o.Cluster, tab, o.GPUsPerServer); err != nil {
		return c, fmt.Errorf("--cluster: %w", err)
	}
	return c, nil
}

func (o *GavelOptions) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// Run runs the sweep and writes its outputs, the table or JSON lines to
// stdout.
func (o *GavelOptions) Run(ctx context.Context, stdout io.Writer) error {
	cfg, err := o.config()
	if err != nil {
		return err
	}
	log := o.logger()
	bw := o.Bar
	if bw == nil {
		bw = io.Discard
	}
	start := time.Now()
	runs := len(cfg.Policies) * len(cfg.Rates) * len(cfg.Seeds)
	bar := NewProgress(bw, runs, "gavel")
	var mu sync.Mutex
	cfg.OnRun = func(p string, r float64, s uint64, res env.RoundResult, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		log.Info("run done", "scheduler", p, "rate", r, "seed", s, "avg_jct_h", res.AvgJCTHours,
			"at_bound", res.Saturated, "rounds", res.Rounds, "took", took.Round(time.Millisecond))
		_ = bar.Add(1)
	}
	sums, err := RunGavelSweep(ctx, cfg)
	_ = bar.Finish()
	if err != nil {
		return err
	}
	log.Info("gavel done", "runs", runs, "workers", cfg.Workers, "took", time.Since(start).Round(time.Millisecond))
	return o.write(stdout, cfg, sums)
}

func (o *GavelOptions) write(stdout io.Writer, cfg GavelSweepConfig, sums []GavelSummary) error {
	if o.Plot != "" {
		trace := map[bool]string{false: "continuous-single", true: "continuous-multiple"}[o.Multi]
		title := fmt.Sprintf("Gavel %s, %s GPUs, seeds %s", trace, o.Cluster, FormatSeeds(cfg.Seeds))
		if err := SaveGavelPlot(o.Plot, cfg.Policies, cfg.Rates, sums, title); err != nil {
			return err
		}
		o.logger().Info("wrote plot", "path", o.Plot)
	}
	if o.OutMD != "" {
		var b bytes.Buffer
		fmt.Fprintf(&b, "```\n%s\n```\n\n", o.Command)
		if err := WriteGavelTable(&b, cfg.Policies, cfg.Rates, sums, true); err != nil {
			return err
		}
		if err := os.WriteFile(o.OutMD, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out-md: %w", err)
		}
	}
	if !o.JSON {
		return WriteGavelTable(stdout, cfg.Policies, cfg.Rates, sums, false)
	}
	return WriteJSONLines(stdout, sums)
}

// WriteJSONLines writes one JSON object per element of vs.
func WriteJSONLines[T any](w io.Writer, vs []T) error {
	enc := json.NewEncoder(w)
	for i := range vs {
		if err := enc.Encode(&vs[i]); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	}
	return nil
}
