package report

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/tegrl/tegrl/env"
)

// HeadlineBin is the arrival bin (percent of GPU capacity) whose allocation
// ratio is the headline of the FGD saturation experiment.
const HeadlineBin = 130

// SaturationSummary aggregates the saturation runs of one scheduler over
// seeds. Its JSON form is the output of `tegrl saturate --json`; keys are
// stable (add, never rename). All percentages are of the cluster's GPU
// capacity except the fragmentation ratio, which is of the idle GPU milli.
// Every Std is the sample standard deviation (divisor n-1; 0 for one seed).
type SaturationSummary struct {
	Scheduler string   `json:"scheduler"`
	Seeds     []uint64 `json:"seeds"`
	// GPU allocation ratio at 130% arrival, %.
	AllocAt130Mean float64 `json:"alloc_at_130_mean"`
	AllocAt130Std  float64 `json:"alloc_at_130_std"`
	// Fragmentation F(M) at 130% arrival, % of GPU capacity.
	FragAt130Mean float64 `json:"frag_at_130_mean"`
	FragAt130Std  float64 `json:"frag_at_130_std"`
	// Fragmentation ratio F(M) / idle GPU milli at 130% arrival, %.
	FragRatioAt130Mean float64 `json:"frag_ratio_at_130_mean"`
	FragRatioAt130Std  float64 `json:"frag_ratio_at_130_std"`
	// Pods submitted and pods dropped (fitting nowhere) per run.
	PodsMean    float64 `json:"pods_mean"`
	DroppedMean float64 `json:"dropped_mean"`
	DroppedStd  float64 `json:"dropped_std"`
	// Bins holds one entry per arrival percent, 0 to 130.
	Bins []SaturationBinSummary `json:"bins"`
}

// SaturationBinSummary is one arrival bin aggregated over seeds.
type SaturationBinSummary struct {
	ArrivalPct       int     `json:"arrival_pct"`
	AllocMean        float64 `json:"alloc_mean"`
	AllocStd         float64 `json:"alloc_std"`
	FragPctMean      float64 `json:"frag_pct_mean"`
	FragRatioPctMean float64 `json:"frag_ratio_pct_mean"`
}

// MeanStd returns the mean and the sample standard deviation (divisor
// n-1) of xs. The deviation of one value is 0; both are NaN for none.
func MeanStd(xs []float64) (mean, std float64) {
	n := float64(len(xs))
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= n
	if len(xs) == 1 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / (n - 1))
}

// Summarize aggregates the runs of one scheduler, one run per seed, into
// per-bin means and standard deviations. Runs must share the scheduler and
// the bin layout (env.SaturationBins bins, arrival 0..130); they are
// reported in the order given.
func Summarize(runs []env.SaturationRun) (SaturationSummary, error) {
	if len(runs) == 0 {
		return SaturationSummary{}, fmt.Errorf("summarize saturation: no runs")
	}
	sum := SaturationSummary{Scheduler: runs[0].Scheduler, Seeds: make([]uint64, len(runs))}
	nbins := len(runs[0].Bins)
	if nbins <= HeadlineBin {
		return SaturationSummary{}, fmt.Errorf("summarize saturation: %s seed %d has %d bins, want %d", runs[0].Scheduler, runs[0].Seed, nbins, env.SaturationBins)
	}
	pods := make([]float64, len(runs))
	dropped := make([]float64, len(runs))
	for k, r := range runs {
		if r.Scheduler != sum.Scheduler {
			return SaturationSummary{}, fmt.Errorf("summarize saturation: run %d (seed %d) is of scheduler %q, want %q", k, r.Seed, r.Scheduler, sum.Scheduler)
		}
		if len(r.Bins) != nbins {
			return SaturationSummary{}, fmt.Errorf("summarize saturation: %s seed %d has %d bins, seed %d has %d", r.Scheduler, r.Seed, len(r.Bins), runs[0].Seed, nbins)
		}
		for b := range r.Bins {
			if r.Bins[b].ArrivalPct != b {
				return SaturationSummary{}, fmt.Errorf("summarize saturation: %s seed %d: bin %d is at arrival %d%%", r.Scheduler, r.Seed, b, r.Bins[b].ArrivalPct)
			}
		}
		sum.Seeds[k] = r.Seed
		pods[k], dropped[k] = float64(r.Pods), float64(r.Dropped)
	}
	sum.PodsMean, _ = MeanStd(pods)
	sum.DroppedMean, sum.DroppedStd = MeanStd(dropped)

	alloc := make([]float64, len(runs))
	frag := make([]float64, len(runs))
	ratio := make([]float64, len(runs))
	sum.Bins = make([]SaturationBinSummary, nbins)
	for b := range sum.Bins {
		for k, r := range runs {
			alloc[k], frag[k], ratio[k] = r.Bins[b].AllocPct, r.Bins[b].FragPct, r.Bins[b].FragRatio
		}
		bs := SaturationBinSummary{ArrivalPct: b}
		bs.AllocMean, bs.AllocStd = MeanStd(alloc)
		bs.FragPctMean, _ = MeanStd(frag)
		bs.FragRatioPctMean, _ = MeanStd(ratio)
		sum.Bins[b] = bs
		if b == HeadlineBin {
			sum.AllocAt130Mean, sum.AllocAt130Std = bs.AllocMean, bs.AllocStd
			sum.FragAt130Mean, sum.FragAt130Std = MeanStd(frag)
			sum.FragRatioAt130Mean, sum.FragRatioAt130Std = MeanStd(ratio)
		}
	}
	return sum, nil
}

// SaturationConfig describes a batch of saturation runs: every scheduler
// on every seed.
type SaturationConfig struct {
	Cluster    *env.Cluster // the machines to fill (the protocol uses GPU machines only)
	Trace      []env.Job    // the pod trace; also defines the target workload
	Schedulers []string     // names for env.NewScheduler, or for New
	// New, if set, makes a fresh scheduler for a name of Schedulers (a
	// policy file, say); nil means env.NewScheduler.
	New   func(name string) (env.Scheduler, error)
	Seeds []uint64
	Tune  float64 // arrivals stop at Tune x GPU capacity (protocol: 1.3)
	// Workers is the number of runs at once; <= 0 means runtime.GOMAXPROCS.
	Workers int
	// OnRun, if set, is called once per finished run, from one goroutine at
	// a time, with the run and the wall time it took.
	OnRun func(run env.SaturationRun, elapsed time.Duration)
}

// RunSaturation runs env.Saturate for every scheduler and seed of cfg on a
// pool of goroutines. Runs are independent and deterministic, and results
// come back as runs[i][k] for cfg.Schedulers[i] and the k-th seed in
// ascending order, so the output does not depend on cfg.Workers. It stops
// starting runs when ctx is done or a run fails.
func RunSaturation(ctx context.Context, cfg SaturationConfig) ([][]env.SaturationRun, error) {
	if cfg.Cluster == nil {
		return nil, fmt.Errorf("run saturation: no cluster")
	}
	if len(cfg.Trace) == 0 {
		return nil, fmt.Errorf("run saturation: empty pod trace")
	}
	if len(cfg.Schedulers) == 0 || len(cfg.Seeds) == 0 {
		return nil, fmt.Errorf("run saturation: need at least one scheduler and one seed")
	}
	if !(cfg.Tune > 0) || math.IsInf(cfg.Tune, 0) {
		return nil, fmt.Errorf("run saturation: tune %v must be a positive number", cfg.Tune)
	}
	if cfg.New == nil {
		cfg.New = env.NewScheduler
	}
	for _, name := range cfg.Schedulers {
		if _, err := cfg.New(name); err != nil {
			return nil, fmt.Errorf("run saturation: %w", err)
		}
	}
	seeds := slices.Clone(cfg.Seeds)
	slices.Sort(seeds)
	runs := make([][]env.SaturationRun, len(cfg.Schedulers))
	for i := range runs {
		runs[i] = make([]env.SaturationRun, len(seeds))
	}
	var mu sync.Mutex // OnRun is called from one goroutine at a time
	n := len(cfg.Schedulers) * len(seeds)
	err := ForEach(ctx, n, cfg.Workers, func(k int) error {
		i, si := k/len(seeds), k%len(seeds)
		// A fresh scheduler per run: schedulers keep caches.
		sched, err := cfg.New(cfg.Schedulers[i])
		start := time.Now()
		var run env.SaturationRun
		if err == nil {
			run, err = env.Saturate(cfg.Cluster, cfg.Trace, sched, seeds[si], cfg.Tune)
		}
		if err != nil {
			return fmt.Errorf("saturate %s seed %d: %w", cfg.Schedulers[i], seeds[si], err)
		}
		runs[i][si] = run
		if cfg.OnRun != nil {
			mu.Lock()
			cfg.OnRun(run, time.Since(start))
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("run saturation: %w", err)
	}
	return runs, nil
}
