package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tegrl/tegrl/datasets"
	"github.com/tegrl/tegrl/env"
	"github.com/tegrl/tegrl/rl"
)

func init() { addCommand(newDatasetCmd) }

func newDatasetCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Convert traces, generate workloads, record transitions and inspect Arrow datasets",
		Long:  helpText("dataset"),
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newDatasetConvertCmd(a), newDatasetGenCmd(a), newDatasetRecordCmd(a), newDatasetInspectCmd(a), newDatasetFetchCmd(a))
	return cmd
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	return enc.Encode(v)
}

func printConverted(w io.Writer, res datasets.Converted) {
	for _, f := range res.Files {
		fmt.Fprintln(w, f)
	}
	fmt.Fprintf(w, "%d machines, %d jobs, %d usage samples\n", res.Machines, res.Jobs, res.Usage)
}

func newDatasetConvertCmd(a *app) *cobra.Command {
	var (
		from, out    string
		compress     float64
		maxInstances int
		batchRows    int
		jsonOut      bool
	)
	cmd := &cobra.Command{
		Use:     "convert",
		Short:   "Convert Alibaba cluster traces into machines.arrow, jobs.arrow and usage.arrow",
		Long:    helpText("dataset-convert"),
		Example: exampleText("dataset-convert"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := datasets.ConvertSpec(from, out, datasets.ConvertOptions{Compress: compress, MaxInstances: maxInstances,
				Writer: datasets.WriterOptions{BatchRows: batchRows}, Log: a.log})
			if err != nil {
				return err
			}
			if jsonOut {
				return printJSON(a.stdout, res)
			}
			printConverted(a.stdout, res)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&from, "from", "", "trace to convert: alibaba-gpu[:DIR], alibaba-2018:DIR or alibaba-batch[:FILE] (no DIR or FILE: the bundled copy)")
	fl.StringVar(&out, "out", "", "output folder (created if missing)")
	fl.Float64Var(&compress, "compress", 1, "time-compression factor (arrivals and durations divided by it)")
	fl.IntVar(&maxInstances, "max-instances", 1, "instances per 2018 batch task turned into jobs (0: all 2.5M)")
	fl.IntVar(&batchRows, "batch-rows", datasets.DefaultBatchRows, "rows per Arrow record batch")
	fl.BoolVar(&jsonOut, "json", false, "print one JSON object instead of text")
	cmd.MarkFlagRequired("from")
	cmd.MarkFlagRequired("out")
	return cmd
}

func newDatasetGenCmd(a *app) *cobra.Command {
	var (
		out       string
		machines  int
		seed      uint64
		load      float64
		duration  string
		batchRows int
		jsonOut   bool
	)
	cmd := &cobra.Command{
		Use:     "gen",
		Short:   "Write a synthetic cluster and workload as machines.arrow and jobs.arrow",
		Long:    helpText("dataset-gen"),
		Example: exampleText("dataset-gen"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			horizon, err := env.ParseSeconds(duration)
			if err != nil {
				return err
			}
			if horizon <= 0 {
				return fmt.Errorf("--duration %q: the workload needs a positive horizon", duration)
			}
			res, err := datasets.Generate(out, datasets.GenConfig{Machines: machines, Seed: seed,
				Workload: env.WorkloadConfig{Horizon: horizon, Load: load}, Writer: datasets.WriterOptions{BatchRows: batchRows}})
			if err != nil {
				return err
			}
			a.log.Info("generated", "machines", res.Machines, "jobs", res.Jobs, "out", out)
			if jsonOut {
				return printJSON(a.stdout, res)
			}
			printConverted(a.stdout, res)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "output folder (created if missing)")
	fl.IntVar(&machines, "machines", 1000, "machines of the synthetic cluster")
	fl.Uint64Var(&seed, "seed", 1, "seed of the cluster and workload")
	fl.Float64Var(&load, "load", env.DefaultWorkload.Load, "offered load (fraction of the busier of CPU and GPU capacity)")
	fl.StringVar(&duration, "duration", "6h", "span of arrivals (Go duration such as 6h, or seconds)")
	fl.IntVar(&batchRows, "batch-rows", datasets.DefaultBatchRows, "rows per Arrow record batch")
	fl.BoolVar(&jsonOut, "json", false, "print one JSON object instead of text")
	cmd.MarkFlagRequired("out")
	return cmd
}

// recordFlags are the flags of `tegrl dataset record`: simulate's cluster,
// workload, run and TEG switch flags, plus the output.
type recordFlags struct {
	runSource
	scheduler, out, runID string
	batchRows             int
	maxBytes              int64
	episode               int32
	jsonOut               bool
	teg                   *tegFlag
	gpu                   gpuFlags
}

func newDatasetRecordCmd(a *app) *cobra.Command {
	f := &recordFlags{}
	cmd := &cobra.Command{
		Use:     "record",
		Short:   "Run a scheduler in the simulator and record one transition per decision",
		Long:    helpText("dataset-record"),
		Example: exampleText("dataset-record"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRecord(cmd, a, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scheduler, "scheduler", "fgd", "scheduler: a built-in name ("+strings.Join(env.SchedulerNames, ", ")+") or a policy file")
	f.addFlags(fl, 100, "1h", a.stderr)
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the workload, failures and scheduler randomness (the synthetic cluster has --cluster-seed)")
	f.teg = addTEGFlag(fl)
	fl.StringVar(&f.out, "out", "", "output folder (created if missing)")
	fl.StringVar(&f.runID, "run-id", "", "run ID stored in every row (default SCHEDULER-seedSEED)")
	fl.Int32Var(&f.episode, "episode", 0, "episode number stored in every row")
	fl.IntVar(&f.batchRows, "batch-rows", datasets.DefaultBatchRows, "rows per Arrow record batch (batches also close at 64 MiB)")
	fl.BoolVar(&f.jsonOut, "json", false, "print one JSON object (files, transitions, run metrics) instead of text")
	fl.Int64Var(&f.maxBytes, "max-bytes", 4<<30, "stop before transitions.arrow exceeds this many bytes, keeping it valid (0: no cap)")
	f.gpu.addFlags(fl)
	cmd.MarkFlagRequired("out")
	return cmd
}

func runRecord(cmd *cobra.Command, a *app, f *recordFlags) error {
	if f.gpu.scenario != "" {
		return runRecordGPU(cmd, a, f)
	}
	newSched, err := rl.SchedulerFactory(f.scheduler)
	if err != nil {
		return err
	}
	sched := newSched()
	c, w, cfg, err := f.build()
	if err != nil {
		return err
	}
	if err := rl.CheckSchedulerFit(f.scheduler, rl.EnvCluster, len(c.Machines), a.log); err != nil {
		return err
	}
	teg, err := f.teg.forSched(sched)
	if err != nil {
		return err
	}
	cfg.TEG = &teg
	runID := f.runID
	if runID == "" {
		runID = fmt.Sprintf("%s-seed%d", sched.Name(), f.seed)
	}
	a.log.Info("record", "scheduler", sched.Name(), "cluster", f.cluster, "machines", len(c.Machines), "gpus", c.TotalGPUs(),
		"workload", w.Name, "jobs", len(w.Jobs), "duration_s", cfg.Duration, "out", f.out)
	rc := datasets.RecordConfig{RunID: runID, Episode: f.episode, Sim: cfg, SchedulerSpec: f.scheduler, Writer: datasets.WriterOptions{BatchRows: f.batchRows,
		Source: fmt.Sprintf("record scheduler=%s cluster=%s workload=%s seed=%d", f.scheduler, f.cluster, f.workload, f.seed)}, MaxBytes: f.maxBytes}
	if cfg.Duration > 0 {
		tick := cfg.Tick
		if tick == 0 {
			tick = env.DefaultSimConfig.Tick
		}
		bar := newProgress(a.stderr, int(cfg.Duration/tick), "record")
		defer bar.Finish()
		p := tickProgress(bar, 1, tick)
		rc.Progress = func(now float64) { p(0, now) }
	}
	if f.maxBytes < 0 {
		return fmt.Errorf("--max-bytes %d: want >= 0 (0: no cap)", f.maxBytes)
	}
	res, err := datasets.RecordRun(cmd.Context(), f.out, c, w, sched, rc)
	if errors.Is(err, datasets.ErrMaxBytes) {
		return fmt.Errorf("%w (raise --max-bytes, or shorten --duration)", err)
	}
	if err != nil {
		return err
	}
	a.log.Info("recorded", "transitions", res.Transitions, "reward_mean", res.Metrics.RewardMean)
	if f.jsonOut {
		return printJSON(a.stdout, res)
	}
	for _, p := range res.Files {
		fmt.Fprintln(a.stdout, p)
	}
	fmt.Fprintf(a.stdout, "%d transitions (%s, %d machines, %d jobs, %.0f simulated s, reward mean %.3f)\n",
		res.Transitions, sched.Name(), res.Machines, res.Jobs, res.Metrics.SimTimeS, res.Metrics.RewardMean)
	return nil
}

func newDatasetInspectCmd(a *app) *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:     "inspect FILE",
		Short:   "Print a dataset's kind, schema, metadata, row and batch counts and column statistics",
		Long:    helpText("dataset-inspect"),
		Example: exampleText("dataset-inspect"),
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := datasets.Inspect(args[0])
			if err != nil {
				return err
			}
			if jsonOut {
				if err := printJSON(a.stdout, s); err != nil {
					return err
				}
			} else if err := s.WriteText(a.stdout); err != nil {
				return err
			}
			if !s.Valid {
				return errors.New(s.Error)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON object instead of text")
	return cmd
}
