package rl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/report"
)

// SaturateRun is tegrl saturate: the FGD saturation experiment
// (report.Saturate) as its command line gives it, with the output it
// prints and the files it writes.
type SaturateRun struct {
	// Nodes and Pods are trace table specs (env.CheckTraceFile).
	Nodes      string  `flag:"nodes" default:"alibaba-gpu" usage:"Alibaba GPU trace node table: alibaba-gpu (bundled nodes.csv) or alibaba-gpu:FILE; only machines with GPUs are used"`
	Pods       string  `flag:"pods" default:"alibaba-gpu" usage:"Alibaba GPU trace pod table: alibaba-gpu (bundled pods.csv) or alibaba-gpu:FILE"`
	Schedulers string  `flag:"scheduler" default:"all" usage:"comma-separated schedulers: random, bestfit, dotprod, packing, clustering, fgd, kube, p2c, or policy files (tegrl train --preset saturate); \"all\" = the FGD protocol's six (random through fgd)"`
	Seeds      string  // a list for report.ParseSeeds
	Tune       float64 `flag:"tune" default:"1.3" usage:"stop submitting pods when their GPU demand reaches this multiple of the GPU capacity"`
	Workers    int     `flag:"workers" usage:"runs at once; 0 = GOMAXPROCS (the number of usable CPUs)"`
	JSON       bool    `flag:"json" usage:"write one JSON object per scheduler (JSON lines) to stdout instead of tables"`
	// Plot and OutMD, when set, receive the allocation plot (PNG) and the
	// Markdown summary with Command, the command line.
	Command string
	OutMD   string `flag:"out-md" usage:"also write the Markdown summary table and the command line to this file"`
	Plot    string `flag:"plot" usage:"also write a PNG plot of GPU allocation against arrived demand, one curve per scheduler, to this file"`
	Logger  *slog.Logger
	Bar     io.Writer // progress bar, drawn when it is a terminal
}

// RunSaturate checks r, runs the experiment, writes r.Plot and r.OutMD and
// prints the summaries to w: text tables, or one JSON object per
// scheduler with r.JSON. Errors name the flags of tegrl saturate.
func RunSaturate(ctx context.Context, r SaturateRun, w io.Writer) error {
	schedulers, newSched, err := SaturationSchedulers(r.Schedulers)
	if err != nil {
		return fmt.Errorf("--scheduler: %w", err)
	}
	if slices.Contains(schedulers, "langevin") {
		return fmt.Errorf("--scheduler langevin: the Langevin governor acts on the time-stepped simulation's potential field; the saturation experiment has no time (use tegrl simulate)")
	}
	seeds, err := report.ParseSeeds(r.Seeds)
	if err != nil {
		return fmt.Errorf("--seeds: %w", err)
	}
	if !(r.Tune > 0) || math.IsInf(r.Tune, 0) {
		return fmt.Errorf("--tune %v: want a positive number (the protocol uses 1.3)", r.Tune)
	}
	if r.Workers < 0 {
		return fmt.Errorf("--workers %d: want 0 (GOMAXPROCS) or more", r.Workers)
	}
	if r.Workers == 0 {
		r.Workers = runtime.GOMAXPROCS(0)
	}
	if err := env.CheckTraceFile("--nodes", r.Nodes); err != nil {
		return err
	}
	if err := env.CheckTraceFile("--pods", r.Pods); err != nil {
		return err
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	bar := report.NewProgress(r.Bar, len(schedulers)*len(seeds), "saturate")
	res, err := report.Saturate(ctx, report.SaturateConfig{Nodes: r.Nodes, Pods: r.Pods, Schedulers: schedulers, New: newSched,
		Seeds: seeds, Tune: r.Tune, Workers: r.Workers, Logger: r.Logger, OnRun: func() { _ = bar.Add(1) }})
	_ = bar.Finish()
	if err != nil {
		return err
	}
	if err := r.writeFiles(res, seeds); err != nil {
		return err
	}
	if !r.JSON {
		return report.WriteSaturationText(w, res.Summaries)
	}
	enc := json.NewEncoder(w)
	for _, s := range res.Summaries {
		if err := enc.Encode(s); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
	}
	return nil
}

// writeFiles writes r.Plot and r.OutMD.
func (r SaturateRun) writeFiles(res *report.SaturateResult, seeds []uint64) error {
	if r.Plot != "" {
		title := fmt.Sprintf("GPU saturation, Alibaba GPU 2023 (%d GPUs), seeds %s", res.GPUs, report.FormatSeeds(seeds))
		if err := report.SaveAllocationPlot(r.Plot, res.Summaries, title); err != nil {
			return err
		}
		r.Logger.Info("wrote plot", "path", r.Plot)
	}
	if r.OutMD == "" {
		return nil
	}
	var b bytes.Buffer
	plotRef := ""
	if r.Plot != "" {
		// Link the plot relative to the Markdown file when possible.
		plotRef = r.Plot
		if abs, err := filepath.Abs(r.Plot); err == nil {
			if dir, err := filepath.Abs(filepath.Dir(r.OutMD)); err == nil {
				if rel, err := filepath.Rel(dir, abs); err == nil {
					plotRef = filepath.ToSlash(rel)
				}
			}
		}
	}
	if err := report.WriteSaturationMarkdown(&b, res.Summaries, r.Command, plotRef); err != nil {
		return err
	}
	if err := os.WriteFile(r.OutMD, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--out-md: %w", err)
	}
	r.Logger.Info("wrote markdown", "path", r.OutMD)
	return nil
}
