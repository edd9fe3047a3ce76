package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/report"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newSaturateCmd) }

// Default trace tables: the bundled Alibaba GPU trace (a trace spec, as
// --cluster and --workload take: alibaba-gpu:FILE reads a file).
const (
	defaultGPUNodes = "alibaba-gpu"
	defaultGPUPods  = "alibaba-gpu"
)

// saturateFlags are the options of tegrl saturate.
type saturateFlags struct {
	nodes, pods string
	schedulers  string
	seeds       string
	tune        float64
	workers     int
	json        bool
	plot        string
	outMD       string
}

func newSaturateCmd(a *app) *cobra.Command {
	f := &saturateFlags{}
	cmd := &cobra.Command{
		Use:   "saturate",
		Short: "Run the FGD GPU saturation experiment and compare schedulers",
		Long: `saturate runs the GPU saturation experiment of the FGD paper (Weng et al.,
ATC'23) on the Alibaba GPU cluster trace.

The cluster is the trace's machines that have GPUs. For each seed the pods
are shuffled and topped up (drawn with replacement) until their GPU demand
reaches --tune x the GPU capacity; they are submitted one at a time, never
finish, and a pod that fits nowhere is dropped. After each pod the GPU
allocation ratio (allocated / capacity) and the fragmentation are recorded
at arrival bins of 1% of capacity, 0% to 130%.

Output, per scheduler: the allocation curve every 10% of arrival and at 130%
(mean ± std over seeds), the headline allocation at 130% arrival, the
fragmentation F(M) as % of capacity and the fragmentation ratio (F(M) / idle
GPU) at 130%; then a summary table sorted by allocation at 130%. Std is the
sample standard deviation (divisor n-1; 0 with one seed).

With --json, stdout has one JSON object per scheduler, one per line, with
keys scheduler, seeds, alloc_at_130_mean, alloc_at_130_std,
frag_at_130_mean, frag_at_130_std, frag_ratio_at_130_mean,
frag_ratio_at_130_std, pods_mean, dropped_mean, dropped_std and bins (131
objects: arrival_pct, alloc_mean, alloc_std, frag_pct_mean,
frag_ratio_pct_mean). All values are percentages except seeds, pods and
dropped (counts).

Runs for different seeds and schedulers go in parallel (--workers); the
results do not depend on it.`,
		Example: `  tegrl saturate --scheduler all --seeds 42-51 --plot docs/saturation.png --out-md docs/saturation.md
  tegrl saturate --scheduler fgd,bestfit --seeds 42,43,50 --json
  tegrl saturate --scheduler kube --seeds 7 --tune 1.0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSaturate(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.nodes, "nodes", defaultGPUNodes, "Alibaba GPU trace node table: alibaba-gpu (bundled nodes.csv) or alibaba-gpu:FILE; only machines with GPUs are used")
	fl.StringVar(&f.pods, "pods", defaultGPUPods, "Alibaba GPU trace pod table: alibaba-gpu (bundled pods.csv) or alibaba-gpu:FILE")
	fl.StringVar(&f.schedulers, "scheduler", "all", "comma-separated schedulers: random, bestfit, dotprod, packing, clustering, fgd, kube, p2c, or policy files (tegrl train --preset saturate); \"all\" = the FGD protocol's six (random through fgd)")
	fl.StringVar(&f.seeds, "seeds", "42-51", "seeds: "+report.SeedsHelp)
	fl.Float64Var(&f.tune, "tune", 1.3, "stop submitting pods when their GPU demand reaches this multiple of the GPU capacity")
	fl.IntVar(&f.workers, "workers", 0, "runs at once; 0 = GOMAXPROCS (the number of usable CPUs)")
	fl.BoolVar(&f.json, "json", false, "write one JSON object per scheduler (JSON lines) to stdout instead of tables")
	fl.StringVar(&f.plot, "plot", "", "also write a PNG plot of GPU allocation against arrived demand, one curve per scheduler, to this file")
	fl.StringVar(&f.outMD, "out-md", "", "also write the Markdown summary table and the command line to this file")
	return cmd
}

func runSaturate(cmd *cobra.Command, a *app, f *saturateFlags) error {
	schedulers, newSched, err := rl.SaturationSchedulers(f.schedulers)
	if err != nil {
		return fmt.Errorf("--scheduler: %w", err)
	}
	if slices.Contains(schedulers, "langevin") {
		return fmt.Errorf("--scheduler langevin: the Langevin governor acts on the time-stepped simulation's potential field; the saturation experiment has no time (use tegrl simulate)")
	}
	seeds, err := report.ParseSeeds(f.seeds)
	if err != nil {
		return fmt.Errorf("--seeds: %w", err)
	}
	if !(f.tune > 0) || math.IsInf(f.tune, 0) {
		return fmt.Errorf("--tune %v: want a positive number (the protocol uses 1.3)", f.tune)
	}
	if f.workers < 0 {
		return fmt.Errorf("--workers %d: want 0 (GOMAXPROCS) or more", f.workers)
	}
	if f.workers == 0 {
		f.workers = runtime.GOMAXPROCS(0)
	}
	if err := checkTrace("--nodes", f.nodes); err != nil {
		return err
	}
	if err := checkTrace("--pods", f.pods); err != nil {
		return err
	}
	bar := newProgress(a.stderr, len(schedulers)*len(seeds), "saturate")
	res, err := report.Saturate(cmd.Context(), report.SaturateConfig{Nodes: f.nodes, Pods: f.pods, Schedulers: schedulers, New: newSched,
		Seeds: seeds, Tune: f.tune, Workers: f.workers, Logger: a.log, OnRun: func() { _ = bar.Add(1) }})
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if err := writeSaturationFiles(a, f, res, seeds); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if !f.json {
		return report.WriteSaturationText(out, res.Summaries)
	}
	enc := json.NewEncoder(out)
	for _, s := range res.Summaries {
		if err := enc.Encode(s); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
	}
	return nil
}

// writeSaturationFiles writes --plot and --out-md.
func writeSaturationFiles(a *app, f *saturateFlags, res *report.SaturateResult, seeds []uint64) error {
	if f.plot != "" {
		title := fmt.Sprintf("GPU saturation, Alibaba GPU 2023 (%d GPUs), seeds %s", res.GPUs, report.FormatSeeds(seeds))
		if err := report.SaveAllocationPlot(f.plot, res.Summaries, title); err != nil {
			return err
		}
		a.log.Info("wrote plot", "path", f.plot)
	}
	if f.outMD == "" {
		return nil
	}
	var b bytes.Buffer
	plotRef := ""
	if f.plot != "" {
		// Link the plot relative to the Markdown file when possible.
		plotRef = f.plot
		if abs, err := filepath.Abs(f.plot); err == nil {
			if dir, err := filepath.Abs(filepath.Dir(f.outMD)); err == nil {
				if rel, err := filepath.Rel(dir, abs); err == nil {
					plotRef = filepath.ToSlash(rel)
				}
			}
		}
	}
	if err := report.WriteSaturationMarkdown(&b, res.Summaries, report.CommandLine(a.argv), plotRef); err != nil {
		return err
	}
	if err := os.WriteFile(f.outMD, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--out-md: %w", err)
	}
	a.log.Info("wrote markdown", "path", f.outMD)
	return nil
}

// checkTrace fails with a helpful message when a trace file is missing.
func checkTrace(flag, path string) error {
	if path == "alibaba-gpu" {
		return nil // the bundled copy
	}
	path = strings.TrimPrefix(path, "alibaba-gpu:")
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s %s: no such file (leave %s out for the bundled trace)", flag, path, flag)
	case err != nil:
		return fmt.Errorf("%s: %w", flag, err)
	case st.IsDir():
		return fmt.Errorf("%s %s: is a directory, want the CSV file", flag, path)
	}
	return nil
}
