package report

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tegrl/tegrl/env"
)

// SaturateConfig is the FGD saturation experiment on an Alibaba GPU trace
// (tegrl saturate): every scheduler on every seed, on the trace's GPU
// machines.
type SaturateConfig struct {
	Nodes, Pods string // trace specs of the node and pod tables (env.LoadAlibabaGPUNodes, env.LoadAlibabaGPUPods)
	Schedulers  []string
	// New makes a fresh scheduler for a name of Schedulers (nil:
	// env.NewScheduler).
	New     func(name string) (env.Scheduler, error)
	Seeds   []uint64
	Tune    float64 // arrivals stop at Tune x GPU capacity (protocol: 1.3)
	Workers int     // runs at once; <= 0 means runtime.GOMAXPROCS
	Logger  *slog.Logger
	// OnRun, if set, is called once per finished run, from one goroutine
	// at a time.
	OnRun func()
}

// SaturateResult is the experiment's outcome: one summary per scheduler,
// in the order of SaturateConfig.Schedulers, and the GPUs of the cluster.
type SaturateResult struct {
	Summaries []SaturationSummary
	GPUs      int
}

// Saturate loads the trace, runs the experiment (RunSaturation) and
// summarises each scheduler's runs (Summarize).
func Saturate(ctx context.Context, cfg SaturateConfig) (*SaturateResult, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	start := time.Now()
	tr, err := env.LoadSaturationTrace(cfg.Nodes, cfg.Pods)
	if err != nil {
		return nil, fmt.Errorf("load %w", err)
	}
	cluster := tr.Cluster
	log.Info("loaded trace", "machines", len(tr.All.Machines), "gpu_machines", len(cluster.Machines),
		"gpus", cluster.TotalGPUs(), "pods", len(tr.Jobs), "took", time.Since(start).Round(time.Millisecond))

	busy := map[string]time.Duration{}
	runs, err := RunSaturation(ctx, SaturationConfig{
		Cluster: cluster, Trace: tr.Jobs, Schedulers: cfg.Schedulers, New: cfg.New, Seeds: cfg.Seeds, Tune: cfg.Tune, Workers: cfg.Workers,
		OnRun: func(r env.SaturationRun, d time.Duration) {
			busy[r.Scheduler] += d
			log.Debug("run done", "scheduler", r.Scheduler, "seed", r.Seed, "pods", r.Pods, "dropped", r.Dropped,
				"alloc_at_130_pct", r.Bins[HeadlineBin].AllocPct, "took", d.Round(time.Millisecond))
			if cfg.OnRun != nil {
				cfg.OnRun()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	res := &SaturateResult{Summaries: make([]SaturationSummary, len(runs)), GPUs: cluster.TotalGPUs()}
	for i, rs := range runs {
		if res.Summaries[i], err = Summarize(rs); err != nil {
			return nil, err
		}
		log.Info("scheduler done", "scheduler", cfg.Schedulers[i], "seeds", len(cfg.Seeds),
			"per_seed", (busy[cfg.Schedulers[i]] / time.Duration(len(cfg.Seeds))).Round(time.Millisecond))
	}
	log.Info("saturation done", "runs", len(cfg.Schedulers)*len(cfg.Seeds), "workers", cfg.Workers, "took", time.Since(start).Round(time.Millisecond))
	return res, nil
}

// SummarizeAll summarises each scheduler's runs of RunSaturation.
func SummarizeAll(runs [][]env.SaturationRun) ([]SaturationSummary, error) {
	sums := make([]SaturationSummary, len(runs))
	for i, rs := range runs {
		var err error
		if sums[i], err = Summarize(rs); err != nil {
			return nil, err
		}
	}
	return sums, nil
}
